"""Running Ironic-compatible API targets for functional and contract tests.

Two targets speak the same HTTP API: the reference server of this project
(in the test process, on a temporary SQLite file: see
:mod:`baremetal_allocclient.tests.fixtures.inprocess`) and real Ironic from
PyPI (``fake-hardware``, ``noauth``, SQLite) in its own virtualenv.  Each is
started at most once per test process, lazily, and stopped when the process
exits.  ``per_target`` turns one mixin of tests into one test case class per
target, so the same assertions run against both.

The real clients (python-openstackclient with python-ironicclient) come from
the Ironic virtualenv, where no plugin of this project is installed, so
``openstack baremetal allocation ...`` is always Ironic's own command.
"""

from __future__ import annotations

import atexit
import json as jsonlib
import os
import subprocess
import threading
import time
import unittest
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import requests
import testtools

from baremetal_allocclient.server.ironic import interfaces
from baremetal_allocclient.tests.fixtures import databases, preforked
from baremetal_allocclient.tests.fixtures.api import NodeMaking
from baremetal_allocclient.tests.fixtures.inprocess import InProcessServer
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess
from baremetal_allocclient.tests.fixtures.peers import (
    CommandPeer,
    Lazy,
    Peer,
    ensure_venv,
    run_setup,
    started,
    venv_path,
)
from baremetal_allocclient.tests.fixtures.processes import clean_env

#: What the Ironic virtualenv holds; ironic is pinned to the measured release.
IRONIC_REQUIREMENTS: tuple[str, ...] = (
    "ironic==39.0.0",
    # The broker's Ironic runs on MariaDB (SQLite leaves allocations
    # failed or stuck under concurrent claims).
    "PyMySQL",
    "python-ironicclient",
    "python-openstackclient",
)
#: Set to "0" to skip the real-Ironic target (it runs by default and in CI).
IRONIC_SWITCH_ENV = "BAREMETAL_ALLOC_TEST_IRONIC"
#: Overrides where the Ironic virtualenv lives (default <repo>/.venv-ironic).
IRONIC_VENV_ENV = "BAREMETAL_ALLOC_IRONIC_VENV"
_API_HEADER = "X-OpenStack-Ironic-API-Version"


class TargetError(RuntimeError):
    """A target did not behave as a test needs."""


def error_message(response: requests.Response) -> str:
    """Extract Ironic's faultstring (or the raw body) from an error answer.

    Ironic nests a JSON document inside ``error_message``; version errors use
    ``description`` instead of ``faultstring``.
    """
    try:
        body = response.json()
    except ValueError:
        return response.text
    if not isinstance(body, dict) or "error_message" not in body:
        return response.text
    inner: object = body["error_message"]
    if isinstance(inner, str):
        try:
            inner = jsonlib.loads(inner)
        except ValueError:
            return str(inner)
    if isinstance(inner, dict):
        for key in ("faultstring", "description", "title"):
            value = inner.get(key)
            if isinstance(value, str):
                return value
    return str(inner)


def _is_locked(response: requests.Response) -> bool:
    """Whether an answer is SQLite's transient lock error (seen on Ironic)."""
    return (
        response.status_code == 500
        and "database is locked" in response.text
    )


class Target(NodeMaking):
    """One running Ironic-compatible API and the real clients to drive it:
    Ironic (a peer in a process of its own), or a reference server (in
    this process, or in one from the launcher)."""

    def __init__(self, name: str, endpoint: str,
                 clients_bin: Callable[[], str],
                 peer: Peer | None = None,
                 server: InProcessServer | ServerProcess | None = None):
        self.name = name
        self.endpoint = endpoint
        self._clients_bin = clients_bin
        self._peer = peer
        self._server = server
        self._local = threading.local()

    @property
    def pid(self) -> int:
        """PID of the server process this target started."""
        if self._peer is None:
            raise TargetError(f"{self.name} has no process of its own")
        return self._peer.pid

    @property
    def workdir(self) -> str:
        """The working directory of the server process this target
        started (Ironic's holds its configuration and SQLite file)."""
        if self._peer is None:
            raise TargetError(f"{self.name} has no process of its own")
        return self._peer.workdir

    @property
    def db_url(self) -> str:
        """The reference server's database."""
        if self._server is None:
            raise TargetError(f"{self.name} is not the reference server")
        return self._server.db_url

    def log_tail(self, size: int = 8000) -> str:
        """The end of the started server's log ("" for none); the
        broker's and its Ironic's."""
        if self._server is not None and self._peer is not None:
            return (self._server.log()[-size // 2:] + "\n-- Ironic --\n"
                    + self._peer.log_tail(size // 2))
        if self._server is not None:
            return self._server.log()[-size:]
        if self._peer is None:
            return ""
        return self._peer.log_tail(size)

    def log_mentions(self, text: str) -> int:
        """How often the started server's whole log contains ``text``
        (0 for a target without a server of its own)."""
        if self._server is not None:
            return self._server.log().count(text)
        if self._peer is None:
            return 0
        return self._peer.log().count(text)

    def __repr__(self) -> str:
        return f"<Target {self.name} {self.endpoint}>"

    # -- HTTP --------------------------------------------------------------

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(
            self._local, "session", None)
        if session is None:
            session = requests.Session()
            self._local.session = session
        return session

    def request(self, method: str, path: str, json: object = None,
                version: str | None = "latest", **kw: Any
                ) -> requests.Response:
        """Send one API request; ``version=None`` sends no version header.

        A 500 "database is locked" (real Ironic on SQLite, under load) is
        retried a few times, because it is Ironic's transient weakness and
        not what the calling test is about.
        """
        headers = dict(kw.pop("headers", None) or {})
        if version is not None:
            headers.setdefault(_API_HEADER, version)
        if json is not None:
            kw["json"] = json
        kw.setdefault("timeout", 60)
        url = self.endpoint + path
        for _ in range(10):
            response = self._session().request(
                method, url, headers=headers, **kw)
            if not _is_locked(response):
                break
            time.sleep(0.2)
        return response

    def expect(self, status: int, method: str, path: str,
               json: object = None, **kw: Any) -> Any:
        """Send a request, insist on ``status`` and return the JSON body."""
        response = self.request(method, path, json, **kw)
        if response.status_code != status:
            raise AssertionError(
                f"{self.name}: {method} {path} -> {response.status_code} "
                f"(expected {status}): {response.text[:2000]}"
            )
        return response.json() if response.content else None

    def node(self, ident: str) -> dict[str, Any]:
        """The node's full representation (GET /v1/nodes/{ident})."""
        body: dict[str, Any] = self.expect(200, "GET", f"/v1/nodes/{ident}")
        return body

    def allocation(self, ident: str) -> dict[str, Any]:
        """The allocation's full representation."""
        body: dict[str, Any] = self.expect(
            200, "GET", f"/v1/allocations/{ident}")
        return body

    def wait_node(self, ident: str,
                  predicate: Callable[[dict[str, Any]], bool],
                  timeout: float = 60.0, what: str = "condition"
                  ) -> dict[str, Any]:
        """Poll a node until ``predicate`` holds for it (giving up at once
        when it failed a step)."""
        node: dict[str, Any] = self.await_node(ident, predicate, timeout,
                                               what)
        return node

    def wait_allocation(self, ident: str, timeout: float = 60.0
                        ) -> dict[str, Any]:
        """Poll an allocation until it leaves ``allocating``."""
        deadline = time.monotonic() + timeout
        while True:
            alloc = self.allocation(ident)
            if alloc["state"] != "allocating":
                return alloc
            if time.monotonic() > deadline:
                raise TargetError(
                    f"{self.name}: allocation {ident} still allocating "
                    f"after {timeout:.0f}s"
                )
            time.sleep(0.02)

    def set_provision(self, ident: str, target: str,
                      **extra: Any) -> requests.Response:
        """PUT /v1/nodes/{ident}/states/provision."""
        return self.request("PUT", f"/v1/nodes/{ident}/states/provision",
                            {"target": target, **extra})

    def set_power(self, ident: str, target: str) -> requests.Response:
        """PUT /v1/nodes/{ident}/states/power."""
        return self.request("PUT", f"/v1/nodes/{ident}/states/power",
                            {"target": target})

    # -- real clients ------------------------------------------------------

    def _client(self, command: str, args: Sequence[str], check: bool
                ) -> subprocess.CompletedProcess[str]:
        argv = [
            os.path.join(self._clients_bin(), command),
            "--os-auth-type", "none", "--os-endpoint", self.endpoint,
            *args,
        ]
        proc = preforked.run(argv, env=clean_env(), timeout=120)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{self.name}: {' '.join(argv[1:])} exited "
                f"{proc.returncode}\nstdout: {proc.stdout}\n"
                f"stderr: {proc.stderr}"
            )
        return proc

    def openstack(self, *args: str, check: bool = True
                  ) -> subprocess.CompletedProcess[str]:
        """Run the real ``openstack`` (OSC + ironicclient) against us."""
        return self._client("openstack", args, check)

    def baremetal(self, *args: str, check: bool = True
                  ) -> subprocess.CompletedProcess[str]:
        """Run python-ironicclient's standalone ``baremetal`` against us."""
        return self._client("baremetal", args, check)

    def connection(self) -> Any:
        """An in-process openstacksdk Connection with ``auth_type: none``.

        Both ``auth.endpoint`` and ``baremetal_endpoint_override`` are set:
        some openstacksdk microversion checks read the former only.  The
        SDK's retries of 409 answers (15 s of back-off) are switched off, so
        a conflict surfaces at once as ``ConflictException``.
        """
        import openstack

        return openstack.connect(
            auth_type="none",
            auth={"endpoint": self.endpoint},
            baremetal_endpoint_override=self.endpoint,
            load_yaml_config=False,
            load_envvars=False,
            baremetal_status_code_retries=0,
        )

    def stop(self) -> None:
        """Stop the server (if we started one)."""
        if self._peer is not None:
            self._peer.close()
            self._peer = None
        if self._server is not None:
            self._server.cleanup()
            self._server = None


# -- Ironic ------------------------------------------------------------------

def ensure_ironic_venv() -> str:
    """The Ironic virtualenv's ``bin`` directory (installed on demand;
    ``$BAREMETAL_ALLOC_IRONIC_VENV``, default ``<repo>/.venv-ironic``)."""
    return ensure_venv(venv_path(IRONIC_VENV_ENV, ".venv-ironic"),
                       IRONIC_REQUIREMENTS, "Ironic")


def ironic_config(workdir: str, port: int,
                  connection: str | None = None,
                  htpasswd: str | None = None,
                  keystone: str | None = None) -> str:
    """ironic.conf text for an all-in-one, fake-hardware, noauth Ironic
    (on its own SQLite file unless ``connection`` names a database; HTTP
    basic authentication against the ``htpasswd`` file when given;
    Keystone's with ``keystone``, its ``[keystone_authtoken]`` text)."""
    if keystone:
        auth = ["auth_strategy = keystone"]
    elif htpasswd:
        auth = ["auth_strategy = http_basic",
                f"http_basic_auth_user_file = {htpasswd}"]
    else:
        auth = ["auth_strategy = noauth"]
    lines = [
        "[DEFAULT]",
        *auth,
        "host = baremetal-alloc-contract",
        "rpc_transport = none",
        f"state_path = {workdir}/state",
        "enabled_hardware_types = fake-hardware",
        "use_stderr = true",
    ]
    # Every implementation the reference server accepts is enabled, in the
    # same order, so both targets accept and refuse the same values.
    for iface in interfaces.INTERFACES.values():
        lines += [f"enabled_{iface.kind}_interfaces = "
                  f"{', '.join(iface.accepted)}",
                  f"default_{iface.kind}_interface = {iface.default}"]
    lines += [
        "[api]", "host_ip = 127.0.0.1", f"port = {port}", "api_workers = 1",
        "[conductor]", "automated_clean = false",
        # SQLite's busy wait 30 s, not pysqlite's 5 s: on a loaded
        # two-core machine Ironic's own API and conductor otherwise answer
        # 500 "database is locked" to each other's writes.
        "[database]",
        "connection = " + (connection or
                           f"sqlite:///{workdir}/ironic.sqlite?timeout=30"),
        "[oslo_concurrency]", f"lock_path = {workdir}/locks",
    ]
    return "\n".join(lines) + "\n" + (keystone or "")


class Ironic(Peer):
    """All-in-one Ironic (API and conductor in one process) on its own
    SQLite database, its schema created."""

    name = "ironic"

    def __init__(self, database: databases.ScratchDatabase | None = None,
                 htpasswd: str | None = None,
                 keystone: str | None = None) -> None:
        self.bin_dir = ensure_ironic_venv()
        self.database = database
        self.htpasswd = htpasswd
        self.keystone = keystone
        super().__init__()
        self.conf = os.path.join(self.workdir, "ironic.conf")
        try:
            for sub in ("state", "locks"):
                os.makedirs(os.path.join(self.workdir, sub))
            self.command(0)
            run_setup([os.path.join(self.bin_dir, "ironic-dbsync"),
                       "--config-file", self.conf, "create_schema"], 300,
                      "creating the Ironic schema")
        except BaseException:
            self.close()
            raise

    def command(self, port: int) -> list[str]:
        with open(self.conf, "w") as handle:
            handle.write(ironic_config(
                self.workdir, port,
                None if self.database is None else self.database.url,
                self.htpasswd, self.keystone))
        return [os.path.join(self.bin_dir, "ironic"), "--config-file",
                self.conf]


def start_ironic() -> Target:
    """A new Ironic (not this process's :func:`ironic_target`); stopped
    by ``Target.stop``."""
    ironic = started(Ironic())
    bin_dir = ironic.bin_dir
    return Target("ironic", ironic.endpoint, lambda: bin_dir, peer=ironic)


def serve_process(name: str, workdir: str,
                  command: Callable[[int], list[str]],
                  clients_bin: Callable[[], str]) -> Target:
    """``command(port)`` as a peer named ``name`` in ``workdir`` (a
    benchmark's server), started and stopped at exit at the latest."""
    peer = started(CommandPeer(name, command, workdir))
    target = Target(name, peer.endpoint, clients_bin, peer=peer)
    atexit.register(target.stop)
    return target


def _start_reference() -> Target:
    server = InProcessServer()
    try:
        server.start()
    except BaseException:
        server.cleanup()
        raise
    return Target("reference", server.endpoint, ensure_ironic_venv,
                  server=server)


class _IronicOnItsDatabase(Ironic):
    """An Ironic on a scratch MariaDB database of its own (dropped when
    it is closed)."""

    def close(self) -> None:
        super().close()
        if self.database is not None:
            self.database.drop()


def start_broker(*extra: str, htpasswd: str | None = None) -> Target:
    """A reference server in front of a new real Ironic (``--backend
    ironic``, serve's ``extra`` options added); both stopped by
    ``Target.stop``.  That Ironic runs on MariaDB when the tests have one
    (``BAREMETAL_ALLOC_TEST_MYSQL_URL``), as a production Ironic does:
    on SQLite, Ironic itself fails or strands allocations under
    concurrent claims.  With ``htpasswd``, Ironic asks for HTTP basic
    authentication against that file."""
    database = (databases.ScratchDatabase("mysql")
                if os.environ.get(databases.MYSQL_ENV) else None)
    try:
        ironic = started(_IronicOnItsDatabase(database, htpasswd))
    except BaseException:
        if database is not None:
            database.drop()
        raise
    # A process of its own: the mirror's thread talks HTTP all the time,
    # and in the test process the unit tests' requests_mock (patched into
    # every requests session) would catch its requests.
    server = ServerProcess()
    try:
        server.start("--backend", "ironic", "--ironic-url", ironic.endpoint,
                     *extra, schema=True, timeout=120)
    except BaseException:
        server.cleanup()
        ironic.close()
        raise
    bin_dir = ironic.bin_dir
    return Target("broker", server.endpoint, lambda: bin_dir, peer=ironic,
                  server=server)


_REFERENCE = Lazy(_start_reference, Target.stop)
_IRONIC = Lazy(start_ironic, Target.stop)
#: The shared broker target's mirror rounds (seconds).  Each round lists
#: every node of its Ironic, which grows with every test of the worker
#: (at 2 s the rounds kept the suite's Ironics busy); the tests rely on
#: the reads after a change made through the server, or on a client's
#: read of a node through it, never on a round.
BROKER_SYNC_INTERVAL = 60.0
_BROKER = Lazy(lambda: start_broker(
    "--ironic-sync-interval", str(BROKER_SYNC_INTERVAL)), Target.stop)


def reference_target() -> Target:
    """The reference server for this test process, started on first use."""
    return _REFERENCE.get()


def ironic_target() -> Target:
    """Real Ironic for this test process, installed and started on first use.

    Skipped only when BAREMETAL_ALLOC_TEST_IRONIC=0.
    """
    if os.environ.get(IRONIC_SWITCH_ENV, "1").strip() == "0":
        raise unittest.SkipTest(f"{IRONIC_SWITCH_ENV}=0: real Ironic skipped")
    return _IRONIC.get()


def broker_target() -> Target:
    """The reference server in front of its own real Ironic (the broker)
    for this test process, started on first use; skipped as the Ironic
    target is."""
    if os.environ.get(IRONIC_SWITCH_ENV, "1").strip() == "0":
        raise unittest.SkipTest(f"{IRONIC_SWITCH_ENV}=0: real Ironic skipped")
    return _BROKER.get()


TARGET_FACTORIES: dict[str, Callable[[], Target]] = {
    "Reference": reference_target,
    "Ironic": ironic_target,
    "Broker": broker_target,
}


#: The contract suite's package: its tests run on the broker too.
_CONTRACT = "baremetal_allocclient.tests.contract."


def per_target(mixin: type, broker: bool | None = None) -> dict[str, type]:
    """One testtools test case class per target, sharing ``mixin``'s tests.

    Usage at module level: ``globals().update(per_target(SomeTests))``.
    Each class's ``setUpClass`` sets ``cls.target``.  The broker target
    (``Broker``) is one of them for the contract suite's tests, unless
    ``broker`` is False: the modules whose routes the broker only passes
    through to Ironic (ports, VIFs, interfaces: the Ironic target already
    checks those answers) say so, and the functional suite's modules
    (``broker`` None) run on the other two.
    """
    if broker is None:
        broker = mixin.__module__.startswith(_CONTRACT)
    classes: dict[str, type] = {}
    for suffix, factory in TARGET_FACTORIES.items():
        if suffix == "Broker" and not broker:
            continue
        name = f"Test{mixin.__name__}{suffix}"
        cls = type(name, (mixin, testtools.TestCase), {
            "__module__": mixin.__module__,
            "__qualname__": name,
            "__doc__": f"{mixin.__doc__ or mixin.__name__} ({suffix} target)",
            "setUp": _set_up_with_log(),
        })
        # The target is set before the mixin's own setUpClass runs, so that
        # one can already enroll nodes.
        cls.setUpClass = classmethod(  # type: ignore[attr-defined]
            _class_set_up(cls, factory))
        classes[name] = cls
    return classes


def _set_up_with_log() -> Callable[[Any], None]:
    """A test's ``setUp`` that, when the test fails, attaches the end of
    the target's log (why real Ironic left an allocation ``allocating``
    is only there, and its working directory is gone after the run)."""
    def set_up(case: Any) -> None:
        case.addOnException(lambda _exc_info: case.addDetail(
            f"{case.target.name} log (end)",
            testtools.content.text_content(case.target.log_tail())))
        super(type(case), case).setUp()
    return set_up


def _class_set_up(owner: Any, factory: Callable[[], Target]
                  ) -> Callable[[Any], None]:
    def set_up_class(cls: Any) -> None:
        cls.target = factory()
        super(owner, cls).setUpClass()
    return set_up_class


def unique(prefix: str = "rc") -> str:
    """A short unique name for per-test resource classes and node names."""
    import uuid

    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def iter_pages(target: Target, path: str, key: str,
               params: dict[str, Any] | None = None
               ) -> Iterator[dict[str, Any]]:
    """Follow ``next`` links of a collection and yield every item."""
    url: str | None = path
    query = dict(params or {})
    while url:
        if url.startswith("http"):
            body = target.expect(200, "GET", url[len(target.endpoint):])
        else:
            body = target.expect(200, "GET", url, params=query)
        yield from body[key]
        url = body.get("next")
