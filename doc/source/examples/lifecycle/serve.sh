baremetal-alloc-server serve --db sqlite:///alloc.sqlite --port 6385 \
    --expire-leases 1
