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
