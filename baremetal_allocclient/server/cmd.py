"""``baremetal-alloc-server``: serve, db upgrade, enroll."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from baremetal_allocclient.server import config, options, security
from baremetal_allocclient.server.allocation.backends import (
    options as backend_options,
)

LOG = logging.getLogger("baremetal_allocclient.server")


def default_db_url() -> str:
    """An SQLite file in the per-user state directory (created on demand)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    directory = os.path.join(state, "baremetal-allocclient")
    os.makedirs(directory, exist_ok=True)
    return "sqlite:///" + os.path.join(directory, "server.sqlite")


def _parser() -> argparse.ArgumentParser:
    """The command line; each option's flag comes from
    :mod:`baremetal_allocclient.server.options`."""
    parser = argparse.ArgumentParser(
        prog="baremetal-alloc-server",
        description="Ironic-compatible reference server for allocations.",
    )
    # Also accepted after the sub-command, with the other options.
    parser.add_argument(
        "--log-level", default=argparse.SUPPRESS, choices=options.LOG_LEVELS,
        help="logging threshold (default: INFO; config: [DEFAULT] "
             "log_level)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the API server")
    config.add_arguments(serve, "serve")
    db = sub.add_parser("db", help="database management")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_sub.add_parser("upgrade", help="apply schema migrations")
    config.add_arguments(upgrade, "db upgrade")
    enroll = sub.add_parser(
        "enroll", help="enroll nodes from a bifrost-style inventory",
    )
    config.add_arguments(enroll, "enroll")
    enroll.add_argument("file", help="inventory file (JSON or YAML)")
    enroll.add_argument(
        "--fake-hardware", action="store_true",
        help="enroll every node as fake-hardware whatever its driver "
             "(bifrost inventories name ipmi, redfish, ...); driver_info "
             "is kept",
    )
    enroll.add_argument(
        "--default-resource-class", metavar="NAME", default="baremetal",
        help="resource class of nodes that name none (default baremetal, "
             "as bifrost configures Ironic); '' leaves them without one, "
             "and then they cannot be allocated",
    )
    enroll.add_argument(
        "--default-trait", metavar="TRAIT", action="append", default=[],
        help="a trait of nodes that name no traits (repeatable)",
    )
    return parser


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The resolved options of one command line (exits on usage errors;
    :class:`config.ConfigError` for a configuration that cannot work)."""
    args = _parser().parse_args(argv)
    command = "db upgrade" if args.command == "db" else args.command
    return config.load(args, command)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    try:
        args = parse(argv)
    except config.ConfigError as exc:
        print(f"baremetal-alloc-server: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.log_level != "DEBUG":
        logging.getLogger("alembic").setLevel(logging.WARNING)
    try:
        from baremetal_allocclient.server.db.engine import Database
    except ImportError as exc:
        print(
            f"baremetal-alloc-server: missing dependency ({exc}); install "
            f"'baremetal-allocclient[server]'",
            file=sys.stderr,
        )
        return 2
    url = args.db or default_db_url()
    db = Database(url, getattr(args, "db_connections", None))
    try:
        if args.command == "db":
            db.upgrade()
            current, _head = db.schema_revisions()
            print(f"Database schema is at revision {current}")
            return 0
        if args.command == "enroll":
            return _enroll(db, args)
        return _serve(db, args)
    finally:
        db.dispose()


def _enroll(db: object, args: argparse.Namespace) -> int:
    from baremetal_allocclient.server.db.engine import (
        Database,
        SchemaOutOfDate,
    )
    from baremetal_allocclient.server.ironic import inventory

    assert isinstance(db, Database)
    defaults = inventory.Defaults(
        resource_class=args.default_resource_class or None,
        traits=tuple(sorted(set(args.default_trait))),
        any_driver=args.fake_hardware,
    )
    try:
        db.check_schema()
        with open(args.file, encoding="utf-8") as stream:
            parsed = inventory.parse(stream.read(), args.file, defaults)
        created, skipped = inventory.enroll(db, parsed.nodes)
    except (OSError, inventory.InventoryError, SchemaOutOfDate) as exc:
        print(f"baremetal-alloc-server: {exc}", file=sys.stderr)
        return 1
    for note in _enroll_notes(parsed):
        print(f"baremetal-alloc-server: {note}", file=sys.stderr)
    message = f"Enrolled {created} node(s)"
    if skipped:
        message += f", skipped {skipped} already present"
    print(message)
    return 0


def _enroll_notes(parsed: object) -> list[str]:
    """What enrolling did that the inventory did not say, said once."""
    from baremetal_allocclient.server.ironic import inventory

    assert isinstance(parsed, inventory.Inventory)
    notes = []
    if parsed.mapped_drivers:
        notes.append(
            f"driver(s) {', '.join(sorted(parsed.mapped_drivers))} enrolled "
            f"as {inventory.DRIVER}; driver_info kept")
    if parsed.ignored:
        notes.append(
            f"ignored host-side key(s) that bifrost's playbooks use: "
            f"{', '.join(sorted(parsed.ignored))}")
    classless = sum(1 for n in parsed.nodes if n.resource_class is None)
    if classless:
        notes.append(
            f"{classless} node(s) have no resource class and cannot be "
            f"allocated (see --default-resource-class)")
    return notes


def _serve(db: object, args: argparse.Namespace) -> int:
    from sqlalchemy.exc import DBAPIError

    from baremetal_allocclient.server import assembly, heap
    from baremetal_allocclient.server.allocation.membership import (
        ConductorNameInUse,
    )
    from baremetal_allocclient.server.db.engine import (
        Database,
        SchemaOutOfDate,
    )

    assert isinstance(db, Database)
    try:
        built = assembly.build(db, args)
    except security.SecurityConfigError as exc:
        print(f"baremetal-alloc-server: {exc}", file=sys.stderr)
        return 2
    except (backend_options.BackendConfigError, SchemaOutOfDate,
            ConductorNameInUse) as exc:
        print(f"baremetal-alloc-server: {exc}", file=sys.stderr)
        return 1
    except DBAPIError as exc:
        print(f"baremetal-alloc-server: cannot use the database "
              f"{_redact(db.url)}: {exc.orig or exc}", file=sys.stderr)
        return 1
    server = assembly.front_end(built, args)
    stop = threading.Event()

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        LOG.info("Received signal %d, stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        server.prepare()
    except OSError as exc:
        print(
            f"baremetal-alloc-server: cannot listen on "
            f"{args.host}:{args.port}: {exc}",
            file=sys.stderr,
        )
        built.membership.leave()  # free the name for the next attempt
        return 1
    heap.start_up_over()
    thread = threading.Thread(target=server.serve, name="http", daemon=True)
    thread.start()
    built.start()
    LOG.info("Serving on %s://%s:%d (database %s, auth %s, backend %s)",
             built.setup.scheme, args.host, args.port, _redact(db.url),
             args.auth_strategy, built.backend.name)
    while not stop.wait(1.0):
        if not thread.is_alive():
            LOG.error("HTTP server thread died")
            break
    # Graceful stop: no new requests, then the services (Assembly.stop).
    server.stop()
    thread.join()  # bounded: the front end drains for SHUTDOWN_GRACE at most
    built.stop()
    return 0


def _redact(url: str) -> str:
    """Hide a password in a database URL before logging it."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


if __name__ == "__main__":
    sys.exit(main())
