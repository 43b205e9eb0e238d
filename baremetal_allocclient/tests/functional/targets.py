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
import contextlib
import fcntl
import json as jsonlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import requests
import testtools

from baremetal_allocclient.server.ironic import interfaces
from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.fixtures.inprocess import InProcessServer
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess

#: What the Ironic virtualenv holds; ironic is pinned to the measured release.
IRONIC_REQUIREMENTS: tuple[str, ...] = (
    "ironic==39.0.0",
    "python-ironicclient",
    "python-openstackclient",
)
#: Set to "0" to skip the real-Ironic target (it runs by default and in CI).
IRONIC_SWITCH_ENV = "BAREMETAL_ALLOC_TEST_IRONIC"
#: Overrides where the Ironic virtualenv lives (default <repo>/.venv-ironic).
IRONIC_VENV_ENV = "BAREMETAL_ALLOC_IRONIC_VENV"
_MARKER = ".baremetal-alloc-ready"
_START_TIMEOUT = 90.0
_INSTALL_TIMEOUT = 1800.0
_API_HEADER = "X-OpenStack-Ironic-API-Version"
_PORT_TAKEN = "Address already in use"
_REPO_ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
)


class TargetError(RuntimeError):
    """A target could not be started or did not behave as a test needs."""


def free_port() -> int:
    """Return a loopback TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


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


class _Process:
    """One server process with its log file and temporary directory."""

    def __init__(self, argv: Sequence[str], workdir: str, log_name: str):
        self.workdir = workdir
        self.log_path = os.path.join(workdir, log_name)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop
        self.popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env=_clean_env(),
            preexec_fn=_die_with_parent,
        )

    def log_tail(self, size: int = 6000) -> str:
        """The end of the process output, for error messages."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - size))
                return log.read().decode("utf-8", "replace")
        except OSError as exc:
            return f"(log unreadable: {exc})"

    def wait_ready(self, url: str, timeout: float) -> None:
        """Poll ``GET url`` until it answers 200; fail early if we exit."""
        deadline = time.monotonic() + timeout
        while True:
            code = self.popen.poll()
            if code is not None:
                raise TargetError(
                    f"{self.popen.args!r} exited with {code} before "
                    f"answering {url}:\n{self.log_tail()}"
                )
            with contextlib.suppress(requests.RequestException):
                if requests.get(url, timeout=2).status_code == 200:
                    return
            # Ironic keeps running after failing to bind; give up at once.
            if _PORT_TAKEN in self.log_tail(2000):
                raise TargetError(f"{url}: port taken:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise TargetError(
                    f"{url} did not answer within {timeout:.0f}s:\n"
                    f"{self.log_tail()}"
                )
            time.sleep(0.1)

    def stop(self, keep_workdir: bool = False) -> None:
        """Terminate (then kill) our process by PID and drop its files."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)
        self._log.close()
        if not keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def _die_with_parent() -> None:
    """Ask Linux to kill the server when the test process dies abruptly."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def _clean_env() -> dict[str, str]:
    """The environment without OS_* settings that could redirect clients."""
    return {k: v for k, v in os.environ.items() if not k.startswith("OS_")}


def run_setup(argv: Sequence[str], timeout: float, what: str,
              env: dict[str, str] | None = None) -> None:
    """Run a set-up command (in a clean environment unless ``env`` is
    given); a failure carries its output."""
    proc = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_clean_env() if env is None else env,
        check=False,
    )
    if proc.returncode != 0:
        raise TargetError(
            f"{what} failed ({proc.returncode}): {' '.join(argv)}\n"
            f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )


class Target:
    """One running Ironic-compatible API and the real clients to drive it:
    Ironic in a process of its own, or a reference server (in this
    process, or in one from the launcher)."""

    def __init__(self, name: str, endpoint: str,
                 clients_bin: Callable[[], str],
                 process: _Process | None = None,
                 server: InProcessServer | ServerProcess | None = None):
        self.name = name
        self.endpoint = endpoint
        self._clients_bin = clients_bin
        self._process = process
        self._server = server
        self._local = threading.local()

    @property
    def pid(self) -> int:
        """PID of the server process this target started."""
        if self._process is None:
            raise TargetError(f"{self.name} has no process of its own")
        return int(self._process.popen.pid)

    @property
    def workdir(self) -> str:
        """The working directory of the server process this target
        started (Ironic's holds its configuration and SQLite file)."""
        if self._process is None:
            raise TargetError(f"{self.name} has no process of its own")
        return self._process.workdir

    @property
    def db_url(self) -> str:
        """The reference server's database."""
        if self._server is None:
            raise TargetError(f"{self.name} is not the reference server")
        return self._server.db_url

    def log_tail(self, size: int = 8000) -> str:
        """The end of the started server's log ("" for none)."""
        if self._server is not None:
            return self._server.log()[-size:]
        if self._process is None:
            return ""
        return self._process.log_tail(size)

    def log_mentions(self, text: str) -> int:
        """How often the started server's whole log contains ``text``
        (0 for a target without a server of its own)."""
        if self._server is not None:
            return self._server.log().count(text)
        if self._process is None:
            return 0
        try:
            with open(self._process.log_path, "rb") as log:
                return log.read().decode("utf-8", "replace").count(text)
        except OSError:
            return 0

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
        """Poll a node until ``predicate`` holds for it."""
        deadline = time.monotonic() + timeout
        while True:
            node = self.node(ident)
            if predicate(node):
                return node
            if node.get("last_error") and node.get("provision_state") in (
                    "enroll", "deploy failed", "clean failed", "error"):
                raise TargetError(
                    f"{self.name}: node {ident} failed waiting for {what}: "
                    f"{node.get('provision_state')}: {node.get('last_error')}"
                )
            if time.monotonic() > deadline:
                raise TargetError(
                    f"{self.name}: node {ident} not at {what} after "
                    f"{timeout:.0f}s: provision_state="
                    f"{node.get('provision_state')} power_state="
                    f"{node.get('power_state')} last_error="
                    f"{node.get('last_error')}"
                )
            time.sleep(0.05)

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

    def enroll(self, count: int, resource_class: str, *,
               traits: Sequence[str] = (), owner: str | None = None,
               lessee: str | None = None, name_prefix: str | None = None,
               properties: Sequence[dict[str, Any]] = ()
               ) -> list[dict[str, Any]]:
        """Create ``count`` fake-hardware nodes and make them allocatable.

        Each node goes create -> (owner/lessee patch) -> traits -> manage ->
        provide -> power off, phase by phase across all nodes so the
        target's asynchronous work overlaps; returns the final node bodies,
        each ``available`` with power state "power off".
        """
        uuids: list[str] = []
        for index in range(count):
            body: dict[str, Any] = {
                "driver": "fake-hardware", "resource_class": resource_class}
            if name_prefix is not None:
                body["name"] = f"{name_prefix}-{index}"
            if index < len(properties):
                body["properties"] = properties[index]
            created = self.expect(201, "POST", "/v1/nodes", body)
            uuids.append(created["uuid"])
            # Ironic refuses owner on create under noauth ("project scoped
            # admin"), but accepts it as a patch.
            patch = [{"op": "add", "path": f"/{field}", "value": value}
                     for field, value in (("owner", owner), ("lessee", lessee))
                     if value is not None]
            if patch:
                self.expect(200, "PATCH", f"/v1/nodes/{created['uuid']}",
                            patch)
            if traits:
                self.expect(204, "PUT", f"/v1/nodes/{created['uuid']}/traits",
                            {"traits": list(traits)})
        self._each_state(uuids, "manage", "manageable")
        self._each_state(uuids, "provide", "available")
        for uuid in uuids:
            self._accepted(self.set_power(uuid, "power off"), uuid, "power")
        return [
            self.wait_node(uuid, lambda n: n["power_state"] == "power off",
                           what="power off")
            for uuid in uuids
        ]

    def _each_state(self, uuids: Sequence[str], verb: str, state: str) -> None:
        for uuid in uuids:
            self._accepted(self.set_provision(uuid, verb), uuid, verb)
        for uuid in uuids:
            self.wait_node(
                uuid,
                lambda n: n["provision_state"] == state
                and not n.get("target_provision_state"),
                what=state)

    def _accepted(self, response: requests.Response, uuid: str,
                  what: str) -> None:
        if response.status_code != 202:
            raise TargetError(
                f"{self.name}: {what} of node {uuid} -> "
                f"{response.status_code}: {response.text[:2000]}"
            )

    # -- real clients ------------------------------------------------------

    def _client(self, command: str, args: Sequence[str], check: bool
                ) -> subprocess.CompletedProcess[str]:
        argv = [
            os.path.join(self._clients_bin(), command),
            "--os-auth-type", "none", "--os-endpoint", self.endpoint,
            *args,
        ]
        proc = preforked.run(argv, env=_clean_env(), timeout=120)
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
        if self._process is not None:
            self._process.stop()
            self._process = None
        if self._server is not None:
            self._server.cleanup()
            self._server = None


# -- the Ironic virtualenv ---------------------------------------------------

def ironic_venv() -> str:
    """Where the Ironic virtualenv lives (created on demand)."""
    return os.path.abspath(os.environ.get(
        IRONIC_VENV_ENV, os.path.join(_REPO_ROOT, ".venv-ironic")))


def _venv_ready(venv: str, requirements: Sequence[str]) -> bool:
    try:
        with open(os.path.join(venv, _MARKER)) as marker:
            return marker.read() == "\n".join(requirements) + "\n"
    except OSError:
        return False


def ensure_venv(venv: str, requirements: Sequence[str], what: str) -> str:
    """Create a peer's virtualenv (Ironic's, Keystone's) once with
    ``requirements``; return its ``bin`` directory.

    Two stestr workers may get here at the same moment, so the install runs
    under an exclusive file lock and is marked complete only at the end (a
    half-finished install is simply resumed by the next caller; changed
    requirements install again).
    """
    bin_dir = os.path.join(venv, "bin")
    if _venv_ready(venv, requirements):
        return bin_dir
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    with open(venv + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _venv_ready(venv, requirements):
            return bin_dir
        python = os.path.join(bin_dir, "python")
        if not os.path.exists(python):
            shutil.rmtree(venv, ignore_errors=True)
            run_setup([sys.executable, "-m", "venv", venv], 300,
                 f"creating the {what} virtualenv")
        run_setup([python, "-m", "pip", "install", "-q", "--upgrade", "pip"],
             _INSTALL_TIMEOUT, f"upgrading pip in the {what} virtualenv")
        run_setup([python, "-m", "pip", "install", "-q", *requirements],
             _INSTALL_TIMEOUT, f"installing {what} into its virtualenv")
        with open(os.path.join(venv, _MARKER), "w") as marker:
            marker.write("\n".join(requirements) + "\n")
    return bin_dir


def ensure_ironic_venv() -> str:
    """The Ironic virtualenv's ``bin`` directory (installed on demand)."""
    return ensure_venv(ironic_venv(), IRONIC_REQUIREMENTS, "Ironic")


# -- starting targets --------------------------------------------------------


def ironic_config(workdir: str, port: int) -> str:
    """ironic.conf text for an all-in-one, fake-hardware, noauth Ironic."""
    lines = [
        "[DEFAULT]",
        "auth_strategy = noauth",
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
        f"connection = sqlite:///{workdir}/ironic.sqlite?timeout=30",
        "[oslo_concurrency]", f"lock_path = {workdir}/locks",
    ]
    return "\n".join(lines) + "\n"


def serve_process(name: str, workdir: str, command: Callable[[int], list[str]],
           log_name: str, clients_bin: Callable[[], str]) -> Target:
    """Start ``command(port)`` on a free port and wait until it answers.

    ``free_port`` can race with other processes; a start that fails
    because the port was taken meanwhile is retried on another port.
    Failure stops the process and removes ``workdir``.
    """
    for attempt in range(3):
        port = free_port()
        try:
            process = _Process(command(port), workdir, log_name)
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        endpoint = f"http://127.0.0.1:{port}"
        target = Target(name, endpoint, clients_bin, process)
        try:
            process.wait_ready(endpoint + "/", _START_TIMEOUT)
        except TargetError:
            taken = _PORT_TAKEN in process.log_tail()
            if not taken or attempt == 2:
                target.stop()
                raise
            process.stop(keep_workdir=True)
            continue
        except BaseException:
            target.stop()
            raise
        atexit.register(target.stop)
        return target
    raise AssertionError("unreachable")


def start_ironic() -> Target:
    bin_dir = ensure_ironic_venv()
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-ironic-")
    conf = os.path.join(workdir, "ironic.conf")

    def command(port: int) -> list[str]:
        with open(conf, "w") as handle:
            handle.write(ironic_config(workdir, port))
        return [os.path.join(bin_dir, "ironic"), "--config-file", conf]

    try:
        for sub in ("state", "locks"):
            os.makedirs(os.path.join(workdir, sub))
        command(0)
        run_setup([os.path.join(bin_dir, "ironic-dbsync"), "--config-file",
                   conf, "create_schema"], 300, "creating the Ironic schema")
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return serve_process("ironic", workdir, command, "ironic.log",
                         lambda: bin_dir)


def _start_reference() -> Target:
    server = InProcessServer()
    try:
        server.start()
    except BaseException:
        server.cleanup()
        raise
    target = Target("reference", server.endpoint, ensure_ironic_venv,
                    server=server)
    atexit.register(target.stop)
    return target


class _Lazy:
    """A per-process singleton whose start-up failure is remembered."""

    def __init__(self, start: Callable[[], Target]):
        self._start = start
        self._lock = threading.Lock()
        self._target: Target | None = None
        self._error: BaseException | None = None

    def get(self) -> Target:
        with self._lock:
            if self._error is not None:
                raise TargetError(f"target failed to start earlier: "
                                  f"{self._error}") from self._error
            if self._target is None:
                try:
                    self._target = self._start()
                except BaseException as exc:
                    self._error = exc
                    raise
            return self._target


_REFERENCE = _Lazy(_start_reference)
_IRONIC = _Lazy(start_ironic)


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


TARGET_FACTORIES: dict[str, Callable[[], Target]] = {
    "Reference": reference_target,
    "Ironic": ironic_target,
}


def per_target(mixin: type) -> dict[str, type]:
    """One testtools test case class per target, sharing ``mixin``'s tests.

    Usage at module level: ``globals().update(per_target(SomeTests))``.
    Each class's ``setUpClass`` sets ``cls.target``.
    """
    classes: dict[str, type] = {}
    for suffix, factory in TARGET_FACTORIES.items():
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
