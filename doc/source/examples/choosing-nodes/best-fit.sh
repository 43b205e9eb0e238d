export OS_ENDPOINT=http://127.0.0.1:6385
# 16 CPUs or more, the node that exceeds that least: a 16-CPU node, not
# one of the 32-CPU ones (which first fit might take).
baremetal-alloc create --resource-class baremetal --min-cpus 16 \
    --order best_fit --name fit-1 --wait -f value -c node_uuid
baremetal-alloc delete fit-1
# Nodes whose cpu_arch is not set, with at most 16 CPUs, that are not
# in the 960 GB disk class, and that have a VMX or GPU trait.
baremetal-alloc explain --resource-class baremetal \
    --property-not-exists cpu_arch --max-property cpus=16 \
    --property-not-in local_gb=960 --any-trait HW_CPU_X86_VMX \
    --any-trait CUSTOM_GPU -f json
