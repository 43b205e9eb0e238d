#!/usr/bin/env python3
"""Start-up cost of the allocation command lines (a benchmark, not a test).

Starts one reference server (``baremetal-alloc-server`` on a temporary SQLite
file, a few enrolled nodes and allocations) behind a tiny counting HTTP proxy
on loopback, then runs each command line several times as a fresh process
and reports, per command: median and best wall time, peak RSS of the process
(``os.wait4``) and the HTTP requests it made (counted by the proxy).

Commands measured:

* the floor: ``python -c`` importing ``requests`` and sending one ``GET``
  of the list (what any Python command line that lists allocations does
  at least);
* ``baremetal-alloc list`` (this project, standalone), and its ratio to
  each other command, run by run (the runs are interleaved, so each pair
  saw the same machine), as medians;
* ``openstack baremetal allocation list`` served by this project's plugin;
* python-ironicclient's ``baremetal allocation list`` and ``openstack
  baremetal allocation list`` from a virtualenv without this project
  (``--ironic-venv``, default ``<repo>/.venv-ironic``), when present;
* the plugin's overhead on an unrelated ``openstack`` command
  (``openstack help baremetal node list``, which loads every plugin and
  command group but makes no request), run with and without this project's
  entry points visible. "Without" hides this distribution from
  ``importlib.metadata`` through a ``sitecustomize`` module on PYTHONPATH;
  "with" uses an empty one, so both runs have the same ``sys.path``.

Usage::

    python benchmarks/cli_startup.py [--runs 15] [--output FILE]

The JSON goes to a new file in ``benchmarks/results/`` (not committed;
``--output``, formerly ``--json``, which is kept; an empty one writes
none; see :mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import compileall
import http.client
import http.server
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not __package__:
    # Run as ``python benchmarks/cli_startup.py``: sys.path starts at
    # benchmarks/, so the checkout is added for its benchmarks package.
    sys.path.insert(0, REPO)

from benchmarks import rawruns  # noqa: E402

BIN = os.path.dirname(sys.executable)
HIDE_PLUGIN = """\
import importlib.metadata as _md

_real = _md.distributions


def _without_us(**kw):
    for dist in _real(**kw):
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name != "baremetal-allocclient":
            yield dist


_md.distributions = _without_us
"""
_HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-connection", "transfer-encoding",
    "te", "trailer", "upgrade",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class CountingProxy:
    """Forwards HTTP requests to ``upstream`` and counts them."""

    def __init__(self, upstream_port: int) -> None:
        self.count = 0
        self.requests: list[str] = []
        lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                with lock:
                    proxy.count += 1
                    proxy.requests.append(f"{self.command} {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    k: v for k, v in self.headers.items()
                    if k.lower() not in _HOP_BY_HOP and k.lower() != "host"
                }
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port,
                                                  timeout=60)
                try:
                    conn.request(self.command, self.path, body, headers)
                    answer = conn.getresponse()
                    data = answer.read()
                    self.send_response(answer.status, answer.reason)
                    for key, value in answer.getheaders():
                        if key.lower() not in _HOP_BY_HOP | {
                                "content-length"}:
                            self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    conn.close()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward
            do_HEAD = _forward

        self.port = free_port()
        self._server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class ReferenceServer:
    """``baremetal-alloc-server`` on a temporary SQLite database."""

    def __init__(self, nodes: int) -> None:
        self.workdir = tempfile.mkdtemp(prefix="bm-alloc-bench-")
        server = os.path.join(BIN, "baremetal-alloc-server")
        db = f"sqlite:///{self.workdir}/bench.sqlite"
        subprocess.run([server, "db", "upgrade", "--db", db], check=True,
                       capture_output=True)
        inventory = {
            f"bench-{i}": {"driver": "fake-hardware",
                           "resource_class": "bench"}
            for i in range(nodes)
        }
        path = os.path.join(self.workdir, "inventory.json")
        with open(path, "w") as stream:
            json.dump(inventory, stream)
        subprocess.run([server, "enroll", "--db", db, path], check=True,
                       capture_output=True)
        self.port = free_port()
        with open(os.path.join(self.workdir, "server.log"), "wb") as log:
            self.process = subprocess.Popen(
                [server, "serve", "--host", "127.0.0.1", "--port",
                 str(self.port), "--db", db],
                stdout=log, stderr=subprocess.STDOUT)
        self.endpoint = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.endpoint + "/", timeout=2):
                    break
            except OSError as exc:
                if time.monotonic() > deadline or self.process.poll():
                    self.stop()
                    raise RuntimeError("reference server did not start") \
                        from exc
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


class Sample:
    """One fresh run of a command."""

    def __init__(self, argv: Sequence[str], env: dict[str, str],
                 proxy: CountingProxy) -> None:
        before = proxy.count
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        self.wall = time.perf_counter() - start
        # CPU time is far less sensitive than wall time to other load.
        self.cpu = usage.ru_utime + usage.ru_stime
        self.rss_kib = usage.ru_maxrss
        self.code = os.waitstatus_to_exitcode(status)
        self.requests = proxy.count - before


def _shown_path(executable: str) -> str:
    """An executable relative to the checkout, or (outside it, like the
    peers' virtualenvs) from its virtualenv's directory on: the results
    are committed, and a machine's own paths mean nothing elsewhere."""
    path = os.path.relpath(executable, REPO)
    if path.startswith(os.pardir):
        path = os.path.join(*executable.split(os.sep)[-3:])
    return path


class Series:
    """Samples of one command line."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str]
                 ) -> None:
        self.name, self.argv, self.env = name, list(argv), env
        self.samples: list[Sample] = []

    def run(self, proxy: CountingProxy) -> None:
        self.samples.append(Sample(self.argv, self.env, proxy))

    def report(self) -> dict[str, Any]:
        samples = self.samples
        return {
            "name": self.name,
            # Executables relative to the checkout: the results are
            # committed, and a machine's own paths mean nothing elsewhere.
            "argv": [_shown_path(self.argv[0]), *self.argv[1:]],
            "runs": len(samples),
            "median_s": statistics.median(s.wall for s in samples),
            "min_s": min(s.wall for s in samples),
            "median_cpu_s": statistics.median(s.cpu for s in samples),
            "peak_rss_mib": max(s.rss_kib for s in samples) / 1024,
            "http_requests": statistics.median(s.requests for s in samples),
            "exit_codes": sorted({s.code for s in samples}),
        }


#: The floor of a command line that lists allocations: the interpreter,
#: ``import requests`` and one GET of the list.
BARE = "python -c 'import requests; requests.get(list)'"


def paired_ratios(series: Sequence[Series], name: str
                  ) -> dict[str, dict[str, float]]:
    """Median, over the interleaved runs, of each run of ``name`` divided
    by the run of every other series made just before or after it (wall
    and CPU): a drifting machine affects both runs of a pair alike."""
    mine = next(item for item in series if item.name == name)
    ratios = {}
    for other in series:
        if other is mine:
            continue
        pairs = list(zip(mine.samples, other.samples, strict=True))
        ratios[other.name] = {
            "wall": statistics.median(a.wall / b.wall for a, b in pairs),
            "cpu": statistics.median(a.cpu / b.cpu for a, b in pairs),
        }
    return ratios


def measure(series: Sequence[Series], runs: int, proxy: CountingProxy
            ) -> list[dict[str, Any]]:
    """Run the series interleaved (one warm-up each), so drifting machine
    load affects all of them alike."""
    for item in series:
        Sample(item.argv, item.env, proxy)  # warm caches
    for _ in range(runs):
        for item in series:
            item.run(proxy)
    return [item.report() for item in series]


PLUGIN_WORK = """\
import argparse, importlib, time
import openstackclient.shell  # OSC and every other plugin, warm
start = time.process_time()
plugin = importlib.import_module("baremetal_allocclient.osc.plugin")
plugin.check_api_version("latest")
plugin.build_option_parser(argparse.ArgumentParser())
commands = importlib.import_module("baremetal_allocclient.osc.v1.allocation")
for name in ("CreateAllocation", "ListAllocations", "ShowAllocation",
             "DeleteAllocation", "SetAllocation", "UnsetAllocation"):
    getattr(commands, name)
print((time.process_time() - start) * 1000)
"""


def plugin_work_ms(env: dict[str, str]) -> float:
    """What loading this plugin costs inside an ``openstack`` process.

    Run with this distribution hidden, after OpenStackClient and every other
    plugin are imported: the time to import the plugin module, run its
    hooks and import the command module, as OpenStackClient and stevedore
    do on every run. It is CPU time of this one process, so unlike
    wall-clock differences between two sets of runs it barely moves with
    machine load.
    """
    proc = subprocess.run([sys.executable, "-c", PLUGIN_WORK],
                          capture_output=True, text=True, env=env,
                          check=True)
    return float(proc.stdout.strip())


def requests_per_verb(endpoint: str, proxy: CountingProxy,
                      env: dict[str, str]) -> dict[str, int]:
    """HTTP requests each simple ``baremetal-alloc`` command makes."""
    cli = [os.path.join(BIN, "baremetal-alloc"), "--os-endpoint", endpoint]
    name = f"bench-{os.getpid()}"
    steps = [
        ("create", ["create", "--resource-class", "bench-none", "--name",
                    name]),
        ("get", ["get", name]),
        ("show", ["show", name]),
        ("list", ["list"]),
        ("set", ["set", name, "--extra", "k=v"]),
        ("unset", ["unset", name, "--extra", "k"]),
        ("delete", ["delete", name]),
        # One waited-on allocation: the answer of the create is held until
        # it settled (Prefer: wait), so no polls follow.
        ("create --wait", ["create", "--resource-class", "bench", "--name",
                           name, "--wait", "30"]),
        ("delete", ["delete", name]),
    ]
    counts = {}
    for verb, args in steps:
        sample = Sample([*cli, *args], env, proxy)
        if sample.code != 0:
            raise RuntimeError(f"baremetal-alloc {verb} failed")
        counts[verb] = sample.requests
    return counts


#: ``baremetal-alloc list`` with ``OS_CLOUD`` (cached after the warm-up).
CLOUD = "baremetal-alloc list (OS_CLOUD)"


def cloud_env(folder: str, endpoint: str,
              env: dict[str, str]) -> dict[str, str]:
    """``env`` with ``OS_CLOUD`` naming a one-entry clouds.yaml (no
    authentication, as a bifrost install without Keystone) written in
    ``folder``, and the cache of resolved clouds there too."""
    path = os.path.join(folder, "clouds.yaml")
    with open(path, "w", encoding="utf-8") as stream:
        stream.write("clouds:\n  bench:\n    auth_type: none\n"
                     f"    auth:\n      endpoint: {endpoint}\n")
    return {**env, "OS_CLOUD": "bench", "OS_CLIENT_CONFIG_FILE": path,
            "XDG_CACHE_HOME": os.path.join(folder, "cache")}


def base_env(extra_path: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    if extra_path:
        env["PYTHONPATH"] = extra_path
    return env


def seed_allocations(endpoint: str, count: int) -> None:
    for _ in range(count):
        subprocess.run(
            [os.path.join(BIN, "baremetal-alloc"), "--os-endpoint",
             endpoint, "create", "--resource-class", "bench", "--wait",
             "30"], check=True, capture_output=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--ironic-venv",
                        default=os.path.join(REPO, ".venv-ironic"))
    parser.add_argument(
        "--cli-venv", default=os.path.dirname(BIN),
        help="the virtualenv whose baremetal-alloc (and python, for the "
        "bare GET) is timed, this one when not given; e.g. one with only "
        "this package installed")
    rawruns.add_option(parser, "cli-startup", "--json")
    args = parser.parse_args(argv)

    # An installed package has byte-code; a development tree run with
    # PYTHONDONTWRITEBYTECODE would otherwise recompile every module on
    # every run and measure the compiler.
    compileall.compile_dir(os.path.join(REPO, "baremetal_allocclient"),
                           quiet=1)
    server = ReferenceServer(args.nodes)
    proxy = CountingProxy(server.port)
    hooks = tempfile.mkdtemp(prefix="bm-alloc-bench-hooks-")
    results: list[dict[str, Any]] = []
    try:
        seed_allocations(server.endpoint, min(3, args.nodes))
        endpoint = f"http://127.0.0.1:{proxy.port}"
        env = base_env()
        noauth = ["--os-auth-type", "none", "--os-endpoint", endpoint]
        bare = ("import requests; requests.get("
                f"{endpoint + '/v1/allocations'!r}, headers="
                "{'X-OpenStack-Ironic-API-Version': 'latest'}, timeout=30"
                ").raise_for_status()")
        cli_bin = os.path.join(args.cli_venv, "bin")
        cloud = cloud_env(hooks, endpoint, env)
        series = [
            Series(BARE, [os.path.join(cli_bin, "python"), "-c", bare], env),
            Series("baremetal-alloc list",
                   [os.path.join(cli_bin, "baremetal-alloc"), "--os-endpoint",
                    endpoint, "list"], env),
            Series(CLOUD, [os.path.join(cli_bin, "baremetal-alloc"), "list"],
                   cloud),
            Series(CLOUD + ", not cached",
                   [os.path.join(cli_bin, "baremetal-alloc"), "list"],
                   {**cloud, "BAREMETAL_ALLOC_CLOUD_CACHE": "0"}),
            Series("openstack baremetal allocation list (this plugin)",
                   [os.path.join(BIN, "openstack"), *noauth, "baremetal",
                    "allocation", "list"], env),
        ]
        ironic_bin = os.path.join(args.ironic_venv, "bin")
        if os.path.exists(os.path.join(ironic_bin, "baremetal")):
            series.append(Series(
                "baremetal allocation list (python-ironicclient)",
                [os.path.join(ironic_bin, "baremetal"), *noauth,
                 "allocation", "list"], env))
        if os.path.exists(os.path.join(ironic_bin, "openstack")):
            series.append(Series(
                "openstack baremetal allocation list (python-ironicclient)",
                [os.path.join(ironic_bin, "openstack"), *noauth,
                 "baremetal", "allocation", "list"], env))
        results.extend(measure(series, args.runs, proxy))
        ratios = paired_ratios(series, "baremetal-alloc list")
        cloud_ratios = paired_ratios(series, CLOUD)
        per_verb = requests_per_verb(endpoint, proxy, env)

        # Plugin overhead on an unrelated command, same interpreter and path.
        with_dir = os.path.join(hooks, "with")
        without_dir = os.path.join(hooks, "without")
        for path, text in ((with_dir, ""), (without_dir, HIDE_PLUGIN)):
            os.makedirs(path)
            with open(os.path.join(path, "sitecustomize.py"), "w") as f:
                f.write(text)
        unrelated = [os.path.join(BIN, "openstack"), "help", "baremetal",
                     "node", "list"]
        pairs = measure([
            Series(f"openstack help baremetal node list ({label} this "
                   "plugin)", unrelated, base_env(path))
            for label, path in (("with", with_dir), ("without", without_dir))
        ], args.runs * 2, proxy)
        results.extend(pairs)
        work = [plugin_work_ms(base_env(without_dir))
                for _ in range(args.runs)]
        overhead = {
            "in_process_ms": statistics.median(work),
            "wall_ms": (pairs[0]["median_s"] - pairs[1]["median_s"]) * 1000,
            "cpu_ms": (pairs[0]["median_cpu_s"] - pairs[1]["median_cpu_s"])
            * 1000,
        }
    finally:
        proxy.stop()
        server.stop()
        shutil.rmtree(hooks, ignore_errors=True)

    print(f"{'command':<62} {'median s':>9} {'min s':>7} {'CPU s':>6} "
          f"{'RSS MiB':>8} {'HTTP':>5}")
    for item in results:
        print(f"{item['name']:<62} {item['median_s']:>9.3f} "
              f"{item['min_s']:>7.3f} {item['median_cpu_s']:>6.3f} "
              f"{item['peak_rss_mib']:>8.1f} {item['http_requests']:>5g}")
    for other, ratio in ratios.items():
        print(f"baremetal-alloc list / {other}: {ratio['wall']:.2f}x wall, "
              f"{ratio['cpu']:.2f}x CPU (median of paired runs)")
    for other in (BARE, "baremetal-alloc list", CLOUD + ", not cached"):
        ratio = cloud_ratios[other]
        print(f"{CLOUD} / {other}: {ratio['wall']:.2f}x wall, "
              f"{ratio['cpu']:.2f}x CPU (median of paired runs)")
    print("HTTP requests per baremetal-alloc command: " + ", ".join(
        f"{verb} {count}" for verb, count in per_verb.items()))
    print("plugin overhead on an unrelated openstack command: "
          f"{overhead['in_process_ms']:.1f} ms in process (median); "
          f"difference of medians with/without: {overhead['wall_ms']:+.1f} "
          f"ms wall, {overhead['cpu_ms']:+.1f} ms CPU")
    report = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "results": results,
        "plugin_overhead_ms": overhead,
        "baremetal_alloc_list_paired_ratios": ratios,
        "os_cloud_paired_ratios": cloud_ratios,
        "cli_venv": args.cli_venv,
        "requests_per_verb": per_verb,
    }
    if args.output:
        rawruns.write_json(args.output, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
