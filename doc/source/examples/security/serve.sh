baremetal-alloc-server serve --db sqlite:///alloc.sqlite --port 6385 \
    --auth-strategy http_basic --htpasswd htpasswd \
    --auth-projects projects.yaml
