"""HTTP-level tests of the calls on one allocation (v1/allocations.py).
"""

from __future__ import annotations

from baremetal_allocclient import exceptions
from baremetal_allocclient.tests.unit.v1 import fakes
from baremetal_allocclient.tests.unit.v1.client_case import (
    ALLOCS,
    ClientTestCase,
    E,
    query_of,
)


class AllocationCallsTest(ClientTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.mock.get(E + "/", json={})  # Must not be needed.

    def test_get_quotes_name_and_sends_fields(self) -> None:
        self.mock.get(ALLOCS + "/web%201", headers=self.headers(),
                      json={"uuid": "a1", "state": "active"})
        got = self.client.get_allocation("web 1", fields=["uuid", "state"])
        self.assertEqual("GET", self.history[0].method)
        self.assertEqual({"fields": ["uuid,state"]},
                         query_of(self.history[0]))
        # Fields the server did not return are None, not invented.
        self.assertEqual(("a1", "active", None, None),
                         (got.uuid, got.state, got.resource_class,
                          got.traits))

    def test_get_rejects_unknown_fields(self) -> None:
        error = self.assertRaises(exceptions.InvalidArgument,
                                  self.client.get_allocation, "a1",
                                  fields=["uuid", "bogus"])
        self.assertIn("bogus", str(error))
        self.assertEqual([], self.history)

    def test_update_sends_json_patch(self) -> None:
        self.mock.patch(ALLOCS + "/a1", headers=self.headers(),
                        json=fakes.allocation(name="new",
                                              extra={"a/b": 1}))
        updated = self.client.update_allocation(
            "a1", name="new", set_extra={"a/b": 1, "c~d": "x"},
            unset_extra=["old"])
        request = self.history[0]
        self.assertEqual("PATCH", request.method)
        self.assertEqual("application/json", request.headers["Content-Type"])
        self.assertEqual("1.65",
                         request.headers["X-OpenStack-Ironic-API-Version"])
        self.assertEqual([
            {"op": "add", "path": "/name", "value": "new"},
            {"op": "add", "path": "/extra/a~1b", "value": 1},
            {"op": "add", "path": "/extra/c~0d", "value": "x"},
            {"op": "remove", "path": "/extra/old"},
        ], request.json())
        self.assertEqual({"a/b": 1}, dict(updated.extra or {}))

    def test_update_name_none_removes_it(self) -> None:
        self.mock.patch(ALLOCS + "/a1", headers=self.headers(),
                        json=fakes.allocation())
        self.client.update_allocation("a1", name=None)
        self.assertEqual([{"op": "remove", "path": "/name"}],
                         self.history[0].json())

    def test_update_without_changes_is_rejected(self) -> None:
        self.assertRaises(exceptions.InvalidArgument,
                          self.client.update_allocation, "a1")
        self.assertEqual([], self.history)

    def test_delete(self) -> None:
        self.mock.delete(ALLOCS + "/a1", status_code=204,
                         headers=self.headers())
        self.assertTrue(self.client.delete_allocation("a1"))
        self.assertEqual("DELETE", self.history[0].method)
        self.assertEqual(ALLOCS + "/a1", self.history[0].url)

    def test_delete_missing(self) -> None:
        self.mock.delete(ALLOCS + "/gone", status_code=404,
                         json=fakes.ironic_error("Allocation gone could "
                                                 "not be found."))
        self.assertRaises(exceptions.NotFound,
                          self.client.delete_allocation, "gone")
        self.assertFalse(
            self.client.delete_allocation("gone", ignore_missing=True))
        self.assertEqual(2, len(self.history))

    def test_node_allocation(self) -> None:
        self.mock.get(E + "/v1/nodes/node-1/allocation",
                      headers=self.headers(),
                      json=fakes.allocation(state="active",
                                            node_uuid="n1"))
        self.mock.delete(E + "/v1/nodes/node-1/allocation", status_code=204)
        got = self.client.get_node_allocation("node-1", fields=["uuid",
                                                                "owner"])
        self.assertEqual({"fields": ["uuid,owner"]}, query_of(self.history[0]))
        self.assertEqual("n1", got.node_uuid)
        self.client.delete_node_allocation("node-1")
        self.assertEqual("DELETE", self.history[1].method)

    def test_delete_node_allocation_ignore_missing(self) -> None:
        self.mock.delete(E + "/v1/nodes/n1/allocation", status_code=404)
        self.client.delete_node_allocation("n1", ignore_missing=True)
        self.assertRaises(exceptions.NotFound,
                          self.client.delete_node_allocation, "n1")
