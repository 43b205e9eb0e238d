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
#: ``extra`` keys of a group on real Ironic (the SDK writes them; the
#: reference server keeps a group in its ``group`` field,
#: :data:`GROUP_FIELD`): the group's name, and its size as a string.
GROUP_KEY: Final = EXTRA_PREFIX + "group"
SIZE_KEY: Final = EXTRA_PREFIX + "group_size"
#: The keys older versions wrote (read, never written): the name, and
#: the size as a number.
LEGACY_GROUP_KEY: Final = "baremetal_alloc_group"
LEGACY_SIZE_KEY: Final = "baremetal_alloc_group_size"
#: The allocation's field holding the group on the reference server.
GROUP_FIELD: Final = "group"
#: The change stream of allocations (watch instead of poll).
WATCH: Final = "watch"
#: Its path (a path Ironic does not have).
WATCH_PATH: Final = "/v1/allocation_changes"
