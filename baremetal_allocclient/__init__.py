"""Reserve bare metal nodes through the OpenStack Ironic Allocation API."""
