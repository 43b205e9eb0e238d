baremetal-alloc-server db upgrade --db sqlite:///alloc.sqlite
baremetal-alloc-server enroll --db sqlite:///alloc.sqlite inventory.yaml
