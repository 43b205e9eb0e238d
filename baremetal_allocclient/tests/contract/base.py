"""Shared helpers of the contract suite (a mixin, not a test case).

Every contract test runs once per target through
``targets.per_target``.  Tests enroll their own nodes under a unique
resource class, so an allocation can only ever match nodes of the test that
created it, whatever else the shared target holds.
"""

from __future__ import annotations

import json
import unittest
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import requests

from baremetal_allocclient.tests.functional import targets

if TYPE_CHECKING:
    _Base = unittest.TestCase
else:
    _Base = object


class ContractMixin(_Base):
    """Helpers used by the contract tests; ``target`` is set per class.

    At run time this is a plain mixin (``per_target`` adds the TestCase
    base); the type checker sees the TestCase assertions.
    """

    target: targets.Target

    def sdk_connection(self) -> Any:
        """The target's openstacksdk ``Connection``, openstacksdk's own
        deprecation chatter silenced until the test ends (it is not what
        the tests are about)."""
        guard = warnings.catch_warnings()
        guard.__enter__()
        self.addCleanup(guard.__exit__, None, None, None)
        warnings.filterwarnings("ignore", module=r"openstack(\.|$)")
        return self.target.connection()

    @property
    def is_reference(self) -> bool:
        """Whether the current target is this project's reference server."""
        return self.target.name == "reference"

    def marks_of(self, uuid: str) -> dict[str, Any]:
        """An allocation's group and lease as the SDK reads them
        (``Allocation.marks``), from a GET opting into the extensions:
        the reference server's fields, or the keys of ``extra`` on real
        Ironic (which ignores the header)."""
        from baremetal_allocclient import marks

        return marks.of(self.target.expect(
            200, "GET", f"/v1/allocations/{uuid}",
            headers={"X-Baremetal-Alloc-Extensions": "groups, leases"}))

    @property
    def serves_allocations(self) -> bool:
        """Whether this project's server answers the allocation API:
        itself, or as the broker in front of a real Ironic (whose other
        routes are Ironic's own)."""
        return self.target.name in ("reference", "broker")

    def enroll(self, count: int = 1, *, traits: Sequence[str] = (),
               owner: str | None = None, lessee: str | None = None,
               resource_class: str | None = None
               ) -> tuple[str, list[dict[str, Any]]]:
        """Enroll named nodes under a fresh (or the given) resource class."""
        rc = resource_class or targets.unique("rc")
        nodes = self.target.make_nodes(count, rc, traits=traits,
                                       owner=owner, lessee=lessee,
                                       name_prefix=targets.unique("node"))
        return rc, nodes

    def post_allocation(self, body: dict[str, Any], *,
                        version: str = "latest") -> dict[str, Any]:
        """POST an allocation and insist on 201."""
        created: dict[str, Any] = self.target.expect(
            201, "POST", "/v1/allocations", body, version=version)
        return created

    def allocate(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST an allocation and wait until it leaves ``allocating``.

        Real Ironic on SQLite sometimes fails an allocation with "database
        is locked" under load; that allocation is deleted and the request
        made again (a few times), since Ironic's transient weakness is not
        what the calling test is about.
        """
        for _attempt in range(3):
            done = self.target.wait_allocation(
                self.post_allocation(body)["uuid"])
            if "database is locked" not in (done.get("last_error") or ""):
                return done
            self.target.request("DELETE", f"/v1/allocations/{done['uuid']}")
        return done

    def deploy(self, node: str) -> dict[str, Any]:
        """Deploy a (fake-hardware) node and wait until it is ``active``."""
        response = self.target.set_provision(node, "active")
        self.assertEqual(202, response.status_code, response.text)
        return self.target.wait_node(node, settled("active"), what="active")

    def undeploy(self, node: str) -> dict[str, Any]:
        """Tear a node down and wait until it is ``available`` again."""
        response = self.target.set_provision(node, "deleted")
        self.assertEqual(202, response.status_code, response.text)
        return self.target.wait_node(node, settled("available"),
                                     what="available")

    def maintenance(self, node: str, on: bool) -> None:
        """Switch maintenance mode on or off."""
        if on:
            response = self.target.request(
                "PUT", f"/v1/nodes/{node}/maintenance", {"reason": "test"})
        else:
            response = self.target.request(
                "DELETE", f"/v1/nodes/{node}/maintenance")
        self.assertEqual(202, response.status_code, response.text)

    def assertError(self, response: requests.Response, status: int,
                    *fragments: str) -> str:
        """Check status, Ironic's error body shape and message fragments.

        Ironic's body is ``{"error_message": "<JSON string>"}`` whose inner
        document has ``faultstring`` (or, for some version errors,
        ``description``).  Returns the message.
        """
        self.assertEqual(
            status, response.status_code,
            f"{self.target.name}: expected {status}, got "
            f"{response.status_code}: {response.text[:1000]}")
        try:
            body = response.json()
        except ValueError:
            self.fail(f"{self.target.name}: error body is not JSON: "
                      f"{response.text[:500]!r}")
        self.assertIn("error_message", body)
        inner = body["error_message"]
        if isinstance(inner, str) and inner.startswith("{"):
            inner = json.loads(inner)
        if isinstance(inner, dict) and "faultstring" in inner:
            self.assertIn(inner.get("faultcode"), ("Client", "Server"))
        message = targets.error_message(response)
        for fragment in fragments:
            self.assertIn(fragment, message,
                          f"{self.target.name}: message {message!r}")
        return message

    def assertReserved(self, allocation: dict[str, Any]) -> dict[str, Any]:
        """An active allocation and its node point at each other."""
        self.assertEqual("active", allocation["state"], allocation)
        self.assertEqual(None, allocation["last_error"])
        node = self.target.node(allocation["node_uuid"])
        self.assertEqual(allocation["uuid"], node["allocation_uuid"])
        self.assertEqual(allocation["uuid"], node["instance_uuid"])
        return node

    def assertReleased(self, node_ident: str, allocation_uuid: str) -> None:
        """The allocation is gone and its node is free again."""
        node = self.target.node(node_ident)
        self.assertEqual(None, node["allocation_uuid"])
        self.assertEqual(None, node["instance_uuid"])
        response = self.target.request(
            "GET", f"/v1/allocations/{allocation_uuid}")
        self.assertError(response, 404, allocation_uuid, "could not be found")


def settled(state: str) -> Any:
    """A node predicate: in ``state`` with no transition under way."""
    def check(node: dict[str, Any]) -> bool:
        return bool(node["provision_state"] == state
                    and not node.get("target_provision_state"))
    return check
