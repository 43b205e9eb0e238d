"""A MariaDB Galera cluster of the test's own on loopback.

Three ``mariadbd`` with the galera-4 provider, each on its own free
loopback ports and data directory under a temporary directory.  The data
directories are copies of one freshly installed one, so the joiners skip
the state snapshot transfer (``wsrep_sst_method=skip``) and the cluster
is up in seconds; the first node bootstraps (``--wsrep-new-cluster``),
the others join one at a time.  Short group-communication timeouts let a
killed or isolated node be noticed within a few seconds.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import uuid
from typing import Any

import pymysql

from baremetal_allocclient.tests.fixtures.processes import free_port

MARIADBD = shutil.which("mariadbd", path="/usr/sbin:/usr/bin:"
                        + os.environ.get("PATH", "")) or "/usr/sbin/mariadbd"
INSTALL_DB = (shutil.which("mariadb-install-db")
              or "/usr/bin/mariadb-install-db")
PROVIDER = "/usr/lib/galera/libgalera_smm.so"
#: The conflict counters the tests report.
COUNTERS = ("wsrep_local_cert_failures", "wsrep_local_bf_aborts")
#: Suspect a silent peer after 2 s, drop it after 4 s.
_EVS = ("evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;"
        "evs.suspect_timeout=PT2S;evs.inactive_timeout=PT4S;"
        "evs.install_timeout=PT4S")


def skip_unless_available() -> None:
    """SkipTest naming what is missing."""
    for path, what in ((MARIADBD, "mariadbd"),
                       (INSTALL_DB, "mariadb-install-db"),
                       (PROVIDER, "the galera-4 provider")):
        if not os.path.exists(path):
            raise unittest.SkipTest(
                f"{what} is not installed ({path}); install mariadb-server "
                f"and galera-4 to run the Galera tests")


class Node:
    """One ``mariadbd`` of the cluster."""

    def __init__(self, index: int, root: str) -> None:
        self.index = index
        self.datadir = os.path.join(root, f"node{index}")
        self.port = free_port()
        self.gcomm_port = free_port()
        self.ist_port = free_port()
        self.log_path = os.path.join(root, f"node{index}.err")
        self.proc: subprocess.Popen[bytes] | None = None
        self.galera = True

    def command(self, peers: str | None, bootstrap: bool) -> list[str]:
        """The ``mariadbd`` command line; without ``peers``, a plain
        MariaDB server (no Galera), for comparison."""
        options = (f"base_port={self.gcomm_port};gcache.size=32M;"
                   f"ist.recv_addr=127.0.0.1:{self.ist_port};{_EVS}")
        command = [
            MARIADBD, "--no-defaults", "--user=root",
            f"--datadir={self.datadir}",
            f"--socket={self.datadir}.sock", f"--port={self.port}",
            "--bind-address=127.0.0.1", f"--log-error={self.log_path}",
            f"--pid-file={self.datadir}.pid",
            "--skip-log-bin", "--binlog-format=ROW",
            "--innodb-autoinc-lock-mode=2",
            "--innodb-buffer-pool-size=64M",
            "--innodb-flush-log-at-trx-commit=0", "--max-connections=300",
            "--character-set-server=utf8mb4",
        ]
        if peers is None:
            return command
        command += [
            "--wsrep-on=ON", f"--wsrep-provider={PROVIDER}",
            f"--wsrep-cluster-address=gcomm://{peers}",
            f"--wsrep-node-address=127.0.0.1:{self.gcomm_port}",
            f"--wsrep-node-name=node{self.index}",
            f"--wsrep-provider-options={options}",
            "--wsrep-sst-method=skip", "--wsrep-slave-threads=2",
        ]
        if bootstrap:
            command.append("--wsrep-new-cluster")
        return command

    def url(self, database: str) -> str:
        """The SQLAlchemy URL of ``database`` through this node."""
        return (f"mysql+pymysql://root@127.0.0.1:{self.port}/{database}"
                f"?charset=utf8mb4")

    def connect(self, database: str | None = None) -> Any:
        """A pymysql connection to this node (autocommit)."""
        return pymysql.connect(host="127.0.0.1", port=self.port, user="root",
                               database=database, autocommit=True,
                               connect_timeout=5, read_timeout=30)

    def status(self, name: str) -> str | None:
        """One ``SHOW GLOBAL STATUS`` value; None when unreachable."""
        try:
            conn = self.connect()
        except pymysql.err.Error:
            return None
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
                row = cur.fetchone()
        except pymysql.err.Error:
            return None
        finally:
            conn.close()
        return None if row is None else str(row[1])

    def wait_synced(self, timeout: float = 60) -> None:
        """Until the node is Synced and ready."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"node{self.index} exited: "
                                   f"{self.log_tail()}")
            ready = self.status("wsrep_ready")
            if ready == "ON" and self.status(
                    "wsrep_local_state_comment") == "Synced":
                return
            if not self.galera and self.status("Uptime") is not None:
                return  # a plain MariaDB server: up is ready
            time.sleep(0.2)
        raise RuntimeError(f"node{self.index} not Synced after {timeout} s: "
                           f"{self.log_tail()}")

    def log_tail(self) -> str:
        """The end of the node's error log."""
        try:
            with open(self.log_path, encoding="utf-8",
                      errors="replace") as stream:
                return stream.read()[-2000:]
        except OSError:
            return ""


class GaleraCluster:
    """Start with :meth:`start`; :meth:`stop` ends every process."""

    def __init__(self, size: int = 3, galera: bool = True) -> None:
        skip_unless_available()
        self.root = tempfile.mkdtemp(prefix="bm-alloc-galera-")
        self.nodes = [Node(i, self.root) for i in range(size)]
        #: False: one plain MariaDB server (``size`` 1), for comparison.
        self.galera = galera
        for node in self.nodes:
            node.galera = galera
        self.database = "test_" + uuid.uuid4().hex[:12]

    @property
    def peers(self) -> str | None:
        if not self.galera:
            return None
        return ",".join(f"127.0.0.1:{n.gcomm_port}" for n in self.nodes)

    def start(self) -> None:
        """Install one data directory, copy it, start node 0 as the new
        cluster and the others one at a time; create the database."""
        template = os.path.join(self.root, "template")
        subprocess.run(
            [INSTALL_DB, "--no-defaults", f"--datadir={template}",
             "--user=root", "--auth-root-authentication-method=normal",
             "--skip-test-db"],
            check=True, capture_output=True, timeout=120)
        for node in self.nodes:
            shutil.copytree(template, node.datadir, symlinks=True)
        for node in self.nodes:
            self.start_node(node, bootstrap=node.index == 0)
        with self.nodes[0].connect() as conn, conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE {self.database} "
                        f"CHARACTER SET utf8mb4")

    def start_node(self, node: Node, bootstrap: bool = False) -> None:
        """Start one node and wait until it is Synced.  A joiner is given
        the cluster's current state (its data is a copy of the same
        installation, and nothing was written since), so it joins
        without any state transfer."""
        if not bootstrap and self.galera:
            self._write_state(node)
        with open(node.log_path, "ab") as log:
            node.proc = subprocess.Popen(
                node.command(self.peers, bootstrap), stdout=log,
                stderr=subprocess.STDOUT)
        node.wait_synced()

    def _write_state(self, node: Node) -> None:
        donor = self.nodes[0]
        with donor.connect() as conn, conn.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN "
                        "('wsrep_cluster_state_uuid', "
                        "'wsrep_last_committed')")
            state = {str(k): str(v) for k, v in cur.fetchall()}
        with open(os.path.join(node.datadir, "grastate.dat"), "w",
                  encoding="ascii") as stream:
            stream.write(
                "# GALERA saved state\nversion: 2.1\n"
                f"uuid:    {state['wsrep_cluster_state_uuid']}\n"
                f"seqno:   {state['wsrep_last_committed']}\n"
                "safe_to_bootstrap: 0\n")

    def kill(self, node: Node) -> None:
        """SIGKILL, no goodbye to the others."""
        if node.proc is not None and node.proc.poll() is None:
            node.proc.send_signal(signal.SIGKILL)
            node.proc.wait(timeout=30)

    def isolate(self, node: Node, isolated: bool) -> None:
        """Cut the node off the group (it leaves the Primary component
        and answers 1047), or let it back."""
        value = 1 if isolated else 0
        with node.connect() as conn, conn.cursor() as cur:
            cur.execute("SET GLOBAL wsrep_provider_options = "
                        f"'gmcast.isolate={value}'")

    def counters(self) -> dict[int, dict[str, int]]:
        """Certification failures and brute-force aborts of each
        reachable node (by index)."""
        found: dict[int, dict[str, int]] = {}
        for node in self.nodes:
            values = {name: node.status(name) for name in COUNTERS}
            if all(v is not None for v in values.values()):
                found[node.index] = {k: int(str(v))
                                     for k, v in values.items()}
        return found

    def stop(self) -> None:
        """End every node this object started and remove the files."""
        for node in self.nodes:
            if node.proc is None or node.proc.poll() is not None:
                continue
            node.proc.terminate()
        for node in self.nodes:
            if node.proc is None:
                continue
            try:
                node.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                node.proc.kill()
                node.proc.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)
