"""``create --lease``: the option (the SDK records the lease in the
allocation's extra, see
:meth:`~baremetal_allocclient.v1.request.AllocationRequest.stamped`).

The ``renew`` and ``expire`` commands are in :mod:`.leases`.
"""

from __future__ import annotations

import argparse

from baremetal_allocclient import leases
from baremetal_allocclient.osc.v1 import parsing


def add_lease_option(parser: argparse.ArgumentParser) -> None:
    """``--lease DURATION`` of ``create``."""
    parser.add_argument(
        "--lease",
        type=parsing.lease_duration,
        metavar="<duration>",
        help="Give the allocation back after this long: 90s, 30m, 2h, 1d, "
        "1h30m... The end is recorded in the reference server's lease "
        f"field, or on Ironic in extra as {leases.EXPIRES_KEY} (UTC, a "
        "string); 'expire' (e.g. from cron) or "
        "'baremetal-alloc-server serve --expire-leases' releases it then. "
        "Renew with 'renew'.",
    )
