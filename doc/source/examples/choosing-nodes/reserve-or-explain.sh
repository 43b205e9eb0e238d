#!/bin/bash
# Reserve a baremetal node with at least MIN_CPUS CPUs, or say which
# filter left none.  Usage: reserve-or-explain.sh MIN_CPUS
set -u
export OS_ENDPOINT=${OS_ENDPOINT:-http://127.0.0.1:6385}
options=(--resource-class baremetal --min-cpus "$1")
if uuid=$(baremetal-alloc create "${options[@]}" --wait \
        --delete-on-failure -f value -c uuid 2>/dev/null); then
    echo "reserved: allocation $uuid"
    baremetal-alloc delete "$uuid" >/dev/null
else
    step=$(baremetal-alloc explain "${options[@]}" -f value \
        -c Step -c Emptied | awk '$2 == "True" { print $1 }')
    echo "no node: no node passes $step"
    exit 1
fi
