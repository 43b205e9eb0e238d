"""``serve --default-order best_fit``: the admin's default order.

A request that names no order, even a plain Ironic one, takes the
smallest matching node; one that names ``first_fit`` keeps its own; and
``explain`` says which order applies.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

import requests
import testtools

from baremetal_allocclient.tests.fixtures import launcher
from baremetal_allocclient.tests.functional.multiprocess import _cluster

_PLAIN = {"X-OpenStack-Ironic-API-Version": "1.73", "Prefer": "wait=30"}
_EXT = {**_PLAIN, "X-Baremetal-Alloc-Extensions": "constraints"}


class DefaultOrderTests(testtools.TestCase):
    def setUp(self) -> None:
        super().setUp()
        db, workdir = _cluster.scratch(self.addCleanup, "sqlite")
        self.rc = "rc-" + uuidlib.uuid4().hex[:12]
        sizes = [64, 128, 4, 64, 16]
        launcher.enroll(db.url, workdir, {
            f"{self.rc}-{i}": {"driver": "fake-hardware",
                               "resource_class": self.rc,
                               "properties": {"cpus": cpus}}
            for i, cpus in enumerate(sizes)})
        self.server = _cluster.start(db.url, "order-0", "--default-order",
                                     "best_fit")
        self.addCleanup(self.server.cleanup)

    def post(self, path: str, body: dict[str, Any],
             headers: dict[str, str]) -> Any:
        resp = requests.post(self.server.endpoint + path, json=body,
                             headers=headers, timeout=60)
        self.assertIn(resp.status_code, (200, 201), resp.text)
        return resp.json()

    def cpus(self, allocation: Any) -> int:
        resp = requests.get(
            f"{self.server.endpoint}/v1/nodes/{allocation['node_uuid']}",
            headers=_PLAIN, timeout=30)
        return int(resp.json()["properties"]["cpus"])

    def test_plain_requests_take_the_smallest_node(self) -> None:
        body = {"resource_class": self.rc}
        taken = [self.cpus(self.post("/v1/allocations", body, _PLAIN))
                 for _ in range(3)]
        self.assertEqual([4, 16, 64], taken)

    def test_a_group_takes_the_smallest_nodes(self) -> None:
        made = self.post("/v1/allocation_groups",
                         {"resource_class": self.rc, "count": 2},
                         {**_EXT, "X-Baremetal-Alloc-Extensions": "groups"})
        self.assertEqual([4, 16], sorted(
            self.cpus(a) for a in made["allocations"]))

    def test_explain_and_a_request_naming_first_fit(self) -> None:
        doc = self.post("/v1/allocation_explain", {
            "resource_class": self.rc,
            "constraints": {"properties": [{"key": "cpus", "min": 32}]}},
            _EXT)
        self.assertEqual("best_fit", doc["order"]["order"])
        self.assertEqual(["cpus>=32"], doc["order"]["measured"])
        self.assertEqual([1.0, 1.0, 3.0],
                         [n["excess"] for n in doc["order"]["first"]])
        first_fit = {"resource_class": self.rc,
                     "constraints": {"order": "first_fit"}}
        doc = self.post("/v1/allocation_explain", first_fit, _EXT)
        self.assertEqual({"order": "first_fit"}, doc["order"])
        made = self.post("/v1/allocations", first_fit, _EXT)
        self.assertEqual("active", made["state"])
