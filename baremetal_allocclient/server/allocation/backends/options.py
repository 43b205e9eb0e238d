"""The allocation backend ``serve`` runs with, built from its options
(declared in :mod:`baremetal_allocclient.server.options`)."""

from __future__ import annotations

import argparse
import logging

from baremetal_allocclient.server.allocation.backends.base import Backend
from baremetal_allocclient.server.db.engine import Database

LOG = logging.getLogger(__name__)

class BackendConfigError(Exception):
    """The backend options cannot work (message is for the operator)."""


def build(db: Database, args: argparse.Namespace) -> Backend:
    """The configured backend; Placement is checked (reachable,
    microversion) before ``serve`` starts."""
    from baremetal_allocclient.server.allocation.backends.database import (
        DatabaseBackend,
    )

    if getattr(args, "backend", "database") != "placement":
        return DatabaseBackend(db)
    from baremetal_allocclient.server.allocation.backends.placement import (
        PlacementBackend,
    )
    from baremetal_allocclient.server.allocation.placement import client as pc
    from baremetal_allocclient.server.allocation.placement.sync import (
        PlacementSync,
    )

    if not args.placement_url and not args.placement_cloud:
        raise BackendConfigError(
            "--backend placement needs --placement-url or --placement-cloud"
        )
    if args.placement_cloud:
        try:
            import openstack.config

            cloud = openstack.config.OpenStackConfig().get_one(
                cloud=args.placement_cloud
            )
            session = cloud.get_session()
        except Exception as exc:
            raise BackendConfigError(
                f"cannot use cloud {args.placement_cloud!r} for Placement: "
                f"{exc}"
            ) from exc
    else:
        session = pc.noauth_session(
            args.placement_token or pc.NOAUTH_ADMIN_TOKEN
        )
    client = pc.PlacementClient(session, args.placement_url)
    try:
        maximum = client.check_version()
    except (pc.PlacementError, pc.PlacementUnavailable) as exc:
        raise BackendConfigError(f"cannot use Placement: {exc}") from exc
    LOG.info("Placement at %s supports microversion %d.%d; using %s",
             client.endpoint or "(catalog)", maximum[0], maximum[1],
             pc.microversion_text())
    sync = PlacementSync(
        db, client, args.placement_project, args.placement_user,
        interval=args.placement_sync_interval,
        reconcile_interval=args.placement_reconcile_interval,
    )
    return PlacementBackend(
        db, client, sync, args.placement_project, args.placement_user,
        wait=args.placement_wait,
    )
