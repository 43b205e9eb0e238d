export OS_ENDPOINT=http://127.0.0.1:6385
# Two nodes in two different failure domains: here the disk size
# (property local_gb) stands in for a rack.  Both or neither.
baremetal-alloc create --resource-class baremetal --count 2 --group pair \
    --spread-over property:local_gb -f value -c node_uuid
baremetal-alloc delete --group pair
# Three, at most one per domain: there are only two, so nothing is made
# and the error says how many nodes each domain has free.
baremetal-alloc create --resource-class baremetal --count 3 --group trio \
    --spread-over property:local_gb || echo "refused, exit code $?"
