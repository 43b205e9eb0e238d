"""``baremetal allocation watch``: print each change of the allocations
as it is committed (a verb python-ironicclient does not have).

On baremetal-alloc-server the command follows the change stream (the
watch extension, one connection); against a server that does not offer
it (real Ironic) it polls the list every ``--poll-interval`` seconds and
says so once on stderr.  One line per change, or one JSON object per
line with ``-f json``, until Ctrl-C, ``--until-state`` or ``--timeout``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Mapping
from typing import Any

from baremetal_allocclient.osc.v1 import base, parsing
from baremetal_allocclient.v1 import Allocation, Client

FORMATS = ("line", "json")
POLL_NOTICE = ("The server does not offer the change stream (watch "
               "extension); polling every {interval:g} s instead.")
#: The fields whose change a poll reports.
_COMPARED = ("state", "node_uuid", "name", "extra", "last_error")


def change_record(cursor: int | None, op: str,
                  allocation: Mapping[str, Any]) -> dict[str, Any]:
    """One printed change (pure)."""
    return {"cursor": cursor, "op": op, "allocation": dict(allocation)}


def format_line(record: Mapping[str, Any], fmt: str) -> str:
    """The text printed for a change (pure)."""
    if fmt == "json":
        return json.dumps(record, sort_keys=True, default=str)
    body = record["allocation"]
    cursor = "-" if record["cursor"] is None else str(record["cursor"])
    return " ".join(str(part) for part in (
        cursor, record["op"], body.get("uuid"), body.get("name") or "-",
        body.get("state"), body.get("node_uuid") or "-"))


def polled_changes(before: Mapping[str, Mapping[str, Any]],
                   after: Mapping[str, Mapping[str, Any]]
                   ) -> list[dict[str, Any]]:
    """The changes between two polls, by UUID (pure)."""
    found = []
    for uuid, body in after.items():
        old = before.get(uuid)
        if old is None:
            found.append(change_record(None, "created", body))
        elif any(old.get(k) != body.get(k) for k in _COMPARED):
            found.append(change_record(None, "updated", body))
    found.extend(change_record(None, "deleted", body)
                 for uuid, body in before.items() if uuid not in after)
    return found


class WatchAllocations(base.AllocationCommand):
    """Print each change of the allocations as it is committed."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = super().get_parser(prog_name)
        for name in ("resource-class", "state", "owner", "node", "name",
                     "group"):
            parser.add_argument(f"--{name}", metavar=f"<{name}>",
                                help=f"Only allocations with this {name}.")
        parser.add_argument("--allocation", metavar="<uuid>",
                            help="Only this allocation (its UUID).")
        parser.add_argument(
            "--since", type=parsing.non_negative_int, metavar="<cursor>",
            help="Start after this cursor (a change's, printed first on "
                 "each line); default: now.")
        parser.add_argument(
            "--until-state", choices=("active", "error", "allocating"),
            help="Stop at the first change into this state.")
        parser.add_argument(
            "--timeout", type=parsing.wait_timeout, metavar="<seconds>",
            help="Stop after this many seconds (60, 2.5, 5m, 1h30m...; 0: "
                 "no limit, as without it; exit 1 if --until-state was "
                 "not reached).")
        parser.add_argument(
            "--poll-interval", type=parsing.positive_seconds, default=2.0,
            metavar="<seconds>",
            help="Seconds between lists when the server has no change "
                 "stream (real Ironic).")
        parser.add_argument("-f", "--format", dest="watch_format",
                            choices=FORMATS, default="line",
                            help="line (default) or json (JSON lines).")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        client = base.client(self)
        if parsed_args.timeout == 0:  # no limit, as for --wait
            parsed_args.timeout = None
        filters = {key: getattr(parsed_args, key) for key in (
            "resource_class", "state", "owner", "node", "name", "group")}
        if client.supports_watch():
            records = _streamed(client, parsed_args, filters)
        else:
            sys.stderr.write(POLL_NOTICE.format(
                interval=parsed_args.poll_interval) + "\n")
            records = _polled(client, parsed_args, filters)
        try:
            for record in records:
                self.app.stdout.write(
                    format_line(record, parsed_args.watch_format) + "\n")
                self.app.stdout.flush()
                if parsed_args.until_state is not None and \
                        record["allocation"].get("state") == \
                        parsed_args.until_state:
                    return 0
        except KeyboardInterrupt:
            return 0
        return 1 if parsed_args.until_state is not None else 0


def _streamed(client: Client, args: argparse.Namespace,
              filters: dict[str, str | None]) -> Iterator[dict[str, Any]]:
    for change in client.watch_allocations(
            since=args.since, timeout=args.timeout, uuid=args.allocation,
            resource_class=filters["resource_class"],
            state=filters["state"], owner=filters["owner"],
            node=filters["node"], name=filters["name"],
            group=filters["group"]):
        yield change_record(change.cursor, change.op,
                            change.allocation.to_dict())


def _polled(client: Client, args: argparse.Namespace,
            filters: dict[str, str | None]) -> Iterator[dict[str, Any]]:
    stop = None if args.timeout is None else time.monotonic() + args.timeout

    def snapshot() -> dict[str, dict[str, Any]]:
        found = {}
        for item in client.list_allocations(
                resource_class=filters["resource_class"],
                state=filters["state"], owner=filters["owner"],
                node=filters["node"]):
            if _wanted(item, args, filters):
                found[str(item.uuid)] = item.to_dict()
        return found

    before = snapshot()
    while stop is None or time.monotonic() < stop:
        pause = args.poll_interval if stop is None else max(
            0.0, min(args.poll_interval, stop - time.monotonic()))
        time.sleep(pause)
        after = snapshot()
        yield from polled_changes(before, after)
        before = after


def _wanted(item: Allocation, args: argparse.Namespace,
            filters: Mapping[str, str | None]) -> bool:
    if args.allocation is not None and item.uuid != args.allocation:
        return False
    name = filters.get("name")
    return name is None or item.name == name
