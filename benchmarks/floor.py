"""Server CPU per request against its floor: bare HTTP plus bare SQL.

A benchmark, not a test.  For each database (``--db sqlite postgresql``),
in one run:

* **the server**: ``baremetal-alloc-server serve`` on a fresh fleet of
  ``--allocations`` + a warm-up's nodes (enrolled with ``enroll``), driven
  by one sequential ``requests`` client: ``--allocations`` creates with
  ``Prefer: wait`` (each must answer ``active``), ``--gets`` ``GET`` of one
  allocation (a poll) and ``--lists`` lists of ``--list-size``
  allocations.  Its figure is the CPU time (user + system) the server
  process used during each phase, divided by the requests of the phase;
* **the HTTP floor**: the same ``serve`` command whose WSGI application
  is replaced by a hello world answering a body of the same size as the
  server's answer (:mod:`benchmarks.hello_serve`), so the same front end
  with the same settings, measured the same way with the same client and
  the same requests;
* **the SQL floor**: the statements each request needs, run with the
  database's own driver on a copy of the server's database as enrolled
  (:mod:`benchmarks.floor_sql`), CPU time per operation in this process;
* **the served floor**: both floors in one server, measured as the
  server is: the hello world of the HTTP floor doing each request's SQL
  floor work (on a third copy of the database) in its request thread
  before it answers (:mod:`benchmarks.hello_serve` with
  ``BENCH_HELLO_SQL``).  The SQL floor alone runs its statements back to
  back in one thread, caches warm; one request at a time, through the
  front end, the same statements cost more, as the server's own do.

* **the database's backends** (PostgreSQL): the CPU the backends
  connected to the server's database, to the SQL floor's and to the
  served floor's used during each of their rounds.  On SQLite the
  database's work is done in the process that asks, and counted there;
  on PostgreSQL the figures above leave it out, so a server that asked
  the database to do more of its work would look cheaper than it is:
  the second ratio, (server + its backends) / (HTTP + SQL + its
  backend), counts it on both sides.  PostgreSQL's statistics are
  brought up to date after enrolling and after the creates (as
  autovacuum would, at a time of its own, in the middle of a round).

* **the SDK's iterator**: with the server still up, the client's CPU
  walking every allocation in pages of ``--list-size`` through
  ``Client.list_allocations`` against bare ``requests`` GETs plus
  ``.json()`` of the same pages, alternated ``--walks`` times.

The four are measured in alternating rounds (``--rounds``, 5 by
default): the creates are split into rounds, and each round is sent to
the server, then to the HTTP floor, then run as the SQL floor, then
sent to the served floor; then the polls, then the lists, the same way.
A change of the machine's load during the run (it is shared) then
weighs on all four alike.  The table gives, per request, the medians
over the rounds of the server's CPU and of the floors, the median of
each round's ratio server / (HTTP + SQL) and that of server / served
floor; every round's figures are in the JSON.  The load average
is printed at the start and end.  The HTTP and served floors are
started once with the size of a create's answer, and again, for the
polls and lists, once the server's list of ``--list-size`` is known.
:mod:`benchmarks.floor_profile` profiles the server during creates and
during polls.

Usage (from the repository root)::

    .venv/bin/python -m benchmarks.floor            # both databases, ~1 min
    .venv/bin/python -m benchmarks.floor --db sqlite --allocations 300

PostgreSQL comes from ``BAREMETAL_ALLOC_TEST_POSTGRESQL_URL`` (an
administrative URL; see :mod:`benchmarks.reference`).  The run's JSON
goes to a new file in ``benchmarks/results/`` (not committed; ``--output``,
see :mod:`benchmarks.rawruns`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import requests

from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.v1 import Client as SdkClient
from benchmarks import floor_sql, hello_serve, load, rawruns, reference

HERE = os.path.dirname(os.path.abspath(__file__))
RC = "bench"
WARMUP = 20  # requests of each kind before measuring (imports, caches)
SETTLE = 0.1  # seconds for the server to finish the last answer
PREFER_WAIT = 10
KINDS = ("create", "get", "list")
LABELS = {"create": "create, Prefer: wait", "get": "GET one (a poll)",
          "list": "list of {size}"}


def log(message: str) -> None:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S")
    print(f"[{stamp}] {message}", file=sys.stderr, flush=True)


def _scheduler_ns(pid: int) -> int:
    """Nanoseconds the live threads of ``pid`` ran (0 without schedstat)."""
    total = 0
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(FileNotFoundError), \
                    open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                total += int(stat.read().split()[0])
    return total


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` used so far: the sum of
    its threads' ``schedstat`` (nanoseconds; a thread that ended is no
    longer counted, and the server's threads live as long as it does),
    or, without it, its ``utime`` + ``stime`` in clock ticks."""
    nanoseconds = _scheduler_ns(pid)
    if nanoseconds:
        return nanoseconds / 1e9
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Client:
    """One keep-alive ``requests`` session; the same for server and floor."""

    def __init__(self, endpoint: str, expect_active: bool) -> None:
        self.endpoint = endpoint
        self.expect_active = expect_active
        self.session = requests.Session()
        self.session.headers.update(load.HEADERS)
        self.sizes: dict[str, int] = {}

    def _check(self, kind: str, response: requests.Response,
               status: int) -> requests.Response:
        if response.status_code != status:
            raise RuntimeError(f"{kind}: HTTP {response.status_code}: "
                               f"{response.text[:500]}")
        self.sizes[kind] = len(response.content)
        return response

    def create(self) -> str:
        """POST an allocation with ``Prefer: wait``; its UUID."""
        response = self._check("create", self.session.post(
            self.endpoint + "/v1/allocations", json={"resource_class": RC},
            headers={"Prefer": f"wait={PREFER_WAIT}"}, timeout=60), 201)
        if not self.expect_active:
            return ""
        body = response.json()
        if body["state"] != "active":
            raise RuntimeError(f"create: {body['state']}: "
                               f"{body.get('last_error')}")
        return str(body["uuid"])

    def get(self, allocation_uuid: str) -> None:
        self._check("get", self.session.get(
            f"{self.endpoint}/v1/allocations/{allocation_uuid}",
            timeout=60), 200)

    def list(self, limit: int) -> None:
        self._check("list", self.session.get(
            f"{self.endpoint}/v1/allocations?limit={limit}", timeout=60), 200)


def per_request_ms(pid: int, count: int, send: Callable[[int], object]
                   ) -> float:
    """CPU ms process ``pid`` used per call of ``send(i)``, ``count`` calls."""
    before = cpu_seconds(pid)
    for index in range(count):
        send(index)
    time.sleep(SETTLE)
    return (cpu_seconds(pid) - before) * 1000.0 / count


def warm_up(client: Client, args: argparse.Namespace) -> list[str]:
    """Creates, a poll and a list before measuring (imports, caches);
    the UUIDs created (empty strings for the hello world)."""
    made = [client.create() for _ in range(WARMUP)]
    client.get(made[0])
    client.list(args.list_size)
    return made


def hello_command(db: str, name: str, wrapper: Sequence[str] = (),
                  extra: Sequence[str] = ()) -> Callable[[int], list[str]]:
    script = os.path.join(HERE, "hello_serve.py")

    def command(port: int) -> list[str]:
        return [*wrapper, sys.executable, script, "--log-level", "WARNING",
                "serve", "--host", "127.0.0.1", "--port", str(port), "--db",
                db, "--conductor-name", name, *extra]

    return command


@contextlib.contextmanager
def hello_world(db: str, sizes: dict[str, int], args: argparse.Namespace,
                sql: str | None = None, wrapper: Sequence[str] = (),
                extra: Sequence[str] = ()) -> Iterator[tuple[int, Client]]:
    """The HTTP floor answering bodies of ``sizes``, warmed up: its PID
    and a client.  With ``sql`` (a database URL), the served floor: each
    request does its SQL floor work on that database first.  ``wrapper``
    and ``extra`` (options of ``serve``): as for
    :func:`benchmarks.reference.start`."""
    os.environ[hello_serve.SIZES_ENV] = ",".join(
        f"{kind}={size}" for kind, size in sizes.items())
    name = "hello" if sql is None else "served-floor"
    if sql is None:
        os.environ.pop(hello_serve.SQL_ENV, None)
    else:
        os.environ[hello_serve.SQL_ENV] = sql
        os.environ[hello_serve.RC_ENV] = RC
    target = targets.serve_process(
        name, tempfile.mkdtemp(prefix=f"bench-{name}-"),
        hello_command(db, name, wrapper, extra), lambda: "")
    try:
        client = Client(target.endpoint, expect_active=False)
        warm_up(client, args)
        yield target.pid, client
    finally:
        target.stop()


def shares(total: int, rounds: int) -> list[int]:
    """``total`` requests split over ``rounds`` (none empty)."""
    rounds = max(1, min(rounds, total))
    return [total // rounds + (1 if r < total % rounds else 0)
            for r in range(rounds)]


#: What is measured in each round: the server, the HTTP floor, the SQL
#: floor (in this process) and the served floor (both floors' work in
#: one hello world).
PARTS = ("server", "http", "sql", "served")


class DatabaseCpu:
    """CPU seconds used so far by the PostgreSQL backends connected to
    the database of ``url`` (read from ``pg_stat_activity`` through a
    connection of its own to another database, and from their
    ``schedstat``).  On SQLite there is none: its work is done in the
    process that asks, and counted there."""

    def __init__(self, url: str) -> None:
        self.name = url.rpartition("/")[2]
        import psycopg

        admin = (os.environ.get(reference.PG_URL_ENV)
                 or reference.DEFAULT_PG_ADMIN_URL)
        admin = admin.replace("postgresql+psycopg://", "postgresql://")
        self.conn = psycopg.connect(admin, autocommit=True)

    def seconds(self) -> float:
        rows = self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s",
            (self.name,)).fetchall()
        return sum(_scheduler_ns(pid) for (pid,) in rows) / 1e9

    def close(self) -> None:
        self.conn.close()


@contextlib.contextmanager
def database_cpu(kind: str, urls: tuple[str, ...]
                 ) -> Iterator[tuple[DatabaseCpu | None, ...]]:
    """A :class:`DatabaseCpu` for each of ``urls`` on PostgreSQL; Nones
    on SQLite."""
    if kind != "postgresql":
        yield tuple(None for _ in urls)
        return
    readers = tuple(DatabaseCpu(url) for url in urls)
    try:
        yield readers
    finally:
        for reader in readers:
            reader.close()


class Rounds:
    """Per-request CPU ms of the server and of its floors, measured in
    alternating rounds of one kind of request, so that the machine's
    load drifting during a run weighs on all of them alike."""

    def __init__(self, databases: dict[str, DatabaseCpu | None]) -> None:
        self.databases = databases
        self.samples: dict[str, dict[str, list[float]]] = {
            name: {kind: [] for kind in KINDS}
            for part in PARTS for name in (part, part + "_db")}

    def run(self, kind: str, total: int, rounds: int,
            measures: dict[str, Callable[[int], float]]) -> None:
        """``total`` requests of ``kind`` in ``rounds``; each of
        ``measures`` (one per part) sends its share and returns its CPU
        ms per request.  The CPU of the part's database backends in the
        same while (``databases``; 0 where there are none) goes in
        ``<part>_db``."""
        for count in shares(total, rounds):
            for part in PARTS:
                database = self.databases.get(part)
                before = database.seconds() if database else 0.0
                self.samples[part][kind].append(measures[part](count))
                used = database.seconds() - before if database else 0.0
                self.samples[part + "_db"][kind].append(
                    used * 1000.0 / count)

    def medians(self, part: str) -> dict[str, float]:
        return {kind: statistics.median(values)
                for kind, values in self.samples[part].items()}

    def ratios(self) -> dict[str, float]:
        """Per kind, the median over rounds of server / (HTTP + SQL)."""
        return {kind: statistics.median(values)
                for kind, values in self.round_ratios().items()}

    def ratio_ranges(self) -> dict[str, tuple[float, float]]:
        """Per kind, the lowest and the highest round's server / (HTTP +
        SQL): how far one round is from the median."""
        return {kind: (min(values), max(values))
                for kind, values in self.round_ratios().items()}

    def round_ratios(self) -> dict[str, list[float]]:
        """Per kind, each round's server / (HTTP + SQL)."""
        return self._each_round({kind: [
            http + sql for http, sql in zip(
                self.samples["http"][kind], self.samples["sql"][kind],
                strict=True)] for kind in KINDS})

    def served_ratios(self) -> dict[str, float]:
        """Per kind, the median over rounds of server / served floor."""
        return self._ratios_to(self.samples["served"])

    def ratios_with_databases(self) -> dict[str, float]:
        """Per kind, the median over rounds of (server + its database's
        backends) / (HTTP + SQL + the SQL floor's backend)."""
        def total(*parts: str) -> dict[str, list[float]]:
            return {kind: [sum(values) for values in zip(
                *(self.samples[part][kind] for part in parts),
                strict=True)] for kind in KINDS}
        return self._ratios_to(total("http", "sql", "sql_db"),
                               total("server", "server_db"))

    def _ratios_to(self, floors: dict[str, list[float]],
                   measured: dict[str, list[float]] | None = None
                   ) -> dict[str, float]:
        """Per kind, the median of each round's ``measured`` (the
        server's CPU) / ``floors``."""
        return {kind: statistics.median(values) for kind, values
                in self._each_round(floors, measured).items()}

    def _each_round(self, floors: dict[str, list[float]],
                    measured: dict[str, list[float]] | None = None
                    ) -> dict[str, list[float]]:
        """Per kind, each round's ``measured`` (the server's CPU) /
        ``floors``."""
        measured = measured or self.samples["server"]
        return {kind: [server / floor for server, floor in zip(
            measured[kind], floors[kind], strict=True)] for kind in KINDS}


def measure_rounds(db: tuple[str, str, str], args: argparse.Namespace,
                   server_pid: int, client: Client,
                   uuids: list[str]) -> tuple[Rounds, dict[str, int]]:
    """Creates, then polls, then lists, each in ``--rounds`` alternating
    rounds of the server (``server_pid``, ``client``) and its floors
    (``db``: the server's, the SQL floor's and the served floor's
    databases); the rounds and the sizes of the server's answers."""
    kind = "sqlite" if db[0].startswith("sqlite") else "postgresql"
    with database_cpu(kind, db) as readers:
        return _measure_rounds(
            db, args, server_pid, client, uuids,
            Rounds(dict(zip(("server", "sql", "served"), readers,
                            strict=True))))


def _measure_rounds(db: tuple[str, str, str], args: argparse.Namespace,
                    server_pid: int, client: Client, uuids: list[str],
                    rounds: Rounds) -> tuple[Rounds, dict[str, int]]:
    server_db, floor_db, served_db = db
    sql = floor_sql.Floor(floor_db, RC)
    try:
        floor_uuids = [str(uuidlib.uuid4())
                       for _ in range(args.allocations)]
        with floors(server_db, served_db, dict(client.sizes), args) as (
                hello, served):
            floor_made = iter(floor_uuids)
            rounds.run("create", args.allocations, args.rounds, {
                "server": lambda n: per_request_ms(
                    server_pid, n, lambda _i: uuids.append(client.create())),
                "http": lambda n: hello.per_request(
                    n, lambda c, _i: c.create()),
                "sql": lambda n: floor_sql.cpu_ms(
                    lambda _i: sql.create_one(next(floor_made)), n),
                "served": lambda n: served.per_request(
                    n, lambda c, _i: c.create())})
        client.list(args.list_size)  # the size of the full list
        sizes = dict(client.sizes)
        for url in db:  # the statistics of a thousand rows more
            reference.analyze(url)

        def polled(index: int) -> str:
            return uuids[index % len(uuids)]

        with floors(server_db, served_db, sizes, args) as (hello, served):
            rounds.run("get", args.gets, args.rounds, {
                "server": lambda n: per_request_ms(
                    server_pid, n, lambda i: client.get(polled(i))),
                "http": lambda n: hello.per_request(
                    n, lambda c, i: c.get(polled(i))),
                "sql": lambda n: floor_sql.cpu_ms(
                    lambda i: sql.get(floor_uuids[i % len(floor_uuids)]), n),
                "served": lambda n: served.per_request(
                    n, lambda c, i: c.get(polled(i)))})
            listed = args.list_size
            rounds.run("list", args.lists, args.rounds, {
                "server": lambda n: per_request_ms(
                    server_pid, n, lambda _i: client.list(listed)),
                "http": lambda n: hello.per_request(
                    n, lambda c, _i: c.list(listed)),
                "sql": lambda n: floor_sql.cpu_ms(
                    lambda _i: sql.list(listed), n),
                "served": lambda n: served.per_request(
                    n, lambda c, _i: c.list(listed))})
            for running in (hello, served):
                if running.client.sizes != sizes:
                    raise RuntimeError(f"{running.name} answered "
                                       f"{running.client.sizes}, not {sizes}")
        return rounds, sizes
    finally:
        sql.db.close()


class RunningFloor(NamedTuple):
    """A running floor (the hello world, or the served floor)."""

    name: str
    pid: int
    client: Client

    def per_request(self, count: int,
                    send: Callable[[Client, int], object]) -> float:
        """Its CPU ms per request of ``count`` calls of ``send``."""
        return per_request_ms(self.pid, count,
                              lambda i: send(self.client, i))


@contextlib.contextmanager
def floors(server_db: str, served_db: str, sizes: dict[str, int],
           args: argparse.Namespace
           ) -> Iterator[tuple[RunningFloor, RunningFloor]]:
    """The HTTP floor and the served floor (on ``served_db``) answering
    bodies of ``sizes``, both warmed up."""
    with hello_world(server_db, sizes, args) as (hello_pid, hello), \
            hello_world(server_db, sizes, args, served_db) as (
                served_pid, served):
        yield (RunningFloor("the HTTP floor", hello_pid, hello),
               RunningFloor("the served floor", served_pid, served))


def walks(endpoint: str, args: argparse.Namespace) -> dict[str, float]:
    """Client CPU (this thread's) per walk of every allocation in pages
    of ``--list-size``: through the SDK's iterator (typed resources), and
    with bare ``requests`` GETs plus ``.json()`` following ``next``; the
    two alternate, ``--walks`` times each, medians in ms."""
    sdk = SdkClient.from_endpoint(endpoint)
    bare = requests.Session()
    bare.headers.update(load.HEADERS)

    def through_sdk() -> int:
        return sum(1 for _ in sdk.list_allocations(page_size=args.list_size))

    def with_requests() -> int:
        url: str | None = f"{endpoint}/v1/allocations?limit={args.list_size}"
        count = 0
        while url:
            body = bare.get(url, timeout=60).json()
            count += len(body["allocations"])
            url = body.get("next")
        return count

    times: dict[str, list[float]] = {"sdk_walk": [], "bare_walk": []}
    counts = {through_sdk(), with_requests()}  # warm-up; the same count
    for _ in range(args.walks):
        for name, walk in (("sdk_walk", through_sdk),
                           ("bare_walk", with_requests)):
            start = time.thread_time()
            counts.add(walk())
            times[name].append((time.thread_time() - start) * 1000.0)
    if len(counts) != 1:
        raise RuntimeError(f"the walks listed {sorted(counts)} allocations")
    result = {name: statistics.median(values)
              for name, values in times.items()}
    result["allocations"] = float(counts.pop())
    return result


@contextlib.contextmanager
def databases(kind: str, workdir: str, nodes: int
              ) -> Iterator[tuple[str, str, str]]:
    """Three databases of ``kind`` made by the migrations with the same
    ``nodes`` enrolled (once, then copied): the server's, the SQL
    floor's and the served floor's."""
    if kind == "sqlite":
        server_db, floor_db, served_db = (
            f"sqlite:///{workdir}/{name}.sqlite"
            for name in ("server", "floor", "served"))
        enrolled(server_db, nodes, workdir)
        for copy in ("floor", "served"):
            for suffix in ("", "-wal"):  # the log, if not checkpointed
                with contextlib.suppress(FileNotFoundError):
                    shutil.copyfile(f"{workdir}/server.sqlite{suffix}",
                                    f"{workdir}/{copy}.sqlite{suffix}")
        yield server_db, floor_db, served_db
        return
    with reference.postgresql_database() as server_db:
        enrolled(server_db, nodes, workdir)
        with reference.postgresql_database(template=server_db) as floor_db, \
                reference.postgresql_database(template=server_db) as served_db:
            yield server_db, floor_db, served_db


def enrolled(db: str, nodes: int, workdir: str) -> None:
    """Migrate the empty database ``db`` and enroll ``nodes`` nodes."""
    log(f"{db.split(':', 1)[0]}: enrolling {nodes} nodes")
    reference.server("db", "upgrade", "--db", db)
    reference.enroll(db, nodes, RC, workdir)
    reference.analyze(db)


def measure_database(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """The server and its floors on one kind of database."""
    workdir = tempfile.mkdtemp(prefix="baremetal-alloc-floor-")
    # The served floor is warmed up twice (it is started again with the
    # size of a list), with creates.
    nodes = args.allocations + 2 * WARMUP
    try:
        with databases(kind, workdir, nodes) as dbs:
            load_start = os.getloadavg()
            log(f"{kind}: the server and its floors (HTTP, SQL, served), "
                f"in {args.rounds} alternating rounds of each request")
            target = reference.start(dbs[0])
            try:
                client = Client(target.endpoint, expect_active=True)
                uuids = warm_up(client, args)
                rounds, sizes = measure_rounds(
                    dbs, args, target.pid, client, uuids)
                log(f"{kind}: the SDK's iterator")
                walked = walks(target.endpoint, args)
            finally:
                target.stop()
            return {"server_cpu_ms": rounds.medians("server"),
                    "http_floor_ms": rounds.medians("http"),
                    "sql_floor_ms": rounds.medians("sql"),
                    "served_floor_ms": rounds.medians("served"),
                    "database_cpu_ms": {
                        part: rounds.medians(part + "_db")
                        for part in ("server", "sql", "served")},
                    "ratio": rounds.ratios(),
                    "ratio_range": rounds.ratio_ranges(),
                    "ratio_served": rounds.served_ratios(),
                    "ratio_with_databases": rounds.ratios_with_databases(),
                    "rounds": rounds.samples,
                    "body_bytes": sizes,
                    "client_cpu_ms": walked,
                    "load_average": [list(load_start),
                                     list(os.getloadavg())]}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def table(results: dict[str, dict[str, Any]], list_size: int) -> list[str]:
    """One row per database and request."""
    lines = [f"{'database':10}  {'request':22}  {'body B':>7}  "
             f"{'server CPU ms':>13}  {'floor HTTP ms':>13}  "
             f"{'floor SQL ms':>12}  {'ratio':>6}  "
             f"{'served floor ms':>15}  {'ratio':>6}"]
    for kind, result in results.items():
        for request in KINDS:
            server = result["server_cpu_ms"][request]
            http = result["http_floor_ms"][request]
            sql = result["sql_floor_ms"][request]
            served = result["served_floor_ms"][request]
            label = LABELS[request].format(size=f"{list_size:,}")
            lines.append(
                f"{kind:10}  {label:22}  {result['body_bytes'][request]:>7}  "
                f"{server:>13.2f}  {http:>13.2f}  {sql:>12.2f}  "
                f"{result['ratio'][request]:>5.1f}x  {served:>15.2f}  "
                f"{result['ratio_served'][request]:>5.1f}x")
    for kind, result in results.items():
        ranges = ", ".join(
            f"{LABELS[request].format(size=f'{list_size:,}')} "
            f"{low:.2f}-{high:.2f}x"
            for request, (low, high) in result["ratio_range"].items())
        lines.append(f"{kind}: the ratio to HTTP + SQL, lowest and highest "
                     f"round: {ranges}")
    for kind, result in results.items():
        if kind != "postgresql":
            continue  # SQLite's work is in the process that asks
        used = result["database_cpu_ms"]
        for request in KINDS:
            label = LABELS[request].format(size=f"{list_size:,}")
            lines.append(
                f"{kind}: {label}: the database's backends "
                f"{used['server'][request]:.2f} ms for the server, "
                f"{used['sql'][request]:.2f} ms for the SQL floor; "
                f"(server + its backends) / (HTTP + SQL + its backend) "
                f"{result['ratio_with_databases'][request]:.1f}x")
    for kind, result in results.items():
        walked = result["client_cpu_ms"]
        lines.append(
            f"{kind}: the SDK's iterator over {walked['allocations']:.0f} "
            f"allocations in pages of {list_size:,}: "
            f"{walked['sdk_walk']:.1f} ms client CPU, bare requests "
            f"{walked['bare_walk']:.1f} ms: "
            f"{walked['sdk_walk'] / walked['bare_walk']:.2f}x")
    return lines


DATABASES = ("sqlite", "postgresql")


def add_database_option(parser: argparse.ArgumentParser) -> None:
    """``--db``: the kinds of database to measure on (both by default)."""
    parser.add_argument("--db", nargs="+", default=list(DATABASES),
                        choices=DATABASES)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_database_option(parser)
    parser.add_argument("--allocations", type=int, default=1000,
                        help=f"creates measured (as many nodes, plus "
                        f"{2 * WARMUP})")
    parser.add_argument("--gets", type=int, default=500)
    parser.add_argument("--lists", type=int, default=20)
    parser.add_argument("--list-size", type=int, default=1000,
                        help="at most the allocations made (with the "
                        "warm-up's)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="alternating rounds of the server and the "
                        "floors per kind of request (the figures are "
                        "their medians)")
    parser.add_argument("--walks", type=int, default=10,
                        help="walks of every allocation through the SDK "
                        "and with bare requests, alternating")
    rawruns.add_option(parser, "floor")
    args = parser.parse_args(argv)
    args.list_size = min(args.list_size, args.allocations + WARMUP)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()
    results = {kind: measure_database(kind, args) for kind in args.db}
    for line in table(results, args.list_size):
        print(line)
    finish(args, started, load_start, results)
    return 0


def finish(args: argparse.Namespace, started: datetime.datetime,
           load_start: tuple[float, float, float],
           results: dict[str, Any]) -> None:
    """Print the load average at the start and now; write the results,
    with the arguments but ``--output``, to ``--output``."""
    print("load average (1, 5, 15 min): start "
          + " ".join(f"{x:.2f}" for x in load_start) + ", end "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    run: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"),
        "arguments": {name: value for name, value in vars(args).items()
                      if name != "output"},
        "results": results}
    rawruns.write_json(args.output, run)


if __name__ == "__main__":
    sys.exit(main())
