openstack --os-auth-type none --os-endpoint http://127.0.0.1:6385 \
    baremetal allocation show web-1 -f value -c node_uuid
