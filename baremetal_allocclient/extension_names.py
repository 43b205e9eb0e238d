"""The names of the reference server's API extensions, and the header a
request opts into them with (standard library only, nothing imported).

The modules of each extension re-export their name
(:data:`baremetal_allocclient.constraints.EXTENSION`,
:data:`baremetal_allocclient.v1.queueing.EXTENSION`,
:data:`baremetal_allocclient.groups.EXTENSION`); a plain allocation read
opts into them from here without importing those modules.
"""

from typing import Final

#: Header naming the extensions a request opts into (comma separated).
EXTENSION_HEADER: Final = "X-Baremetal-Alloc-Extensions"
#: Node constraints and the selection funnel.
CONSTRAINTS: Final = "constraints"
#: Waiting in line for capacity.
QUEUE: Final = "queue"
#: All-or-nothing groups.
GROUPS: Final = "groups"
#: Leases (an allocation's end).
LEASES: Final = "leases"
#: The one prefix of every ``extra`` key this project writes, and only
#: against real Ironic, where ``extra`` is the only place for a group or
#: a lease (the reference server keeps them in fields of their own):
#: every value under it is a string, so a client that decodes ``extra``
#: as ``map[string]string`` (gophercloud) reads every allocation.
EXTRA_PREFIX: Final = "baremetal_alloc:"
