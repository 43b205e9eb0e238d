"""The Placement backend against a real OpenStack Placement.

One Placement (see ``_service``) and two reference servers sharing one
SQLite database, both with ``--backend placement``.  Every test uses its
own resource class so tests never see each other's nodes.
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
import time
import uuid as uuidlib
from typing import Any, ClassVar

import requests
import testtools
from testtools.content import text_content

from baremetal_allocclient.server.allocation.placement.model import (
    MANAGED_TRAIT,
    normalize_resource_class,
)
from baremetal_allocclient.tests.fixtures import databases
from baremetal_allocclient.tests.functional.placement import _service
from baremetal_allocclient.tests.functional.placement._service import (
    HEADERS,
    wait_for,
)
from baremetal_allocclient.tests.functional.targets import Target


def _rc() -> str:
    return "rc-" + uuidlib.uuid4().hex[:10]


class PlacementBackendTests(testtools.TestCase):
    """Sync, allocation, release, concurrency and outages."""

    placement: ClassVar[_service.Placement]
    server: ClassVar[Target]
    other: ClassVar[Target]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.placement = _service.placement()
        db = databases.scratch(cls.addClassCleanup, "sqlite",
                               schema=True).url
        try:
            # A slow fake-hardware step makes ``cleaning`` observable.
            cls.server = _service.start_server(
                db, cls.placement.endpoint, "--step-delay", "1.5"
            )
            cls.other = _service.start_server(db, cls.placement.endpoint)
        except BaseException:
            cls._stop_servers()
            raise

    @classmethod
    def _stop_servers(cls) -> None:
        for name in ("server", "other"):
            target = cls.__dict__.get(name)
            if target is not None:
                target.stop()

    @classmethod
    def tearDownClass(cls) -> None:
        cls._stop_servers()
        super().tearDownClass()

    def setUp(self) -> None:
        super().setUp()
        # Why Placement offered no candidate, or what a sync did, is only
        # in these logs, gone with the class's working directories.
        self.addOnException(self._attach_logs)

    def _attach_logs(self, _exc_info: Any) -> None:
        for name in ("server", "other"):
            target: Target = getattr(type(self), name)
            self.addDetail(f"{name} log (end)",
                           text_content(target.log_tail()))
        self.addDetail("Placement's requests (the last 100)", text_content(
            "\n".join(self.placement.requests_made()[-100:])))

    # -- helpers ----------------------------------------------------------
    def _provider(self, uuid: str, **expect: Any) -> dict[str, Any]:
        """Wait until the node's provider exists and matches ``expect``
        (``reserved=``: the inventory's reserved amount)."""
        def check() -> dict[str, Any] | None:
            provider = self.placement.provider(uuid)
            if provider is None:
                return None
            if "reserved" in expect:
                inventories = list(provider["inventories"].values())
                if [i["reserved"] for i in inventories] != [
                    expect["reserved"]
                ]:
                    return None
            return provider
        return wait_for(check, 30, f"provider {uuid} {expect}")

    def _allocate(self, target: Target, **body: Any) -> dict[str, Any]:
        created = target.expect(201, "POST", "/v1/allocations", body)
        return target.wait_allocation(created["uuid"], timeout=90)

    # -- sync ---------------------------------------------------------------
    def test_enroll_creates_providers_inventory_and_traits(self) -> None:
        rc = _rc()
        nodes = self.server.make_nodes(
            2, rc, traits=["CUSTOM_GOLD", "HW_CPU_X86_AVX2"],
            name_prefix=rc,
        )
        for node in nodes:
            provider = self._provider(node["uuid"], reserved=0)
            self.assertEqual(node["name"], provider["name"])
            self.assertEqual(
                {normalize_resource_class(rc): {
                    "total": 1, "reserved": 0, "min_unit": 1, "max_unit": 1,
                    "step_size": 1, "allocation_ratio": 1.0}},
                provider["inventories"],
            )
            self.assertEqual(
                {"CUSTOM_GOLD", "HW_CPU_X86_AVX2", MANAGED_TRAIT},
                provider["traits"],
            )
        # Trait changes follow.
        uuid = nodes[0]["uuid"]
        self.server.expect(204, "DELETE", f"/v1/nodes/{uuid}/traits/"
                           "CUSTOM_GOLD")
        wait_for(lambda: self.placement.provider(uuid)["traits"]
                 == {"HW_CPU_X86_AVX2", MANAGED_TRAIT}, 30, "trait removed")

    def test_maintenance_flips_reserved(self) -> None:
        (node,) = self.server.make_nodes(1, _rc())
        uuid = node["uuid"]
        self._provider(uuid, reserved=0)
        self.server.expect(202, "PUT", f"/v1/nodes/{uuid}/maintenance",
                           {"reason": "test"})
        self._provider(uuid, reserved=1)
        self.server.expect(202, "DELETE", f"/v1/nodes/{uuid}/maintenance")
        self._provider(uuid, reserved=0)

    def test_cleaning_reserves_then_frees(self) -> None:
        (node,) = self.server.make_nodes(1, _rc())
        uuid = node["uuid"]
        self._provider(uuid, reserved=0)
        self.server.expect(202, "PUT", f"/v1/nodes/{uuid}/states/provision",
                           {"target": "manage"})
        self._provider(uuid, reserved=1)  # manageable
        self.server.expect(202, "PUT", f"/v1/nodes/{uuid}/states/provision",
                           {"target": "provide"})

        def cleaning_and_reserved() -> bool:
            state = self.server.node(uuid)["provision_state"]
            provider = self.placement.provider(uuid)
            assert provider is not None
            reserved = [i["reserved"]
                        for i in provider["inventories"].values()]
            return state == "cleaning" and reserved == [1]

        wait_for(cleaning_and_reserved, 10, "cleaning, reserved")
        self.server.wait_node(uuid, lambda n: n["provision_state"]
                              == "available")
        self._provider(uuid, reserved=0)

    def test_deleting_a_node_deletes_its_provider(self) -> None:
        rc = _rc()
        free, allocated = self.server.make_nodes(2, rc)
        for node in (free, allocated):
            self._provider(node["uuid"], reserved=0)
        self.server.expect(204, "DELETE", f"/v1/nodes/{free['uuid']}")
        wait_for(lambda: self.placement.provider(free["uuid"]) is None, 30,
                 "provider deleted")
        # A node holding an allocation (deletable in maintenance): its
        # claim goes, then its provider.
        uuid = allocated["uuid"]
        alloc = self._allocate(self.server, resource_class=rc)
        self.assertEqual(uuid, alloc["node_uuid"], alloc["last_error"])
        self.assertTrue(self.placement.consumer(alloc["uuid"]))
        self.server.expect(202, "PUT", f"/v1/nodes/{uuid}/maintenance",
                           {"reason": "retire"})
        self.server.expect(204, "DELETE", f"/v1/nodes/{uuid}")
        wait_for(lambda: self.placement.provider(uuid) is None, 30,
                 "provider of the allocated node deleted")
        self.assertEqual({}, self.placement.consumer(alloc["uuid"]))

    # -- allocation ---------------------------------------------------------
    def test_allocation_with_traits_and_candidates(self) -> None:
        rc = _rc()
        plain = self.server.make_nodes(2, rc)
        gold = self.server.make_nodes(2, rc, traits=["CUSTOM_GOLD"])
        for node in plain + gold:
            self._provider(node["uuid"], reserved=0)
        wanted = gold[1]["uuid"]
        alloc = self._allocate(
            self.server, resource_class=rc, traits=["CUSTOM_GOLD"],
            candidate_nodes=[plain[0]["uuid"], wanted],
        )
        self.assertEqual("active", alloc["state"], alloc["last_error"])
        self.assertEqual(wanted, alloc["node_uuid"])
        self.assertEqual(
            {wanted: {normalize_resource_class(rc): 1}},
            self.placement.consumer(alloc["uuid"]),
        )
        node = self.server.node(wanted)
        self.assertEqual(alloc["uuid"], node["allocation_uuid"])
        self.assertEqual(alloc["uuid"], node["instance_uuid"])
        self.assertEqual(["CUSTOM_GOLD"], node["instance_info"]["traits"])
        asked = [line for line in self.placement.requests_made()
                 if line.startswith("GET /allocation_candidates")
                 and f"in_tree={wanted}" in line]
        self.assertTrue(asked, "no allocation_candidates with in_tree")
        self.assertIn("required=CUSTOM_GOLD", asked[-1])
        # Deleting the allocation removes the claim.
        self.server.expect(204, "DELETE", f"/v1/allocations/{alloc['uuid']}")
        wait_for(lambda: self.placement.consumer(alloc["uuid"]) == {}, 30,
                 "claim removed")

    def test_undeploy_removes_the_claim(self) -> None:
        (node,) = self.other.make_nodes(1, _rc())
        uuid = node["uuid"]
        self._provider(uuid, reserved=0)
        alloc = self._allocate(self.other, resource_class=node[
            "resource_class"])
        self.assertEqual("active", alloc["state"], alloc["last_error"])
        self.other.expect(202, "PUT", f"/v1/nodes/{uuid}/states/provision",
                          {"target": "active"})
        self.other.wait_node(uuid, lambda n: n["provision_state"] == "active")
        # Active and allocated: the claim holds the unit, nothing reserved.
        self._provider(uuid, reserved=0)
        self.assertTrue(self.placement.consumer(alloc["uuid"]))
        self.other.expect(202, "PUT", f"/v1/nodes/{uuid}/states/provision",
                          {"target": "deleted"})
        self.other.wait_node(uuid, lambda n: n["provision_state"]
                             == "available")
        wait_for(lambda: self.placement.consumer(alloc["uuid"]) == {}, 30,
                 "claim removed after undeploy")

    def test_a_node_claimed_elsewhere_is_not_handed_out(self) -> None:
        rc = _rc()
        (node,) = self.server.make_nodes(1, rc)
        uuid = node["uuid"]
        self._provider(uuid, reserved=0)
        foreign = str(uuidlib.uuid4())  # e.g. Nova's instance
        response = requests.put(
            f"{self.placement.endpoint}/allocations/{foreign}",
            headers=HEADERS, timeout=10,
            json={"allocations": {uuid: {"resources": {
                normalize_resource_class(rc): 1}}},
                "project_id": "nova", "user_id": "nova",
                "consumer_generation": None},
        )
        self.assertEqual(204, response.status_code, response.text)
        try:
            alloc = self._allocate(self.server, resource_class=rc)
            self.assertEqual("error", alloc["state"])
            self.assertIn("Placement offers none", alloc["last_error"])
        finally:
            requests.delete(
                f"{self.placement.endpoint}/allocations/{foreign}",
                headers=HEADERS, timeout=10,
            )

    def test_two_servers_never_hand_out_one_node_twice(self) -> None:
        rc = _rc()
        nodes = self.server.make_nodes(3, rc)
        for node in nodes:
            self._provider(node["uuid"], reserved=0)
        targets = [self.server, self.other] * 4  # 8 requests, 3 nodes

        def create(target: Target) -> tuple[Target, str]:
            body = target.expect(201, "POST", "/v1/allocations",
                                 {"resource_class": rc})
            return target, body["uuid"]

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            created = list(pool.map(create, targets))
        finished = [t.wait_allocation(u, timeout=120) for t, u in created]
        active = [a for a in finished if a["state"] == "active"]
        self.assertEqual(3, len(active), [a["last_error"] for a in finished])
        self.assertEqual(3, len({a["node_uuid"] for a in active}))
        for alloc in finished:
            claims = self.placement.consumer(alloc["uuid"])
            if alloc["state"] == "active":
                self.assertEqual([alloc["node_uuid"]], list(claims))
            else:
                self.assertEqual({}, claims)
        for node in nodes:
            usage = self.placement.provider(node["uuid"])["usages"]
            self.assertEqual([1], list(usage.values()))

    # -- outage ---------------------------------------------------------------
    def test_placement_restart_is_reconciled(self) -> None:
        rc = _rc()
        first, second, third = self.server.make_nodes(3, rc)
        for node in (first, second, third):
            self._provider(node["uuid"], reserved=0)
        kept = self._allocate(self.server, resource_class=rc,
                              candidate_nodes=[third["uuid"]])
        self.assertEqual("active", kept["state"], kept["last_error"])
        self.placement.stop()
        try:
            started = time.monotonic()
            failed = self._allocate(self.server, resource_class=rc)
            self.assertEqual("error", failed["state"])
            self.assertIn("Placement is unreachable", failed["last_error"])
            self.assertLess(time.monotonic() - started, 30)
            # Changes while Placement is down.
            self.server.expect(
                202, "PUT", f"/v1/nodes/{first['uuid']}/maintenance",
                {"reason": "while Placement was down"})
            self.server.expect(204, "DELETE",
                               f"/v1/allocations/{kept['uuid']}")
        finally:
            self.placement.start()
        self._provider(first["uuid"], reserved=1)
        wait_for(lambda: self.placement.consumer(kept["uuid"]) == {}, 30,
                 "claim of the deleted allocation removed")
        self.assertEqual({}, self.placement.consumer(failed["uuid"]))
        # And allocation works again.
        again = self._allocate(self.server, resource_class=rc,
                               candidate_nodes=[second["uuid"]])
        self.assertEqual("active", again["state"], again["last_error"])

    def test_reconciliation_repairs_drift(self) -> None:
        (node,) = self.server.make_nodes(1, _rc())
        uuid = node["uuid"]
        self._provider(uuid, reserved=0)
        # Someone edits Placement behind our back: traits wiped.
        generation = self.placement.get(
            f"/resource_providers/{uuid}")["generation"]
        response = requests.put(
            f"{self.placement.endpoint}/resource_providers/{uuid}/traits",
            headers=HEADERS, timeout=10,
            json={"resource_provider_generation": generation, "traits": []},
        )
        self.assertEqual(200, response.status_code, response.text)
        wait_for(lambda: MANAGED_TRAIT in self.placement.provider(uuid)[
            "traits"], 30, "traits restored by the reconciliation")


class CapacityTests(testtools.TestCase):
    """The capacity view with each backend, over HTTP and both CLIs."""

    placement: ClassVar[_service.Placement]
    servers: ClassVar[dict[str, Target]]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.placement = _service.placement()
        cls.servers = {}
        try:
            for backend in ("database", "placement"):
                db = databases.scratch(cls.addClassCleanup, "sqlite",
                                       schema=True).url
                cls.servers[backend] = _service.start_server(
                    db,
                    cls.placement.endpoint if backend == "placement"
                    else None,
                )
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls) -> None:
        for target in cls.servers.values():
            target.stop()
        super().tearDownClass()

    def _scenario(self, target: Target) -> str:
        """4 nodes: 1 allocated, 1 in maintenance, 1 manageable, 1 free."""
        rc = _rc()
        nodes = target.make_nodes(4, rc)
        uuids = [n["uuid"] for n in nodes]
        if target is self.servers["placement"]:
            for uuid in uuids:
                wait_for(lambda u=uuid: self.placement.provider(u), 30)
        alloc = target.expect(201, "POST", "/v1/allocations", {
            "resource_class": rc, "candidate_nodes": [uuids[0]]})
        self.assertEqual("active",
                         target.wait_allocation(alloc["uuid"])["state"])
        target.expect(202, "PUT", f"/v1/nodes/{uuids[1]}/maintenance",
                      {"reason": "x"})
        target.expect(202, "PUT", f"/v1/nodes/{uuids[2]}/states/provision",
                      {"target": "manage"})
        target.wait_node(uuids[2], lambda n: n["provision_state"]
                         == "manageable")
        return rc

    def _check(self, backend: str) -> None:
        target = self.servers[backend]
        rc = self._scenario(target)
        expected = {
            "resource_class": rc, "total": 4, "allocated": 1, "reserved": 2,
            "reserved_by_reason": {"maintenance": 1, "not_available": 1},
            "free": 1,
        }

        def view() -> dict[str, Any] | None:
            body = target.expect(
                200, "GET", f"/v1/allocation_capacity?resource_class={rc}")
            self.assertEqual(backend, body["backend"])
            (row,) = body["capacity"]
            if backend == "placement" and row["placement"] != {
                "resource_class": normalize_resource_class(rc), "total": 4,
                "reserved": 2, "used": 1, "free": 1,
            }:
                return None  # the sync has not caught up yet
            return dict(row)

        row = wait_for(view, 30, "capacity view")
        row.pop("placement", None)
        self.assertEqual(expected, row)
        bin_dir = os.path.dirname(sys.executable)
        endpoint = ["--os-endpoint", target.endpoint]
        for argv in (
            [os.path.join(bin_dir, "baremetal-alloc"), *endpoint,
             "capacity"],
            [os.path.join(bin_dir, "openstack"), "--os-auth-type", "none",
             *endpoint, "baremetal", "allocation", "capacity"],
        ):
            out = _service.run_cli(
                [*argv, "--resource-class", rc, "-f", "json"])
            (cli_row,) = out
            self.assertEqual(
                {"resource_class": rc, "total": 4, "allocated": 1,
                 "reserved": 2, "free": 1,
                 "reserved_by_reason": {"maintenance": 1,
                                        "not_available": 1}},
                cli_row,
            )

    def test_capacity_database_backend(self) -> None:
        self._check("database")

    def test_capacity_placement_backend(self) -> None:
        self._check("placement")


class CloudCredentialsTests(testtools.TestCase):
    """``--placement-cloud``: keystoneauth credentials from clouds.yaml
    (here the admin_token plugin, which is what noauth2 accepts) and the
    endpoint from the cloud instead of ``--placement-url``."""

    def test_allocation_through_a_cloud_session(self) -> None:
        placement = _service.placement()
        db = databases.scratch(self.addCleanup, "sqlite", schema=True).url
        clouds = (
            "clouds:\n"
            "  lab:\n"
            "    auth_type: admin_token\n"
            "    auth:\n"
            f"      endpoint: {placement.endpoint}\n"
            "      token: admin\n"
        )
        target = _service.start_server(
            db, None, "--placement-cloud", "lab", clouds_yaml=clouds)
        self.addCleanup(target.stop)
        rc = _rc()
        (node,) = target.make_nodes(1, rc)
        wait_for(lambda: placement.provider(node["uuid"]), 30, "provider")
        created = target.expect(201, "POST", "/v1/allocations",
                                {"resource_class": rc})
        alloc = target.wait_allocation(created["uuid"], timeout=90)
        self.assertEqual("active", alloc["state"], alloc["last_error"])
        self.assertEqual({node["uuid"]: {normalize_resource_class(rc): 1}},
                         placement.consumer(alloc["uuid"]))
