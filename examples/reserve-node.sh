#!/bin/sh
# Reserve a bare metal node, run a command with it, then release it.
#
# Usage: reserve-node.sh [-t TRAIT]... [-w SECONDS] RESOURCE_CLASS [COMMAND...]
#
# Reserves one node of RESOURCE_CLASS that has every TRAIT, runs COMMAND
# with NODE_UUID and ALLOCATION set in its environment (default: print the
# node's UUID), and releases the node when COMMAND ends, however it ends:
# also on SIGINT or SIGTERM, even while the node is still being reserved.
#
# Where the API is comes from the usual settings: OS_ENDPOINT (with no
# authentication), OS_CLOUD (clouds.yaml) or the other OS_* variables.
# BAREMETAL_ALLOC names the command to use (default: baremetal-alloc).
#
# Exit status: COMMAND's status; 1 if no node could be reserved (the reason,
# the server's last_error, is printed on stderr); 2 for a usage error.

set -eu

cli=${BAREMETAL_ALLOC:-baremetal-alloc}
wait_seconds=300
traits=""

usage() {
    echo "usage: $0 [-t TRAIT]... [-w SECONDS] RESOURCE_CLASS [COMMAND...]" >&2
    exit 2
}

while getopts "t:w:h" opt; do
    case $opt in
        t) traits="$traits --trait $OPTARG" ;;
        w) wait_seconds=$OPTARG ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
resource_class=$1
shift

# A name of our own makes the allocation easy to find (and to release by
# hand if this script is killed with SIGKILL).
ALLOCATION="reserve-$(hostname -s 2>/dev/null || echo host)-$$"
NODE_UUID=""
reserving=""
out=$(mktemp)

# Released on every way out: normal exit, failure, SIGINT, SIGTERM.
release() {
    status=$?
    trap - EXIT INT TERM
    if [ -n "$reserving" ]; then
        # Interrupted while reserving: stop the CLI (SIGTERM, so that it
        # deletes what it made), and wait until it has.
        kill -TERM "$reserving" 2>/dev/null
        wait "$reserving" 2>/dev/null || true
    fi
    if "$cli" delete --ignore-missing "$ALLOCATION" >/dev/null 2>&1; then
        [ -z "$NODE_UUID" ] || echo "released node $NODE_UUID" >&2
    else
        echo "$0: could not release allocation $ALLOCATION; release it" \
             "with: $cli delete $ALLOCATION" >&2
    fi
    rm -f "$out"
    exit "$status"
}
trap release EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --wait fails (exit status 1) when no node matches; --delete-on-failure
# then removes the failed allocation so nothing is left behind. The CLI
# runs in the background so that a signal reaches the trap at once rather
# than after the CLI's wait. Traits are split into separate words on
# purpose.
# shellcheck disable=SC2086
"$cli" create --resource-class "$resource_class" $traits \
    --name "$ALLOCATION" --wait "$wait_seconds" --delete-on-failure \
    -f value -c node_uuid >"$out" &
reserving=$!
if wait "$reserving"; then
    reserving=""
    NODE_UUID=$(cat "$out")
else
    reserving=""
    echo "$0: could not reserve a $resource_class node" >&2
    exit 1
fi

echo "reserved node $NODE_UUID (allocation $ALLOCATION)" >&2
export NODE_UUID ALLOCATION
if [ $# -eq 0 ]; then
    echo "$NODE_UUID"
else
    set +e
    "$@"
    status=$?
    set -e
    exit $status
fi
