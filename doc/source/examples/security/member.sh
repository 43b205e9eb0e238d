export OS_ENDPOINT=http://127.0.0.1:6385 OS_AUTH_TYPE=http_basic
export OS_USERNAME=alice OS_PASSWORD=alice-secret
# alice's allocations are owned by team-a, and get team-a's nodes only.
baremetal-alloc create --resource-class compute-small --name alice-1 \
    --wait -f value -c owner
baremetal-alloc list --long -f value -c name -c owner
