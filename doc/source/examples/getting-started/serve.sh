baremetal-alloc-server serve --db sqlite:///alloc.sqlite --port 6385
