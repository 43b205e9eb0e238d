"""The allocation service: what the HTTP handlers call.

It owns the transactions, the worker slot and the commit check; the
handlers parse, check the version, call it and render.  ``releasing`` is
also the Ironic wing's one way into the allocation wing.
"""
