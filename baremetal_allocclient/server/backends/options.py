"""``serve`` options choosing and configuring the allocation backend."""

from __future__ import annotations

import argparse
import logging

from baremetal_allocclient.server.backends.base import Backend
from baremetal_allocclient.server.db.engine import Database

LOG = logging.getLogger(__name__)

DEFAULT_PROJECT = "baremetal-alloc"
DEFAULT_USER = "baremetal-alloc-server"


class BackendConfigError(Exception):
    """The backend options cannot work (message is for the operator)."""


def _interval(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number") from None
    if not 0 < number < float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number")
    return number


def add_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--backend`` and the ``--placement-*`` options."""
    group = parser.add_argument_group(
        "allocation backend",
        "where nodes are selected and claimed (see doc/source/placement.rst)",
    )
    group.add_argument(
        "--backend", choices=("database", "placement"), default="database",
        help="database (default): SQL only; placement: claim through an "
             "OpenStack Placement service kept in step with the nodes",
    )
    group.add_argument(
        "--placement-url", default=None,
        help="Placement endpoint, e.g. http://127.0.0.1:8778 (optional "
             "with --placement-cloud, whose catalog can provide it)",
    )
    group.add_argument(
        "--placement-token", default=None,
        help="a fixed X-Auth-Token for Placement (default 'admin', what "
             "Placement's noauth2 strategy accepts for an admin); ignored "
             "with --placement-cloud",
    )
    group.add_argument(
        "--placement-cloud", default=None,
        help="a clouds.yaml cloud whose keystoneauth credentials are used "
             "for Placement (real Keystone authentication)",
    )
    group.add_argument(
        "--placement-project", default=DEFAULT_PROJECT,
        help="project_id of claims for allocations without an owner "
             f"(default {DEFAULT_PROJECT})",
    )
    group.add_argument(
        "--placement-user", default=DEFAULT_USER,
        help=f"user_id of claims (default {DEFAULT_USER})",
    )
    group.add_argument(
        "--placement-sync-interval", type=_interval, default=1.0,
        help="seconds between pushes of node changes (default 1)",
    )
    group.add_argument(
        "--placement-reconcile-interval", type=_interval, default=60.0,
        help="seconds between full reconciliations (default 60)",
    )
    group.add_argument(
        "--placement-wait", type=_interval, default=30.0,
        help="how long an allocation waits for an unreachable Placement "
             "before failing (default 30)",
    )


def build(db: Database, args: argparse.Namespace) -> Backend:
    """The configured backend; Placement is checked (reachable,
    microversion) before ``serve`` starts."""
    from baremetal_allocclient.server.backends.database import (
        DatabaseBackend,
    )

    if getattr(args, "backend", "database") != "placement":
        return DatabaseBackend(db)
    from baremetal_allocclient.server.backends.placement import (
        PlacementBackend,
    )
    from baremetal_allocclient.server.placement import client as pc
    from baremetal_allocclient.server.placement.sync import PlacementSync

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
