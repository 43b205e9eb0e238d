"""The broker's decisions that need no Ironic: how a node document
becomes mirror facts, which request headers go on to Ironic, which
requests change a node, and Ironic's error text."""

from __future__ import annotations

import json

import testtools

from baremetal_allocclient.server.api.versions import HEADER, Version
from baremetal_allocclient.server.broker import ironic_client, mirror
from baremetal_allocclient.server.broker import passthrough as pt

_NODE = {
    "uuid": "6d5b1f3e-8a0e-4a5b-9b7b-1d1e2f3a4b5c", "name": "n1",
    "driver": "fake-hardware", "resource_class": "gold",
    "provision_state": "available", "target_provision_state": None,
    "power_state": "power off", "target_power_state": None,
    "maintenance": False, "maintenance_reason": None, "owner": "p1",
    "lessee": None, "conductor_group": None, "shard": "s1",
    "properties": {"cpus": 8}, "instance_info": {}, "protected": False,
    "retired": False, "description": None, "last_error": None,
    "fault": None, "traits": ["CUSTOM_B", "CUSTOM_A", "CUSTOM_A"],
    "instance_uuid": None, "allocation_uuid": None,
}


class TestFacts(testtools.TestCase):

    def test_a_node_document_becomes_the_mirror_columns(self) -> None:
        facts = mirror.facts(_NODE)
        self.assertEqual(_NODE["uuid"], facts.uuid)
        self.assertEqual(("CUSTOM_A", "CUSTOM_B"), facts.traits)
        self.assertEqual("gold", facts.columns["resource_class"])
        self.assertEqual({"cpus": 8}, facts.columns["properties"])
        # Ironic's null conductor group is the server's empty one.
        self.assertEqual("", facts.columns["conductor_group"])
        self.assertEqual(set(mirror.COPIED), set(facts.columns))

    def test_a_held_node_keeps_who_holds_it(self) -> None:
        held = mirror.facts({**_NODE, "instance_uuid": "i-1",
                             "allocation_uuid": "a-1"})
        self.assertEqual(("i-1", "a-1"),
                         (held.instance_uuid, held.allocation_uuid))

    def test_missing_fields_take_their_defaults(self) -> None:
        facts = mirror.facts({"uuid": _NODE["uuid"]})
        self.assertEqual(("enroll", False, {}, ()), (
            facts.columns["provision_state"], facts.columns["maintenance"],
            facts.columns["properties"], facts.traits))


class TestPassthroughRules(testtools.TestCase):

    def test_headers_go_on_but_hop_by_hop_ones(self) -> None:
        environ = {
            "HTTP_X_AUTH_TOKEN": "tok", "HTTP_HOST": "server:6390",
            "HTTP_CONNECTION": "keep-alive", "HTTP_TRANSFER_ENCODING": "x",
            "HTTP_X_OPENSTACK_IRONIC_API_VERSION": "latest",
            "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": "2",
            "REMOTE_USER": "alice",
        }
        headers = pt.forwarded_headers(environ, Version(1, 82))
        self.assertEqual("tok", headers["X-Auth-Token"])
        self.assertEqual("server:6390", headers["Host"])
        self.assertEqual("application/json", headers["Content-Type"])
        # The version the server negotiated, not "latest".
        self.assertEqual("1.82", headers[HEADER])
        lowered = {name.lower() for name in headers}
        self.assertNotIn("connection", lowered)
        self.assertNotIn("transfer-encoding", lowered)
        self.assertNotIn("remote-user", lowered)

    def test_which_requests_change_a_node(self) -> None:
        self.assertEqual("n1", pt.changed_node(
            "PUT", "/v1/nodes/n1/states/provision"))
        self.assertEqual("n1", pt.changed_node("PATCH", "/v1/nodes/n1"))
        self.assertIsNone(pt.changed_node("GET", "/v1/nodes/n1"))
        self.assertIsNone(pt.changed_node("POST", "/v1/ports"))
        self.assertIsNone(pt.changed_node("POST", "/v1/nodes/detail"))

    def test_only_a_complete_node_refreshes_the_mirror(self) -> None:
        self.assertTrue(pt.complete_node(_NODE))
        partial = {k: v for k, v in _NODE.items() if k != "shard"}
        self.assertFalse(pt.complete_node(partial))
        self.assertFalse(pt.complete_node([_NODE]))


class TestIronicErrors(testtools.TestCase):

    def test_the_message_inside_ironic_error_document(self) -> None:
        inner = json.dumps({"faultcode": "Client",
                            "faultstring": "Node x is locked"})
        self.assertEqual("Node x is locked", ironic_client.error_message(
            {"error_message": inner}, "fallback"))
        self.assertEqual("plain", ironic_client.error_message(
            {"error_message": "plain"}, "fallback"))
        self.assertEqual("fallback", ironic_client.error_message(
            "<html>", "fallback"))
