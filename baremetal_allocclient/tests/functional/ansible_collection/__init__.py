"""The Ansible collection ``baremetal_alloc.cloud`` (``ansible_collections/``
at the repository root), built, installed and run by real
``ansible-playbook`` against both targets, and ``ansible-test sanity``."""
