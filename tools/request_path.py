"""Print the server modules a create and a delete pass through, from the
code: each request runs once through the WSGI application (no HTTP
server) over a fresh SQLite file, with a profiler recording, in the
request's thread, the module of every function of the server called, in
the order first called.  The worker's part of a create runs in the
request thread here (``Prefer: wait`` with the database backend), so it
is listed too.

    .venv/bin/python tools/request_path.py

(The architecture page quotes its output; run it on two commits to
compare them.)
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import fixtures
from sqlalchemy import insert

from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.db.models import Node
from baremetal_allocclient.tests.fixtures.wsgi import WsgiApp

PACKAGE = "baremetal_allocclient.server."
HEADERS = {"X-OpenStack-Ironic-API-Version": "latest",
           "Prefer": "wait=5"}


def modules_called(call: Callable[[], Any]) -> list[str]:
    """The server modules whose functions ``call`` runs, first call first
    (this thread only)."""
    seen: dict[str, None] = {}
    me = threading.get_ident()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call" or threading.get_ident() != me:
            return
        name = frame.f_globals.get("__name__", "")
        if name.startswith(PACKAGE):
            seen.setdefault(name[len(PACKAGE):], None)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return list(seen)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, fixtures.Fixture() as owner:
        db = Database("sqlite:///" + os.path.join(tmp, "path.sqlite"))
        db.upgrade()
        with db.write() as session:
            session.execute(insert(Node), [
                {"uuid": f"00000000-0000-0000-0000-00000000000{i}",
                 "name": f"node-{i}", "driver": "fake-hardware",
                 "resource_class": "rc", "provision_state": "available",
                 "power_state": "power off"} for i in range(3)])
        app = owner.useFixture(WsgiApp(db))
        client = app.client
        client.post("/v1/allocations", json={"resource_class": "rc"},
                    headers=HEADERS)  # warm: imports, compiled statements
        for title, call in (
            ("POST /v1/allocations (Prefer: wait)", lambda: client.post(
                "/v1/allocations", json={"resource_class": "rc",
                                         "name": "traced"},
                headers=HEADERS)),
            ("DELETE /v1/allocations/{ident}", lambda: client.delete(
                "/v1/allocations/traced", headers=HEADERS)),
        ):
            print(title)
            for module in modules_called(call):
                print(f"  {module}")
        db.dispose()


if __name__ == "__main__":
    main()
