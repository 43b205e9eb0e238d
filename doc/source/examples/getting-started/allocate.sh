export OS_ENDPOINT=http://127.0.0.1:6385
baremetal-alloc create --resource-class baremetal --trait CUSTOM_GPU \
    --name web-1 --wait
baremetal-alloc list
