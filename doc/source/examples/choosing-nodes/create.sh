export OS_ENDPOINT=http://127.0.0.1:6385
# At least 32 CPUs, and not a node with the VMX trait.
baremetal-alloc create --resource-class baremetal --min-cpus 32 \
    --forbid-trait HW_CPU_X86_VMX --name big-1 --wait -f value -c node_uuid
# The same options in OpenStackClient: 64 GiB or more, exactly 480 GB of
# disk, and the node named node-3 if it qualifies.
openstack --os-auth-type none --os-endpoint http://127.0.0.1:6385 \
    baremetal allocation create --resource-class baremetal \
    --min-memory-mb 65536 --property local_gb=480 --prefer-node node-3 \
    --name small-1 --wait -f value -c node_uuid
baremetal-alloc delete big-1 small-1
