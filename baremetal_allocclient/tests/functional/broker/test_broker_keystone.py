"""The broker in front of an Ironic behind Keystone (issue 45).

Keystone is real, and so is Ironic (``auth_strategy = keystone``,
fake-hardware).  The server finds Ironic in the catalog of its own cloud
(``[ironic] cloud``, a system-scoped account in clouds.yaml) and checks
each caller's token itself (``--auth-strategy keystone``).  A member of
project A reserves through the server a node project A owns: the claim
in Ironic carries project A as owner, so Ironic's own rules hold (project
A sees the claim in Ironic; a node of project B is never offered to A).
A member of project B sees nothing of it, through the server's own
routes or through those passed to Ironic with B's token; a caller
without a token gets 401 on both.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any, ClassVar

import requests
import testtools

from baremetal_allocclient.tests.fixtures.launcher import ServerProcess
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.broker import _keystone_broker
from baremetal_allocclient.tests.functional.keystone import _cloud

VERSION = {"X-OpenStack-Ironic-API-Version": "1.82"}


class TestBrokerInFrontOfKeystoneIronic(testtools.TestCase):
    cloud: ClassVar[_cloud.Cloud]
    ironic: ClassVar[targets.Ironic]
    broker: ClassVar[ServerProcess]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        if os.environ.get(targets.IRONIC_SWITCH_ENV, "1") == "0":
            raise testtools.TestCase.skipException("real Ironic skipped")
        cls.cloud = _cloud.Cloud(hash_rounds=4)
        cls.addClassCleanup(cls.cloud.close)
        cls.ironic = _keystone_broker.start_ironic(cls.cloud,
                                                   cls.addClassCleanup)
        # The catalog's baremetal endpoint is this Ironic: the server,
        # given no [ironic] url, finds it there.
        cls.cloud.point_endpoint(cls.ironic.endpoint)
        cls.broker = _keystone_broker.start_broker(cls.cloud,
                                                   cls.addClassCleanup)

    # -- helpers ------------------------------------------------------------
    def call(self, user: str | None, method: str, url: str,
             body: object = None, **headers: str) -> requests.Response:
        """``method url`` with ``user``'s token (none when None)."""
        sent = dict(VERSION, **headers)
        if user is not None:
            sent["X-Auth-Token"] = self.cloud.token(user)
        return requests.request(method, url, json=body, headers=sent,
                                timeout=60)

    def node_in_ironic(self, resource_class: str, owner: str) -> str:
        """An available node of ``owner``'s, made in Ironic by its admin."""
        ironic = self.ironic.endpoint
        made = self.call(_cloud.ADMIN, "POST", f"{ironic}/v1/nodes", {
            "driver": "fake-hardware", "resource_class": resource_class,
            "owner": owner})
        self.assertEqual(201, made.status_code, made.text)
        node = made.json()["uuid"]
        for verb, state in (("manage", "manageable"),
                            ("provide", "available")):
            asked = self.call(_cloud.ADMIN, "PUT",
                              f"{ironic}/v1/nodes/{node}/states/provision",
                              {"target": verb})
            self.assertEqual(202, asked.status_code, asked.text)
            self._wait_node(node, state)
        asked = self.call(_cloud.ADMIN, "PUT",
                          f"{ironic}/v1/nodes/{node}/states/power",
                          {"target": "power off"})
        self.assertEqual(202, asked.status_code, asked.text)
        self._wait_node(node, "available", "power off")
        return node

    def port_in_ironic(self, node: str) -> str:
        """A port of ``node``'s made in Ironic (the server keeps none:
        reading it through the server shows the call was passed on)."""
        address = "52:54:00:" + ":".join(
            f"{byte:02x}" for byte in uuid.uuid4().bytes[:3])
        made = self.call(_cloud.ADMIN, "POST",
                         f"{self.ironic.endpoint}/v1/ports",
                         {"node_uuid": node, "address": address})
        self.assertEqual(201, made.status_code, made.text)
        return address

    def _wait_node(self, node: str, state: str,
                   power: str | None = None) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = self.call(_cloud.ADMIN, "GET",
                              f"{self.ironic.endpoint}/v1/nodes/{node}")
            seen: dict[str, Any] = found.json()
            if seen["provision_state"] == state and \
                    not seen["target_provision_state"] and \
                    power in (None, seen["power_state"]):
                return
            time.sleep(0.3)
        self.fail(f"node {node} did not reach {state}")

    # -- tests --------------------------------------------------------------
    def test_a_member_reserves_its_projects_node_in_ironic(self) -> None:
        rc = targets.unique("ks")
        project_a = self.cloud.project_ids[self.cloud.project_a]
        project_b = self.cloud.project_ids[self.cloud.project_b]
        self.node_in_ironic(rc, project_b)  # never offered to A
        ours = self.node_in_ironic(rc, project_a)
        broker, ironic = self.broker.endpoint, self.ironic.endpoint
        created = self.call(_cloud.ALICE, "POST", f"{broker}/v1/allocations",
                            {"resource_class": rc}, Prefer="wait=30")
        self.assertEqual(201, created.status_code, created.text)
        allocation = created.json()
        self.assertEqual(("active", ours, project_a),
                         (allocation["state"], allocation["node_uuid"],
                          allocation["owner"]), allocation)
        # The claim in Ironic: same UUID, project A's, and A sees it there
        # with its own token.
        claim = self.call(_cloud.ALICE, "GET",
                          f"{ironic}/v1/allocations/{allocation['uuid']}")
        self.assertEqual(200, claim.status_code, claim.text)
        self.assertEqual((ours, project_a),
                         (claim.json()["node_uuid"], claim.json()["owner"]))
        # A second one for project A: the only other node is B's.
        refused = self.call(_cloud.ALICE, "POST", f"{broker}/v1/allocations",
                            {"resource_class": rc}, Prefer="wait=30")
        self.assertEqual(201, refused.status_code, refused.text)
        self.assertEqual("error", refused.json()["state"], refused.text)
        # Released through the server: gone from Ironic, the node free.
        deleted = self.call(_cloud.ALICE, "DELETE",
                            f"{broker}/v1/allocations/{allocation['uuid']}")
        self.assertEqual(204, deleted.status_code, deleted.text)
        gone = self.call(_cloud.ADMIN, "GET",
                         f"{ironic}/v1/allocations/{allocation['uuid']}")
        self.assertEqual(404, gone.status_code, gone.text)
        node = self.call(_cloud.ADMIN, "GET", f"{ironic}/v1/nodes/{ours}")
        self.assertIsNone(node.json()["allocation_uuid"])

    def test_another_project_sees_nothing_of_it(self) -> None:
        rc = targets.unique("ks")
        project_a = self.cloud.project_ids[self.cloud.project_a]
        ours = self.node_in_ironic(rc, project_a)
        address = self.port_in_ironic(ours)
        broker = self.broker.endpoint
        created = self.call(_cloud.ALICE, "POST", f"{broker}/v1/allocations",
                            {"resource_class": rc}, Prefer="wait=30")
        self.assertEqual(201, created.status_code, created.text)
        name = created.json()["uuid"]
        self.addCleanup(self.call, _cloud.ALICE, "DELETE",
                        f"{broker}/v1/allocations/{name}")
        # The server's own routes and those it passes to Ironic with B's
        # token: nothing of project A's.
        for path in (f"/v1/allocations/{name}", f"/v1/nodes/{ours}"):
            seen = self.call(_cloud.BOB, "GET", broker + path)
            self.assertEqual(404, seen.status_code, f"{path}: {seen.text}")
        listed = self.call(_cloud.BOB, "GET",
                           f"{broker}/v1/allocations?resource_class={rc}")
        self.assertEqual([], listed.json()["allocations"])
        nodes = self.call(_cloud.BOB, "GET", f"{broker}/v1/nodes")
        self.assertEqual(200, nodes.status_code, nodes.text)
        self.assertNotIn(ours, [n["uuid"] for n in nodes.json()["nodes"]])
        ports = f"{broker}/v1/ports?node={ours}"
        self.assertEqual([], self.call(_cloud.BOB, "GET", ports).json()[
            "ports"])
        # Project A's member sees all of it, through the server (the
        # port from Ironic).
        for path in (f"/v1/allocations/{name}", f"/v1/nodes/{ours}"):
            seen = self.call(_cloud.ALICE, "GET", broker + path)
            self.assertEqual(200, seen.status_code, f"{path}: {seen.text}")
        self.assertEqual([address], [
            port["address"] for port in
            self.call(_cloud.ALICE, "GET", ports).json()["ports"]])

    def test_no_token_no_answer(self) -> None:
        broker = self.broker.endpoint
        for path in ("/v1/allocations", "/v1/nodes",
                     f"/v1/nodes/{uuid.uuid4()}"):
            seen = self.call(None, "GET", broker + path)
            self.assertEqual(401, seen.status_code, f"{path}: {seen.text}")
