"""Reference server: an Ironic-compatible API for nodes and allocations.

Installed with the ``server`` extra; the SDK and CLI never import it.
Entry point: ``baremetal-alloc-server`` (:mod:`.cmd`).
"""
