export OS_ENDPOINT=http://127.0.0.1:6385
# Why is there no GPU node with 64 CPUs?  Nothing is reserved.
baremetal-alloc explain --resource-class baremetal --trait CUSTOM_GPU \
    --min-cpus 64
# The same for scripts: one JSON object per step.
baremetal-alloc explain --resource-class baremetal --trait CUSTOM_GPU \
    --min-cpus 64 -f json
