#!/bin/sh
# A CI job on a group of bare metal nodes: reserve COUNT nodes of
# RESOURCE_CLASS all or nothing with a lease, run COMMAND with them, and
# release them when COMMAND ends.
#
# Usage: ci-job.sh COUNT RESOURCE_CLASS LEASE COMMAND...
#
# COMMAND runs with NODE_UUIDS (the nodes' UUIDs, one per line) and GROUP
# (the group's name: ci-$CI_JOB_ID, or ci-<this shell's PID>) in its
# environment.  The group is released when COMMAND ends, however it ends:
# also on SIGINT or SIGTERM.  Exit status: COMMAND's; 1 if the group could
# not be reserved (nothing is left reserved then, the reason is on stderr)
# or released; 2 for a usage error.
#
# If the job dies without running its trap (SIGKILL, the runner's machine
# lost), the lease gives the nodes back: the reference server releases
# them by itself (serve --expire-leases); against Ironic a cron job
# running "baremetal-alloc expire" does.  Choose LEASE longer than the
# job, or renew it while the job runs ("baremetal-alloc renew").
set -eu

if [ $# -lt 4 ]; then
    echo "usage: $0 COUNT RESOURCE_CLASS LEASE COMMAND..." >&2
    exit 2
fi
count=$1 resource_class=$2 lease=$3
shift 3

GROUP="ci-${CI_JOB_ID:-$$}"
release() {
    status=$?
    trap - EXIT INT TERM
    baremetal-alloc delete --ignore-missing --group "$GROUP" >&2 || status=1
    exit "$status"
}
trap release EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# All or nothing: on failure the command has already deleted every member.
NODE_UUIDS=$(baremetal-alloc create --resource-class "$resource_class" \
    --count "$count" --group "$GROUP" --lease "$lease" --wait 600 \
    -f value -c node_uuid) || exit 1
echo "group $GROUP reserved until its lease ends in $lease:" >&2
echo "$NODE_UUIDS" >&2
export NODE_UUIDS GROUP

set +e
"$@"
status=$?
set -e
exit $status
