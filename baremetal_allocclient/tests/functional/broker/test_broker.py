"""The broker in front of a real Ironic 39 (fake-hardware): Ironic
decides every reservation, the server and Ironic agree, and an Ironic
that goes away costs 503s, never a node given twice.

Each class starts its own Ironic behind its own server, so one class
stopping Ironic touches no other test.
"""

from __future__ import annotations

import concurrent.futures
import os
import secrets
import threading
import time
import uuid
from typing import Any, ClassVar

import fixtures
import requests
import testtools

from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.sdk.test_openstacksdk_functional import (  # noqa: E501
    run_and_check,
)

_MARKER = "baremetal_alloc:broker"


class _BrokerCase(testtools.TestCase):
    """A broker and its Ironic for the class; ``ironic`` talks to that
    Ironic directly, as a client that ignores the server would."""

    broker: ClassVar[targets.Target]
    ironic: ClassVar[targets.Target]
    #: Whether the class stops Ironic: it then gets a broker of its own,
    #: the others share the test process's (the contract suite's).
    own_broker: ClassVar[bool] = False

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        if cls.own_broker:
            if os.environ.get(targets.IRONIC_SWITCH_ENV, "1") == "0":
                raise cls.skipException("real Ironic skipped")
            cls.broker = targets.start_broker(
                "--ironic-sync-interval", str(targets.BROKER_SYNC_INTERVAL))
        else:
            cls.broker = targets.broker_target()
        peer = cls.broker._peer
        assert peer is not None
        cls.ironic = targets.Target("ironic", peer.endpoint,
                                    targets.ensure_ironic_venv)

    @classmethod
    def tearDownClass(cls) -> None:
        if cls.own_broker:
            cls.broker.stop()
        super().tearDownClass()

    def setUp(self) -> None:
        super().setUp()
        self.addOnException(lambda _exc: self.addDetail(
            "broker log", testtools.content.text_content(
                self.broker.log_tail(20000))))

    def enroll(self, count: int) -> tuple[str, list[dict[str, Any]]]:
        """``count`` available nodes of a new class, enrolled through the
        server (its passthrough)."""
        rc = targets.unique("rc")
        return rc, self.broker.make_nodes(count, rc,
                                          name_prefix=targets.unique("n"))

    def direct_allocation(self, rc: str) -> dict[str, Any]:
        """An allocation made directly in Ironic, settled."""
        body = {"uuid": str(uuid.uuid4()), "resource_class": rc}
        self.ironic.expect(201, "POST", "/v1/allocations", body)
        return self.ironic.wait_allocation(body["uuid"])

    def via_server(self, rc: str, **extra: Any) -> dict[str, Any]:
        """An allocation made through the server, settled."""
        created = self.broker.expect(201, "POST", "/v1/allocations",
                                     {"resource_class": rc, **extra})
        return self.broker.wait_allocation(created["uuid"])


class TestReservation(_BrokerCase):
    """One allocation at a time: Ironic holds what the server gives."""

    def test_a_node_is_claimed_in_ironic_under_the_same_uuid(self) -> None:
        rc, _nodes = self.enroll(2)
        allocation = self.via_server(rc, name=targets.unique("a"),
                                     extra={"mine": "yes"})
        self.assertEqual("active", allocation["state"], allocation)
        self.assertEqual({"mine": "yes"}, allocation["extra"])
        claim = self.ironic.allocation(allocation["uuid"])
        self.assertEqual(("active", allocation["node_uuid"]),
                         (claim["state"], claim["node_uuid"]))
        node = self.ironic.node(allocation["node_uuid"])
        self.assertEqual(allocation["uuid"], node["allocation_uuid"])
        self.assertEqual(allocation["uuid"], node["instance_uuid"])

    def test_a_node_taken_directly_in_ironic_is_never_given(self) -> None:
        rc, _nodes = self.enroll(2)
        direct = self.direct_allocation(rc)
        self.assertEqual("active", direct["state"], direct)
        mine = self.via_server(rc)
        self.assertEqual("active", mine["state"], mine)
        self.assertNotEqual(direct["node_uuid"], mine["node_uuid"])
        # Both taken now: the next one fails with Ironic's reason.
        refused = self.via_server(rc)
        self.assertEqual("error", refused["state"])
        self.assertIn("no available nodes", refused["last_error"])
        self.assertIsNone(self.ironic.request(
            "GET", f"/v1/allocations/{refused['uuid']}").json().get(
                "node_uuid"))

    def test_a_stale_mirror_costs_a_refused_claim_not_a_double(self
                                                               ) -> None:
        """The mirror still shows the node free (the round is 1 s away)
        when the server asks: Ironic refuses, the server moves on."""
        rc, nodes = self.enroll(2)
        self.broker.expect(200, "GET", f"/v1/nodes/{nodes[0]['uuid']}")
        direct = {"uuid": str(uuid.uuid4()), "resource_class": rc,
                  "candidate_nodes": [nodes[0]["uuid"]]}
        self.ironic.expect(201, "POST", "/v1/allocations", direct)
        self.assertEqual("active",
                         self.ironic.wait_allocation(direct["uuid"])["state"])
        mine = self.via_server(rc, candidate_nodes=[nodes[0]["uuid"],
                                                    nodes[1]["uuid"]])
        self.assertEqual(("active", nodes[1]["uuid"]),
                         (mine["state"], mine["node_uuid"]), mine)

    def test_release_deletes_the_claim_in_ironic(self) -> None:
        rc, _nodes = self.enroll(1)
        allocation = self.via_server(rc)
        self.broker.expect(204, "DELETE",
                           f"/v1/allocations/{allocation['uuid']}")
        self.assertEqual(404, self.ironic.request(
            "GET", f"/v1/allocations/{allocation['uuid']}").status_code)
        node = self.ironic.node(allocation["node_uuid"])
        self.assertIsNone(node["allocation_uuid"])
        self.assertEqual("active", self.via_server(rc)["state"])

    def test_ironic_decides_a_release(self) -> None:
        """A deployed node keeps its allocation, in Ironic's words."""
        rc, _nodes = self.enroll(1)
        allocation = self.via_server(rc)
        node = allocation["node_uuid"]
        response = self.broker.set_provision(node, "active")
        self.assertEqual(202, response.status_code, response.text)
        self.broker.wait_node(node, lambda n: n["provision_state"] ==
                              "active", what="active")
        response = self.broker.request(
            "DELETE", f"/v1/allocations/{allocation['uuid']}")
        self.assertEqual(409, response.status_code, response.text)
        self.assertIn("active", targets.error_message(response))
        self.assertEqual("active", self.broker.allocation(
            allocation["uuid"])["state"])
        self.assertEqual(allocation["uuid"],
                         self.ironic.node(node)["allocation_uuid"])

    def test_a_teardown_in_ironic_releases_the_allocation(self) -> None:
        """Ironic deletes the allocation of a node it tears down; the
        server follows as soon as it reads the node (here, a client's
        read through it; else its next round)."""
        rc, _nodes = self.enroll(1)
        allocation = self.via_server(rc)
        node = allocation["node_uuid"]
        for target in ("active", "deleted"):
            response = self.ironic.set_provision(node, target)
            self.assertEqual(202, response.status_code, response.text)
            self.ironic.wait_node(node, lambda n, t=target: (
                n["provision_state"] == {"active": "active",
                                         "deleted": "available"}[t]
                and not n["target_provision_state"]), what=target)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self.broker.expect(200, "GET", f"/v1/nodes/{node}")
            if self.broker.request(
                    "GET", f"/v1/allocations/{allocation['uuid']}"
            ).status_code == 404:
                break
            time.sleep(0.2)
        else:
            self.fail("the server kept an allocation Ironic deleted")
        self.assertEqual("active", self.via_server(rc)["state"])

    def test_routes_the_server_does_not_own_pass_through(self) -> None:
        _rc, nodes = self.enroll(1)
        node = self.broker.expect(200, "GET", f"/v1/nodes/{nodes[0]['uuid']}")
        self.assertEqual(self.ironic.node(nodes[0]["uuid"])["updated_at"],
                         node["updated_at"])
        # Links point at the server, which serves what they name.
        self.assertTrue(node["links"][0]["href"].startswith(
            self.broker.endpoint), node["links"])
        ports = self.broker.expect(200, "GET", "/v1/ports")
        self.assertIn("ports", ports)
        # The server says it fronts Ironic, and how stale it may be.
        advertised = self.broker.expect(200, "GET", "/v1")["extensions"]
        self.assertEqual({"version": 1, "fronts": "ironic",
                          "sync_interval": targets.BROKER_SYNC_INTERVAL},
                         advertised["broker"])
        # An unmodified client sees Ironic's answers, Ironic's headers.
        response = self.broker.request("GET", "/v1/drivers")
        self.assertEqual(200, response.status_code, response.text)
        self.assertEqual(["fake-hardware"],
                         [d["name"] for d in response.json()["drivers"]])


class TestRace(_BrokerCase):
    """Clients of the server and clients of Ironic on one fleet."""

    def test_eight_clients_through_the_server_four_direct(self) -> None:
        rc, _nodes = self.enroll(20)
        through: list[dict[str, Any]] = []
        direct: list[dict[str, Any]] = []
        lock = threading.Lock()

        def server_client() -> None:
            for _ in range(3):
                done = self.via_server(rc)
                with lock:
                    through.append(done)

        def ironic_client() -> None:
            for _ in range(3):
                done = self.direct_allocation(rc)
                with lock:
                    direct.append(done)

        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            futures = [pool.submit(server_client) for _ in range(8)]
            futures += [pool.submit(ironic_client) for _ in range(4)]
            for future in futures:
                future.result()
        self.assertEqual((24, 12), (len(through), len(direct)))
        held: dict[str, str] = {}
        for allocation in through + direct:
            self.assertIn(allocation["state"], ("active", "error"))
            if allocation["state"] == "error":
                self.assertTrue(allocation["last_error"], allocation)
                continue
            node = allocation["node_uuid"]
            self.assertNotIn(node, held, f"{node} held twice")
            held[node] = allocation["uuid"]
        self.assertEqual(20, len(held), "36 requests for 20 nodes left "
                                        "some free")
        self.assert_agreement(rc, held)

    def assert_agreement(self, rc: str, held: dict[str, str]) -> None:
        """Ironic's nodes and allocations, and the server's, say the
        same of every node of ``rc``."""
        # (Ironic cannot list the allocation_uuid field alone: a 500.)
        for node in targets.iter_pages(self.ironic, "/v1/nodes/detail",
                                       "nodes", {"resource_class": rc}):
            self.assertEqual(held.get(node["uuid"]),
                             node["allocation_uuid"], node)
        mine = list(targets.iter_pages(
            self.broker, "/v1/allocations", "allocations",
            {"resource_class": rc}))
        for allocation in mine:
            claim = self.ironic.request(
                "GET", f"/v1/allocations/{allocation['uuid']}")
            if allocation["state"] == "active":
                self.assertEqual(allocation["node_uuid"],
                                 claim.json()["node_uuid"])
            else:  # no claim left behind for a failure
                self.assertEqual(404, claim.status_code, claim.text)
        claims = [a for a in targets.iter_pages(
            self.ironic, "/v1/allocations", "allocations",
            {"resource_class": rc}) if _MARKER in (a["extra"] or {})]
        self.assertEqual(
            sorted(a["uuid"] for a in mine if a["state"] == "active"),
            sorted(a["uuid"] for a in claims))


class TestIronicOutage(_BrokerCase):
    """Ironic stopped and started again in the middle of a burst."""

    own_broker = True

    def test_only_503s_and_nothing_stuck_or_doubled(self) -> None:
        rc, nodes = self.enroll(4)
        peer = self.broker._peer
        assert peer is not None
        statuses: list[int] = []
        created: list[str] = []
        lock = threading.Lock()
        stop = threading.Event()

        def client() -> None:
            for _ in range(3):  # 12 requests for 4 nodes
                if stop.is_set():
                    return
                response = self.broker.request(
                    "POST", "/v1/allocations", {"resource_class": rc})
                node_read = self.broker.request(
                    "GET", f"/v1/nodes/{nodes[0]['uuid']}")
                with lock:
                    statuses.extend([response.status_code,
                                     node_read.status_code])
                    if response.status_code == 201:
                        created.append(response.json()["uuid"])
                time.sleep(0.4)

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(client) for _ in range(4)]
            time.sleep(0.5)
            peer.stop()
            time.sleep(3)
            peer.start()
            time.sleep(1)
            stop.set()
            for future in futures:
                future.result()
        self.assertLessEqual(set(statuses), {200, 201, 503}, statuses)
        self.assertIn(503, statuses, "Ironic's outage went unnoticed")
        held: set[str] = set()
        for uuid_ in created:
            done = self.broker.wait_allocation(uuid_, timeout=90)
            self.assertIn(done["state"], ("active", "error"), done)
            if done["state"] == "active":
                self.assertNotIn(done["node_uuid"], held)
                held.add(done["node_uuid"])
                self.assertEqual(uuid_, self.ironic.node(
                    done["node_uuid"])["allocation_uuid"])
            else:
                self.assertTrue(done["last_error"])
        self.assertEqual(min(len(created), 4), len(held))


class TestOpenStackSdkThroughTheBroker(_BrokerCase):
    """openstacksdk's own baremetal functional tests of allocations (the
    file shipped in its wheel) through the server in front of a real
    Ironic, as they pass against Ironic itself."""

    #: Its tests list every allocation and expect only their own.
    own_broker = True

    def test_allocation_file_passes(self) -> None:
        # The allocation file: the node and port files only pass requests
        # through (they cost four minutes more, and pass: see the how-to).
        run_and_check(self, "--endpoint", self.broker.endpoint,
                      "test_allocation", at_least=7)


class TestIronicWithHttpBasic(testtools.TestCase):
    """An Ironic that asks for HTTP basic authentication (as bifrost's
    does): the server claims with its own credentials from the config
    file, and passes each caller's own on."""

    def setUp(self) -> None:
        super().setUp()
        if os.environ.get(targets.IRONIC_SWITCH_ENV, "1") == "0":
            self.skipTest("real Ironic skipped")
        import bcrypt

        work = self.useFixture(fixtures.TempDir()).path
        self.password = secrets.token_hex(8)
        digest = bcrypt.hashpw(self.password.encode(),
                               bcrypt.gensalt()).decode()
        htpasswd = os.path.join(work, "htpasswd")
        with open(htpasswd, "w", encoding="utf-8") as stream:
            stream.write(f"broker:{digest}\n")
        config = os.path.join(work, "server.conf")
        with open(config, "w", encoding="utf-8") as stream:
            stream.write("[ironic]\nauth_type = http_basic\n"
                         "username = broker\n"
                         f"password = {self.password}\n")
        self.broker = targets.start_broker("--config-file", config,
                                           htpasswd=htpasswd)
        self.addCleanup(self.broker.stop)
        self.auth = ("broker", self.password)

    def test_claims_with_its_own_and_passes_the_callers_on(self) -> None:
        peer = self.broker._peer
        assert peer is not None
        # Without credentials, Ironic's own 401 comes back.
        refused = requests.get(f"{self.broker.endpoint}/v1/nodes",
                               timeout=30)
        self.assertEqual(401, refused.status_code, refused.text)
        rc = targets.unique("rc")
        session = requests.Session()
        session.auth = self.auth
        session.headers["X-OpenStack-Ironic-API-Version"] = "1.82"
        node = session.post(f"{self.broker.endpoint}/v1/nodes", json={
            "driver": "fake-hardware", "resource_class": rc}, timeout=30)
        self.assertEqual(201, node.status_code, node.text)
        uuid_ = node.json()["uuid"]
        for verb in ("manage", "provide"):
            answer = session.put(
                f"{self.broker.endpoint}/v1/nodes/{uuid_}/states/provision",
                json={"target": verb}, timeout=30)
            self.assertEqual(202, answer.status_code, answer.text)
            self._wait(session, uuid_, {"manage": "manageable",
                                        "provide": "available"}[verb])
        # (Ironic knows no power state until it is set or synced.)
        answer = session.put(
            f"{self.broker.endpoint}/v1/nodes/{uuid_}/states/power",
            json={"target": "power off"}, timeout=30)
        self.assertEqual(202, answer.status_code, answer.text)
        self._wait(session, uuid_, "available", power="power off")
        created = session.post(
            f"{self.broker.endpoint}/v1/allocations",
            json={"resource_class": rc},
            headers={"Prefer": "wait=30"}, timeout=60).json()
        self.assertEqual(("active", uuid_),
                         (created["state"], created["node_uuid"]), created)
        claim = session.get(f"{peer.endpoint}/v1/allocations/"
                            f"{created['uuid']}", timeout=30).json()
        self.assertEqual(uuid_, claim["node_uuid"])

    def _wait(self, session: requests.Session, node: str,
              state: str, power: str | None = None) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = session.get(f"{self.broker.endpoint}/v1/nodes/{node}",
                                timeout=30).json()
            if found["provision_state"] == state and not found[
                    "target_provision_state"] and power in (
                        None, found["power_state"]):
                return
            time.sleep(0.3)
        self.fail(f"node {node} did not reach {state}")
