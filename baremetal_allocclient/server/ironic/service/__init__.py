"""The Ironic stand-in's service: what its HTTP handlers call.

Every function opens the transaction it needs (its first argument is the
``Database``) and is given plain values (the caller's
:class:`~baremetal_allocclient.server.api.node_lookup.NodeScope`, the
parsed request), never the request context; the rows it returns are not
tied to a session, ready to render.  The handlers parse, check the
version and the policy, call it and render.
"""
