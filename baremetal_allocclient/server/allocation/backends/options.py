"""The allocation backend ``serve`` runs with, built from its options
(declared in :mod:`baremetal_allocclient.server.options`)."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from baremetal_allocclient.constraints import Order
from baremetal_allocclient.server.allocation.backends.base import Backend
from baremetal_allocclient.server.db.engine import Database

LOG = logging.getLogger(__name__)

class BackendConfigError(Exception):
    """The backend options cannot work (message is for the operator)."""


def default_order(args: argparse.Namespace) -> Order:
    """``serve --default-order`` (first fit without it)."""
    return Order(getattr(args, "default_order", None) or "first_fit")


def build(db: Database, args: argparse.Namespace) -> Backend:
    """The configured backend; Placement is checked (reachable,
    microversion) before ``serve`` starts."""
    from baremetal_allocclient.server.allocation.backends.database import (
        DatabaseBackend,
    )

    backend = getattr(args, "backend", "database")
    if backend == "ironic":
        return _ironic(db, args)
    if backend != "placement":
        return DatabaseBackend(db, default_order=default_order(args))
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
        session = _cloud_session(args.placement_cloud, "Placement")
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


def _ironic(db: Database, args: argparse.Namespace) -> Backend:
    """The broker in front of a real Ironic, checked (reachable, API
    version) before ``serve`` starts."""
    from baremetal_allocclient.server.allocation.backends.ironic import (
        IronicBackend,
    )
    from baremetal_allocclient.server.broker import ironic_client as ic
    from baremetal_allocclient.server.broker.sync import IronicSync

    if not args.ironic_url and not args.ironic_cloud:
        raise BackendConfigError(
            "--backend ironic needs --ironic-url or --ironic-cloud")
    if args.expire_leases_undeploy:
        raise BackendConfigError(
            "--expire-leases-undeploy is not offered with --backend ironic: "
            "Ironic deploys the nodes (expiry releases the allocation)")
    if args.ironic_cloud:
        session = _cloud_session(args.ironic_cloud, "Ironic")
    else:
        if args.ironic_auth_type == "http_basic" and not (
                args.ironic_username and args.ironic_password):
            raise BackendConfigError(
                "[ironic] auth_type http_basic needs username and password")
        session = ic.session_for(args.ironic_auth_type, args.ironic_url,
                                 args.ironic_username, args.ironic_password)
    client = ic.IronicClient(
        session, args.ironic_url or _catalog_endpoint(
            session, args.ironic_cloud, ic.SERVICE_TYPE))
    try:
        maximum = client.check_version()
    except (ic.IronicError, ic.IronicUnavailable) as exc:
        raise BackendConfigError(f"cannot use Ironic: {exc}") from exc
    LOG.info("Fronting Ironic at %s (API up to %d.%d; claims at %s)",
             client.endpoint or "(catalog)", maximum[0], maximum[1],
             ic.microversion_text())
    sync = IronicSync(db, client, interval=args.ironic_sync_interval)
    return IronicBackend(db, client, sync, args.conductor_name,
                         wait=args.ironic_wait,
                         default_order=default_order(args))


def _catalog_endpoint(session: Any, cloud_name: str,
                      service_type: str) -> str:
    """The public endpoint of ``service_type`` in the catalog of the
    cloud's session (the routes the broker passes through go there)."""
    from keystoneauth1 import exceptions as ks_exc

    try:
        endpoint = session.get_endpoint(service_type=service_type,
                                        interface="public")
    except ks_exc.ClientException as exc:  # unreachable, refused, ...
        raise BackendConfigError(
            f"cannot read the catalog of cloud {cloud_name!r}: {exc}"
        ) from exc
    if not endpoint:
        raise BackendConfigError(
            f"the catalog of cloud {cloud_name!r} has no public "
            f"{service_type!r} endpoint; set [ironic] url")
    return str(endpoint)


def _cloud_session(cloud_name: str, service: str) -> Any:
    """A keystoneauth session from a clouds.yaml cloud."""
    try:
        import openstack.config

        cloud = openstack.config.OpenStackConfig().get_one(cloud=cloud_name)
        return cloud.get_session()
    except Exception as exc:
        raise BackendConfigError(
            f"cannot use cloud {cloud_name!r} for {service}: {exc}"
        ) from exc
