"""Releasing an allocation's node: the refusals (:mod:`.refusals`, pure:
when a node's state keeps its allocation) and the one way a node is
freed, with the locked reads before it (:mod:`.freeing`).  The service
that deletes allocations, and the Ironic wing's way in, is
``allocation/service/releasing.py``."""
