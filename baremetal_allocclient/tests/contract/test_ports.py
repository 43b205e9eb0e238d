"""Ports: create, list, filter, show, update and delete, on both targets.

MAC addresses are random per test (``_mac``) so tests never collide on the
shared targets, where an address is unique across all nodes.
"""

from __future__ import annotations

import random
from typing import Any

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets

_V = "1.73"


def _mac() -> str:
    """A random locally administered unicast MAC address."""
    octets = [0x02] + [random.randrange(256) for _ in range(5)]
    return ":".join(f"{o:02x}" for o in octets)


class PortContract(base.ContractMixin):
    """The port API as clients (openstacksdk, openstack.cloud) use it."""

    def node(self) -> dict[str, Any]:
        """A fresh fake-hardware node in ``enroll``."""
        created: dict[str, Any] = self.target.expect(
            201, "POST", "/v1/nodes",
            {"driver": "fake-hardware", "name": targets.unique("node")})
        return created

    def port(self, node: str, address: str | None = None, *,
             version: str = _V, **extra: Any) -> dict[str, Any]:
        """POST a port and insist on 201."""
        body = {"node_uuid": node, "address": address or _mac(), **extra}
        created: dict[str, Any] = self.target.expect(
            201, "POST", "/v1/ports", body, version=version)
        return created

    def test_create_show_and_defaults(self) -> None:
        node = self.node()
        address = _mac()
        created = self.port(node["uuid"], address.upper(),
                            extra={"nic": "eth0"})
        self.assertEqual(address, created["address"])  # lower case
        self.assertEqual(node["uuid"], created["node_uuid"])
        self.assertEqual({"nic": "eth0"}, created["extra"])
        self.assertIs(True, created["pxe_enabled"])
        self.assertIs(False, created["is_smartnic"])
        self.assertEqual({}, created["local_link_connection"])
        self.assertEqual({}, created["internal_info"])
        self.assertIsNone(created["physical_network"])
        self.assertIsNone(created["portgroup_uuid"])
        self.assertNotIn("name", created)  # 1.88
        shown = self.target.expect(200, "GET", f"/v1/ports/{created['uuid']}",
                                   version=_V)
        self.assertEqual(created, {**shown, "updated_at": None})
        self.assertError(self.target.request(
            "GET", f"/v1/ports/{address}", version=_V), 400,
            f"Expected UUID or name for port_ident: {address}")
        self.assertError(self.target.request(
            "GET", f"/v1/ports/{targets.unique('port')}", version=_V), 404,
            "could not be found")
        only = self.target.expect(
            200, "GET", f"/v1/ports/{created['uuid']}",
            params={"fields": "uuid,node_uuid"}, version=_V)
        self.assertEqual(["links", "node_uuid", "uuid"], sorted(only))

    def test_fields_per_version(self) -> None:
        node = self.node()
        created = self.port(node["uuid"])
        path = f"/v1/ports/{created['uuid']}"
        old = self.target.expect(200, "GET", path, version="1.1")
        self.assertEqual(
            ["address", "created_at", "extra", "links", "node_uuid",
             "updated_at", "uuid"], sorted(old))
        mid = self.target.expect(200, "GET", path, version="1.34")
        self.assertIn("physical_network", mid)
        self.assertNotIn("is_smartnic", mid)
        self.assertIn("portgroup_uuid", mid)
        self.assertError(self.target.request(
            "GET", path, params={"fields": "uuid"}, version="1.7"), 406)
        self.assertError(self.target.request(
            "GET", path, params={"fields": "pxe_enabled"}, version="1.18"),
            406)
        self.assertError(self.target.request(
            "GET", path, params={"fields": "name"}, version=_V), 406)
        self.assertError(self.target.request(
            "GET", path, params={"fields": "nonsense"}, version=_V), 400,
            'Field(s) "nonsense" are not valid')
        response = self.target.request(
            "POST", "/v1/ports", {"node_uuid": node["uuid"],
                                  "address": _mac(), "pxe_enabled": False},
            version="1.18")
        self.assertError(response, 406)

    def test_list_filters_detail_and_node_subresource(self) -> None:
        first, second = self.node(), self.node()
        a = self.port(first["uuid"])
        b = self.port(first["uuid"])
        c = self.port(second["uuid"])
        mine = {a["uuid"], b["uuid"], c["uuid"]}

        def listed(path: str, **params: str) -> list[dict[str, Any]]:
            body = self.target.expect(200, "GET", path, params=params,
                                      version=_V)
            return [p for p in body["ports"] if p["uuid"] in mine]

        by_node = listed("/v1/ports", node=first["name"])
        self.assertEqual(sorted([a["uuid"], b["uuid"]]),
                         sorted(p["uuid"] for p in by_node))
        self.assertEqual(["address", "links", "uuid"], sorted(by_node[0]))
        self.assertEqual([c["uuid"]], [p["uuid"] for p in listed(
            "/v1/ports", node_uuid=second["uuid"])])
        self.assertEqual([b["uuid"]], [p["uuid"] for p in listed(
            "/v1/ports", address=b["address"].upper())])
        self.assertEqual([], listed("/v1/ports", address=_mac()))
        sub = listed(f"/v1/nodes/{second['uuid']}/ports")
        self.assertEqual([c["uuid"]], [p["uuid"] for p in sub])
        detail = listed(f"/v1/nodes/{first['uuid']}/ports/detail")
        self.assertEqual({first["uuid"]}, {p["node_uuid"] for p in detail})
        self.assertIn("pxe_enabled", detail[0])
        full = listed("/v1/ports/detail", node=second["uuid"])
        self.assertEqual(c, {**full[0], "updated_at": None})
        self.assertEqual(full, listed("/v1/ports", node=second["uuid"],
                                      detail="true"))
        fields = listed("/v1/ports", node=first["uuid"],
                        fields="uuid,node_uuid,extra")
        self.assertEqual(["extra", "links", "node_uuid", "uuid"],
                         sorted(fields[0]))
        self.assertError(self.target.request(
            "GET", "/v1/ports", params={"address": "not-a-mac"},
            version=_V), 400, "Expected valid MAC address for address: "
                              "not-a-mac")
        self.assertError(self.target.request(
            "GET", "/v1/ports", params={"node": targets.unique("gone")},
            version=_V), 404, "could not be found")
        self.assertError(self.target.request(
            "GET", "/v1/ports", params={"node_uuid": "nope"}, version=_V),
            400, "Expected UUID for node_uuid: nope")
        self.assertEqual([c["uuid"]], [p["uuid"] for p in listed(
            "/v1/ports", node_uuid=second["uuid"], node=first["uuid"])])

    def test_pagination(self) -> None:
        """Pages by marker.  Ironic's ``next`` link drops the ``node``
        filter (the second page lists every port); the reference keeps
        it, as it does for nodes and allocations."""
        node = self.node()
        made = sorted(self.port(node["uuid"])["uuid"] for _ in range(3))
        first = self.target.expect(
            200, "GET", "/v1/ports", version=_V,
            params={"node": node["uuid"], "limit": "2", "sort_key": "uuid"})
        self.assertEqual(made[:2], [p["uuid"] for p in first["ports"]])
        self.assertIn(f"marker={made[1]}", first["next"])
        second = self.target.expect(
            200, "GET", first["next"][len(self.target.endpoint):],
            version=_V)
        listed = [p["uuid"] for p in second["ports"]]
        if self.is_reference:
            self.assertEqual(made[2:], listed)
            self.assertNotIn("next", second)
        else:
            # Every port after the marker, whatever its node.
            self.assertNotIn(f"node={node['uuid']}", first["next"])
            self.assertTrue(all(u > made[1] for u in listed), listed)
        self.assertError(self.target.request(
            "GET", "/v1/ports", params={"sort_key": "extra"}, version=_V),
            400, "is an invalid field for sorting")
        response = self.target.request(
            "GET", "/v1/ports", params={"sort_key": "node_uuid"}, version=_V)
        if self.is_reference:
            self.assertError(response, 400, "is an invalid field for sorting")
        else:  # Ironic 39 sends it to the database
            self.assertError(response, 500)

    def test_mac_validation_and_uniqueness(self) -> None:
        node = self.node()
        for bad in ("11:22:33:44:55", "11-22-33-44-55-66",
                    "112233445566", "gg:22:33:44:55:66"):
            response = self.target.request(
                "POST", "/v1/ports", {"node_uuid": node["uuid"],
                                      "address": bad}, version=_V)
            self.assertError(response, 400,
                             f"Expected valid MAC address for address: {bad}")
        taken = self.port(node["uuid"])
        for address in (taken["address"], taken["address"].upper()):
            response = self.target.request(
                "POST", "/v1/ports", {"node_uuid": self.node()["uuid"],
                                      "address": address}, version=_V)
            self.assertError(response, 409, "A port with MAC address "
                             f"{taken['address']} already exists.")
        other = self.port(node["uuid"])
        response = self.target.request(
            "PATCH", f"/v1/ports/{other['uuid']}",
            [{"op": "replace", "path": "/address",
              "value": taken["address"]}], version=_V)
        self.assertError(response, 409, "already exists")
        response = self.target.request(
            "POST", "/v1/ports", {"node_uuid": node["uuid"],
                                  "address": _mac(), "uuid": taken["uuid"]},
            version=_V)
        self.assertError(response, 409,
                         f"A port with UUID {taken['uuid']} already exists.")

    def test_create_errors(self) -> None:
        node = self.node()
        for body, fragment in (
            ({"address": _mac()}, "Schema error for port"),
            ({"node_uuid": node["uuid"]}, "'address' is a required"),
            ({"node_uuid": node["uuid"], "address": _mac(), "bogus": 1},
             "Schema error for port"),
            ({"node_uuid": "not-a-uuid", "address": _mac()},
             "Expected UUID for node_uuid: not-a-uuid"),
            ({"node_uuid": node["uuid"], "address": _mac(),
              "pxe_enabled": "maybe"}, "Invalid pxe_enabled"),
            ({"node_uuid": node["uuid"], "address": _mac(),
              "local_link_connection": {"port_id": "p1"}},
             "Schema error for local_link_connection"),
            ({"node_uuid": node["uuid"], "address": _mac(),
              "physical_network": ""}, "A non-empty value is required"),
        ):
            response = self.target.request("POST", "/v1/ports", body,
                                           version=_V)
            self.assertError(response, 400, fragment)
        missing = "5c9dcd04-2073-49bc-9618-99ae634d8971"
        response = self.target.request(
            "POST", "/v1/ports", {"node_uuid": missing, "address": _mac()},
            version=_V)
        self.assertError(response, 400, f"Node {missing} could not be found")
        response = self.target.request(
            "POST", "/v1/ports", {"node_ident": node["name"],
                                  "address": _mac()}, version=_V)
        self.assertError(response, 406)

    def test_patch(self) -> None:
        node = self.node()
        created = self.port(node["uuid"])
        path = f"/v1/ports/{created['uuid']}"
        new_mac = _mac()
        patched = self.target.expect(200, "PATCH", path, [
            {"op": "replace", "path": "/address", "value": new_mac.upper()},
            {"op": "add", "path": "/extra/answer", "value": 42},
            {"op": "replace", "path": "/pxe_enabled", "value": False},
            {"op": "add", "path": "/local_link_connection",
             "value": {"switch_id": "0a:1b:2c:3d:4e:5f", "port_id": "Eth1"}},
            {"op": "add", "path": "/physical_network", "value": "physnet1"},
        ], version=_V)
        self.assertEqual(new_mac, patched["address"])
        self.assertEqual({"answer": 42}, patched["extra"])
        self.assertIs(False, patched["pxe_enabled"])
        self.assertEqual("physnet1", patched["physical_network"])
        self.assertIsNotNone(patched["updated_at"])
        self.assertEqual(patched, self.target.expect(
            200, "GET", path, version=_V))
        removed = self.target.expect(200, "PATCH", path, [
            {"op": "remove", "path": "/extra"},
            {"op": "remove", "path": "/physical_network"},
        ], version=_V)
        self.assertEqual({}, removed["extra"])
        self.assertIsNone(removed["physical_network"])
        other = self.node()
        response = self.target.request("PATCH", path, [
            {"op": "replace", "path": "/node_uuid", "value": other["uuid"]},
        ], version=_V)
        if self.is_reference:
            self.assertEqual(other["uuid"], response.json()["node_uuid"])
        else:  # Ironic 39 fails moving a port to another node alone
            self.assertError(response, 500, "'address'")
        self.assertError(self.target.request("PATCH", path, [
            {"op": "replace", "path": "/uuid", "value": other["uuid"]},
        ], version=_V), 400, "Cannot patch /uuid.")
        self.assertError(self.target.request("PATCH", path, [
            {"op": "replace", "path": "/address", "value": "nope"},
        ], version=_V), 400, "Expected valid MAC address for address: nope")
        self.assertError(self.target.request("PATCH", path, [
            {"op": "replace", "path": "/pxe_enabled", "value": True},
        ], version="1.18"), 406)
        old = self.target.expect(200, "PATCH", path, [
            {"op": "add", "path": "/extra/old", "value": 1}], version="1.1")
        self.assertEqual({"old": 1}, old["extra"])
        self.assertNotIn("pxe_enabled", old)
        self.assertError(self.target.request("PATCH", path, [
            {"op": "remove", "path": "/address"}], version=_V), 400,
            "Schema error for patch: 'address' is a required property")
        unchanged = self.target.expect(200, "PATCH", path, [
            {"op": "remove", "path": "/node_uuid"}], version=_V)
        self.assertEqual(old["node_uuid"], unchanged["node_uuid"])
        missing = "5c9dcd04-2073-49bc-9618-99ae634d8971"
        self.assertError(self.target.request("PATCH", path, [
            {"op": "replace", "path": "/node_uuid", "value": missing}],
            version=_V), 400, f"Unable to apply the requested node_uuid "
                              f"'{missing}'. Requested value was invalid.")

    def test_connectivity_needs_a_manageable_node(self) -> None:
        _rc, (node,) = self.enroll(1)
        created = self.port(node["uuid"])
        path = f"/v1/ports/{created['uuid']}"
        response = self.target.request("PATCH", path, [
            {"op": "replace", "path": "/pxe_enabled", "value": False}],
            version=_V)
        self.assertError(response, 409, "can not have any connectivity "
                         "attributes", "The current state is available.")
        self.target.expect(200, "PATCH", path, [
            {"op": "add", "path": "/extra/k", "value": "v"}], version=_V)
        self.maintenance(node["uuid"], True)
        self.target.expect(200, "PATCH", path, [
            {"op": "replace", "path": "/pxe_enabled", "value": False}],
            version=_V)

    def test_delete_and_node_delete_cascade(self) -> None:
        node = self.node()
        kept = self.port(node["uuid"])
        dropped = self.port(node["uuid"])
        self.target.expect(204, "DELETE", f"/v1/ports/{dropped['uuid']}",
                           version=_V)
        self.assertError(self.target.request(
            "GET", f"/v1/ports/{dropped['uuid']}", version=_V), 404,
            f"Port {dropped['uuid']} could not be found.")
        self.assertError(self.target.request(
            "DELETE", f"/v1/ports/{dropped['uuid']}", version=_V), 404)
        self.target.expect(204, "DELETE", f"/v1/nodes/{node['uuid']}")
        self.assertError(self.target.request(
            "GET", f"/v1/ports/{kept['uuid']}", version=_V), 404)
        # The address is free again.
        self.port(self.node()["uuid"], kept["address"])


# The broker passes these routes through to Ironic unchanged: the
# Ironic target checks its answers.
globals().update(targets.per_target(PortContract, broker=False))
