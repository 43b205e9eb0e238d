baremetal-alloc delete web-1
baremetal-alloc list --state active
