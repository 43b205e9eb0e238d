"""Pure parts of the port API: MAC rules, field gates, body checks."""

from __future__ import annotations

import testtools
from sqlalchemy import func, select

from baremetal_allocclient.server.api import auth
from baremetal_allocclient.server.api.auth import ENVIRON_KEY, Principal
from baremetal_allocclient.server.api.errors import ApiError, as_api_error
from baremetal_allocclient.server.db.models import Node, NodeVif, Port
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.domain.errors import DomainError, Invalid
from baremetal_allocclient.server.ironic import port_rules, views
from baremetal_allocclient.server.ironic.handlers import ports
from baremetal_allocclient.tests.fixtures.wsgi import WsgiApp
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase


class MacTests(testtools.TestCase):
    def test_colon_separated_six_octets_lower_cased(self) -> None:
        self.assertEqual("aa:bb:cc:00:11:22",
                         identifiers.normalize_mac("AA:bb:CC:00:11:22"))

    def test_everything_else_is_refused(self) -> None:
        for bad in ("aa:bb:cc:00:11", "aa-bb-cc-00-11-22", "aabbcc001122",
                    "aa:bb:cc:00:11:22:33", "gg:bb:cc:00:11:22", "",
                    " aa:bb:cc:00:11:22", None, 12):
            self.assertIsNone(identifiers.normalize_mac(bad), bad)


class FieldTests(testtools.TestCase):
    def _status(self, fields: list[str], minor: int) -> int:
        try:
            views.check_port_fields(fields, minor)
        except ApiError as exc:
            return exc.status
        return 200

    def test_version_gates_come_before_unknown_names(self) -> None:
        self.assertEqual(406, self._status(["uuid"], 7))
        self.assertEqual(200, self._status(["uuid", "links"], 8))
        self.assertEqual(406, self._status(["pxe_enabled"], 18))
        self.assertEqual(200, self._status(["pxe_enabled"], 19))
        self.assertEqual(406, self._status(["is_smartnic"], 52))
        self.assertEqual(406, self._status(["name", "nonsense"], 73))
        self.assertEqual(400, self._status(["nonsense"], 73))

    def test_body_fields_newer_than_the_version_are_406(self) -> None:
        for body, minor in (({"physical_network": "x"}, 33),
                            ({"node_ident": "n"}, 73),
                            ({"local_link_connection": {
                                "network_type": "unmanaged"}}, 63)):
            error = self.assertRaises(
                ApiError, ports.check_version_fields, body, minor)
            self.assertEqual(406, error.status)
        ports.check_version_fields({"physical_network": "x"}, 34)


class NormalizedTests(testtools.TestCase):
    def test_values_are_normalised(self) -> None:
        result = port_rules.normalized({
            "address": "AA:BB:CC:DD:EE:FF", "pxe_enabled": "false",
            "node_uuid": "5C9DCD04-2073-49BC-9618-99AE634D8971"})
        self.assertEqual("aa:bb:cc:dd:ee:ff", result["address"])
        self.assertIs(False, result["pxe_enabled"])
        self.assertEqual("5c9dcd04-2073-49bc-9618-99ae634d8971",
                         result["node_uuid"])

    def test_ironic_wording_for_bad_values(self) -> None:
        for body, message in (
            ({"address": "x"}, "Expected valid MAC address for address: x"),
            ({"address": "aa:bb:cc:dd:ee:ff", "uuid": "u"},
             "Expected UUID for uuid: u"),
            ({"address": "aa:bb:cc:dd:ee:ff", "is_smartnic": "perhaps"},
             "Invalid is_smartnic"),
            ({"address": "aa:bb:cc:dd:ee:ff",
              "local_link_connection": {"switch_id": "s"}},
             "Schema error for local_link_connection"),
        ):
            error = self.assertRaises(Invalid, port_rules.normalized, body)
            self.assertEqual(400, as_api_error(error).status)
            self.assertIn(message, error.message)

    def test_local_link_variants(self) -> None:
        for link in ({}, {"switch_id": "s", "port_id": "p"},
                     {"hostname": "h", "port_id": "p"},
                     {"network_type": "unmanaged"}):
            port_rules.normalized({"address": "aa:bb:cc:dd:ee:ff",
                              "local_link_connection": link})


class MemberTests(testtools.TestCase):
    def test_members_only_read_ports(self) -> None:
        self.assertTrue(auth.member_may("GET", "/v1/ports"))
        self.assertTrue(auth.member_may("GET", "/v1/nodes/n/ports"))
        for method in ("POST", "PATCH", "DELETE"):
            self.assertFalse(auth.member_may(method, "/v1/ports/x"))
        self.assertFalse(auth.member_may("POST", "/v1/nodes/n/vifs"))


class NodeDeletionTests(testtools.TestCase):
    """Deleting a node leaves none of its ports or VIFs behind."""

    def test_ports_and_vifs_go_with_the_node(self) -> None:
        db = self.useFixture(SQLiteDatabase()).db
        client = self.useFixture(WsgiApp(db, "t")).client
        headers = {"X-OpenStack-Ironic-API-Version": "1.73"}
        uuids = []
        for mac in ("02:00:00:00:00:01", "02:00:00:00:00:02"):
            node = client.post("/v1/nodes", json={"driver": "fake-hardware"},
                               headers=headers).json
            assert node is not None
            uuids.append(node["uuid"])
            self.assertEqual(201, client.post("/v1/ports", json={
                "node_uuid": node["uuid"], "address": mac},
                headers=headers).status_code)
            self.assertEqual(204, client.post(
                f"/v1/nodes/{node['uuid']}/vifs", json={"id": "v"},
                headers=headers).status_code)
        self.assertEqual(204, client.delete(
            f"/v1/nodes/{uuids[0]}", headers=headers).status_code)
        with db.read() as session:
            for model in (Port, NodeVif):
                self.assertEqual(1, session.scalar(
                    select(func.count()).select_from(model)))


class UpdateRuleTests(testtools.TestCase):
    """Ironic's conductor rules for changing a port (pure)."""

    def _status(self, state: str, changed: set[str], maintenance: bool = False,
                instance: str | None = None) -> int:
        node = Node(uuid="n", provision_state=state, maintenance=maintenance,
                    instance_uuid=instance)
        try:
            port_rules.check_update_allowed(Port(uuid="p"), node, changed)
        except DomainError as exc:
            return as_api_error(exc).status
        return 200

    def test_rules(self) -> None:
        cases = [
            ("inspecting", {"extra"}, False, None, 409),
            ("inspecting", {"extra"}, True, None, 409),
            ("active", {"address"}, False, None, 409),
            ("available", {"address"}, False, "i", 409),
            ("active", {"address"}, True, None, 200),
            ("available", {"pxe_enabled"}, False, None, 409),
            ("available", {"physical_network"}, True, None, 200),
            ("manageable", {"local_link_connection"}, False, None, 200),
            ("enroll", {"address", "pxe_enabled"}, False, None, 200),
            ("active", {"extra", "is_smartnic"}, False, "i", 200),
        ]
        for state, changed, maintenance, instance, status in cases:
            self.assertEqual(status, self._status(state, changed, maintenance,
                                                  instance),
                             (state, changed, maintenance, instance))


class MemberVisibilityTests(testtools.TestCase):
    """A project member sees the ports of nodes it owns or leases only."""

    def test_ports_of_other_projects_are_missing(self) -> None:
        db = self.useFixture(SQLiteDatabase()).db
        client = self.useFixture(WsgiApp(db, "t")).client
        headers = {"X-OpenStack-Ironic-API-Version": "1.73"}
        made = {}
        for owner, mac in (("p1", "02:00:00:00:01:01"),
                           ("p2", "02:00:00:00:01:02")):
            node = client.post("/v1/nodes", json={
                "driver": "fake-hardware", "owner": owner},
                headers=headers).json
            assert node is not None
            port = client.post("/v1/ports", json={
                "node_uuid": node["uuid"], "address": mac},
                headers=headers).json
            assert port is not None
            made[owner] = port["uuid"]
        member = {ENVIRON_KEY: Principal("u", "p1", False)}
        listed = client.get("/v1/ports", headers=headers,
                            environ_overrides=member).json
        assert listed is not None
        self.assertEqual([made["p1"]], [p["uuid"] for p in listed["ports"]])
        self.assertEqual(200, client.get(
            f"/v1/ports/{made['p1']}", headers=headers,
            environ_overrides=member).status_code)
        self.assertEqual(404, client.get(
            f"/v1/ports/{made['p2']}", headers=headers,
            environ_overrides=member).status_code)
