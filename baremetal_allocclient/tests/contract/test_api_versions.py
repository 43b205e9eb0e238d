"""Versions after 1.73: node fields, retired rules, parent nodes, shards.

The expected field table below is Ironic 39's (written from its API
reference and checked on the real-Ironic target on every run), not the
reference server's own table, so a field appearing at the wrong version,
or in another order, fails on the reference target alone.
"""

from __future__ import annotations

import json
import uuid as uuidlib
from typing import Any

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets

#: Node fields in Ironic's output order, with the version adding each.
IRONIC_NODE_FIELDS: tuple[tuple[str, int], ...] = (
    ("uuid", 1), ("created_at", 1), ("updated_at", 1),
    ("automated_clean", 47), ("bios_interface", 40), ("boot_interface", 31),
    ("boot_mode", 75), ("clean_step", 7), ("conductor_group", 46),
    ("console_enabled", 1), ("console_interface", 31),
    ("disable_power_off", 95), ("deploy_interface", 31), ("deploy_step", 44),
    ("description", 51), ("driver", 1), ("driver_info", 1),
    ("driver_internal_info", 3), ("extra", 1), ("fault", 42),
    ("firmware_interface", 86), ("health", 109),
    ("inspection_finished_at", 6), ("inspection_started_at", 6),
    ("inspect_interface", 31), ("instance_info", 1), ("instance_name", 104),
    ("instance_uuid", 1), ("last_error", 1), ("lessee", 65),
    ("maintenance", 1), ("maintenance_reason", 1),
    ("management_interface", 31), ("name", 5), ("network_data", 66),
    ("network_interface", 20), ("owner", 50), ("parent_node", 83),
    ("power_interface", 31), ("power_state", 1), ("properties", 1),
    ("protected", 48), ("protected_reason", 48), ("provision_state", 1),
    ("provision_updated_at", 1), ("raid_config", 12),
    ("raid_interface", 31), ("rescue_interface", 38), ("reservation", 1),
    ("resource_class", 21), ("retired", 61), ("retired_reason", 61),
    ("secure_boot", 75), ("service_step", 87), ("shard", 82),
    ("storage_interface", 33), ("target_power_state", 1),
    ("target_provision_state", 1), ("target_raid_config", 12),
    ("traits", 37), ("vendor_interface", 31),
    # ``links`` goes just before the first of the last three present.
    ("conductor", 49), ("allocation_uuid", 52), ("chassis_uuid", 1),
)
_SUBRESOURCES = (("ports", 1), ("states", 14), ("portgroups", 24),
                 ("volume", 32))


def expected_node_keys(minor: int) -> list[str]:
    """The keys of ``GET /v1/nodes/{node}`` at 1.``minor``, in order."""
    keys: list[str] = []
    for name, since in IRONIC_NODE_FIELDS:
        if minor < since:
            continue
        if name in ("conductor", "allocation_uuid", "chassis_uuid") and (
                "links" not in keys):
            keys.append("links")
        keys.append(name)
    return keys + [sub for sub, since in _SUBRESOURCES if minor >= since]


class ApiVersionContract(base.ContractMixin):
    """What versions 1.74 to 1.115 change on the served endpoints."""

    def new_node(self, **fields: Any) -> dict[str, Any]:
        node: dict[str, Any] = self.target.expect(
            201, "POST", "/v1/nodes", {"driver": "fake-hardware", **fields})
        return node

    def patch(self, node: str, status: int, **fields: Any) -> Any:
        """PATCH ``fields`` in; the body when ``status`` is given, else
        the response."""
        ops = [{"op": "add", "path": f"/{k}", "value": v}
               for k, v in fields.items()]
        if not status:
            return self.target.request("PATCH", f"/v1/nodes/{node}", ops)
        return self.target.expect(status, "PATCH", f"/v1/nodes/{node}", ops)

    def test_node_fields_and_order_per_version(self) -> None:
        node = self.new_node()["uuid"]
        # From 1.74 on: each new field's first version and the one before.
        for minor in (1, 5, 30, 48, 49, 52, 61, 74, 75, 81, 82, 83, 85, 86,
                      94, 95, 103, 104, 108, 109, 115):
            body = self.target.expect(200, "GET", f"/v1/nodes/{node}",
                                      version=f"1.{minor}")
            self.assertEqual(expected_node_keys(minor), list(body),
                             f"{self.target.name} at 1.{minor}")
        latest = self.target.node(node)
        for field, default in (
                ("shard", None), ("parent_node", None),
                ("disable_power_off", False), ("instance_name", None),
                ("boot_mode", None), ("secure_boot", None),
                ("health", None),
                ("retired", False), ("retired_reason", None)):
            self.assertEqual(default, latest[field], field)
        # A field newer than the requested version is a 406.
        for field, since in (("shard", 82), ("parent_node", 83),
                             ("instance_name", 104), ("health", 109)):
            self.assertError(self.target.request(
                "GET", f"/v1/nodes/{node}", params={"fields": field},
                version=f"1.{since - 1}"), 406)

    def test_retired_rules(self) -> None:
        _rc, (node,) = self.enroll(1)
        uuid = node["uuid"]
        self.assertError(self.patch(uuid, 0, retired=True), 409,
                         "can not have 'retired' set in provision state "
                         "'available'")
        self.assertError(self.patch(uuid, 0, retired_reason="why"), 400,
                         "retired_reason", "retired")
        self.assertEqual(202, self.target.set_provision(
            uuid, "manage").status_code)
        self.target.wait_node(uuid, base.settled("manageable"))
        retired = self.patch(uuid, 200, retired=True, retired_reason="old")
        self.assertEqual((True, "old"), (retired["retired"],
                                         retired["retired_reason"]))
        back = self.patch(uuid, 200, retired=False)
        self.assertEqual((False, None), (back["retired"],
                                         back["retired_reason"]))

    def test_power_change_records_last_power_state_change(self) -> None:
        _rc, (node,) = self.enroll(1)
        before = node["driver_internal_info"].get(
            "last_power_state_change")
        self.assertEqual(202, self.target.set_power(
            node["uuid"], "power on").status_code)
        after = self.target.wait_node(
            node["uuid"], lambda n: n["power_state"] == "power on")
        changed = after["driver_internal_info"]["last_power_state_change"]
        self.assertRegex(changed, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
        self.assertNotEqual(before, changed)
        if before is not None:
            self.assertGreater(changed, before)

    def test_parent_node(self) -> None:
        rc, (parent, child) = self.enroll(2)
        by_name = self.patch(child["uuid"], 200, parent_node=parent["name"])
        self.assertEqual(parent["uuid"], by_name["parent_node"])
        by_uuid = self.patch(child["uuid"], 200, parent_node=parent["uuid"])
        self.assertEqual(parent["uuid"], by_uuid["parent_node"])
        missing = targets.unique("node")
        self.assertError(self.patch(child["uuid"], 0, parent_node=missing),
                         400, missing)
        self.assertError(self.target.request(
            "POST", "/v1/nodes",
            {"driver": "fake-hardware", "parent_node": missing}), 400,
            missing)

        def listed(**params: Any) -> list[str]:
            body = self.target.expect(200, "GET", "/v1/nodes", params={
                "resource_class": rc, **params})
            return sorted(n["uuid"] for n in body["nodes"])

        self.assertEqual([parent["uuid"]], listed())
        self.assertEqual(sorted([parent["uuid"], child["uuid"]]),
                         listed(include_children="True"))
        self.assertEqual([child["uuid"]], listed(parent_node=parent["uuid"]))
        # The child is available, of the class, and never allocated.
        first = self.allocate({"resource_class": rc})
        self.assertEqual(parent["uuid"], first["node_uuid"])
        second = self.allocate({"resource_class": rc})
        self.assertEqual("error", second["state"])
        self.assertIsNone(self.target.node(child["uuid"])["allocation_uuid"])

    def test_shards(self) -> None:
        one, two = targets.unique("shard"), targets.unique("shard")
        in_one = {self.new_node(shard=one)["uuid"] for _ in range(2)}
        in_two = {self.new_node(shard=two)["uuid"]}
        unsharded = self.new_node()["uuid"]
        self.assertError(self.target.request(
            "GET", "/v1/shards", version="1.81"), 404)
        counts = {s["name"]: s["count"] for s in self.target.expect(
            200, "GET", "/v1/shards")["shards"]}
        self.assertEqual((2, 1), (counts.get(one), counts.get(two)))
        self.assertNotIn(None, counts)

        def uuids(**params: str) -> set[str]:
            return {n["uuid"] for n in targets.iter_pages(
                self.target, "/v1/nodes", "nodes",
                {"fields": "uuid", "limit": 500, **params})}

        self.assertEqual(in_one, uuids(shard=one))
        self.assertEqual(in_one | in_two, uuids(shard=f"{one},{two}"))
        sharded = uuids(sharded="true")
        self.assertLessEqual(in_one | in_two, sharded)
        self.assertNotIn(unsharded, sharded)
        self.assertIn(unsharded, uuids(sharded="false"))

    def test_v1_document_per_version(self) -> None:
        served = {"chassis": 1, "nodes": 1, "ports": 1, "allocations": 52,
                  "shards": 82}
        for minor in (1, 51, 52, 81, 82, 115):
            body = self.target.expect(200, "GET", "/v1",
                                      version=f"1.{minor}")
            for collection, since in served.items():
                self.assertEqual(minor >= since, collection in body,
                                 f"{collection} at 1.{minor}")
            self.assertEqual("1.115", body["version"]["version"])
            # The keys both serve in Ironic's order; its links to itself
            # and to the API's description.
            common = [key for key in body
                      if key in ("id", "links", "media_types", "version",
                                 *served)]
            self.assertEqual(
                ["id", "links", "media_types", "chassis", "nodes", "ports",
                 "version",
                 *(["allocations"] if minor >= 52 else []),
                 *(["shards"] if minor >= 82 else [])], common)
            self.assertEqual(["self", "describedby"],
                             [link["rel"] for link in body["links"]])

    def test_request_id_headers(self) -> None:
        """Ironic sends both request-id headers at every version, also
        around 1.107 (which only documents them), and on errors."""
        for version, path in (("1.1", "/v1/nodes"), ("1.106", "/v1/nodes"),
                              ("1.107", "/v1/nodes"), ("1.115", "/v1"),
                              ("1.115", "/v1/nodes/no-such-node")):
            response = self.target.request("GET", path, version=version)
            legacy = response.headers.get("X-OpenStack-Request-Id")
            current = response.headers.get("OpenStack-Request-Id")
            self.assertRegex(legacy or "", r"^req-[0-9a-f-]{36}$",
                             f"{version} {path}")
            self.assertEqual(legacy, current)

    def test_allocation_prefers_the_node_named_like_it(self) -> None:
        rc, nodes = self.enroll(3)
        for wanted in (nodes[2], nodes[1]):
            done = self.allocate({"resource_class": rc,
                                  "name": wanted["name"]})
            self.assertEqual(wanted["uuid"], done["node_uuid"])

    def test_create_takes_console_boot_mode_and_secure_boot(self) -> None:
        """Ironic's node create takes the three fields and shows them back
        (``boot_mode``/``secure_boot`` from 1.75); PATCH refuses them."""
        created = self.target.expect(201, "POST", "/v1/nodes", {
            "driver": "fake-hardware", "console_enabled": "yes",
            "boot_mode": "bios", "secure_boot": True})
        uuid = created["uuid"]
        self.assertEqual((True, "bios", True), (
            created["console_enabled"], created["boot_mode"],
            created["secure_boot"]))
        older = self.target.expect(200, "GET", f"/v1/nodes/{uuid}",
                                   version="1.74")
        self.assertEqual(True, older["console_enabled"])
        self.assertNotIn("boot_mode", older)
        states = self.target.expect(200, "GET", f"/v1/nodes/{uuid}/states")
        self.assertEqual((True, "bios", True), (
            states["console_enabled"], states["boot_mode"],
            states["secure_boot"]))
        self.assertNotIn("secure_boot", self.target.expect(
            200, "GET", f"/v1/nodes/{uuid}/states", version="1.74"))
        listed = self.target.expect(200, "GET", "/v1/nodes", params={
            "fields": "uuid,boot_mode,secure_boot,console_enabled",
            "limit": 1000})["nodes"]
        self.assertEqual([("bios", True, True)], [
            (n["boot_mode"], n["secure_boot"], n["console_enabled"])
            for n in listed if n["uuid"] == uuid])
        for field, value in (("boot_mode", "uefi"), ("secure_boot", False),
                             ("console_enabled", False)):
            self.assertError(self.patch(uuid, 0, **{field: value}), 400,
                             f"Cannot patch /{field}. Only the following "
                             "can be updated: ")

    def test_create_values_and_versions_as_ironic_reads_them(self) -> None:
        """Any boot mode string is stored; ``secure_boot`` strings are read
        as Python's ``bool`` reads them (Ironic 39 checks only the type);
        ``console_enabled`` strings as the other node booleans."""
        for body, shown in (
                ({"boot_mode": "anything"}, ("anything", None, False)),
                ({"secure_boot": "false"}, (None, True, False)),
                ({"secure_boot": ""}, (None, False, False)),
                ({"console_enabled": "off"}, (None, None, False))):
            created = self.target.expect(
                201, "POST", "/v1/nodes", {"driver": "fake-hardware", **body})
            self.assertEqual(shown, (created["boot_mode"],
                                     created["secure_boot"],
                                     created["console_enabled"]), body)
        self.assertError(self.target.request(
            "POST", "/v1/nodes", {"driver": "fake-hardware",
                                  "console_enabled": "maybe"}), 400,
            "Invalid console_enabled: Unrecognized value 'maybe'")
        self.assertError(self.target.request(
            "POST", "/v1/nodes", {"driver": "fake-hardware",
                                  "secure_boot": 5}), 400,
            "Schema error for node: 5 is not of type 'string', 'boolean', "
            "'null'")
        # The version gate refuses a value, not a null.
        for body, version, status in (
                ({"boot_mode": "uefi"}, "1.74", 406),
                ({"secure_boot": False}, "1.74", 406),
                ({"boot_mode": None, "secure_boot": None}, "1.74", 201),
                ({"console_enabled": True}, "1.1", 201)):
            response = self.target.request(
                "POST", "/v1/nodes", {"driver": "fake-hardware", **body},
                version=version)
            self.assertEqual(status, response.status_code,
                             f"{body} at {version}: {response.text}")

    def test_boot_mode_changes_fail_on_fake_hardware(self) -> None:
        """``PUT .../states/boot_mode`` and ``secure_boot`` (1.76) are
        accepted; fake-hardware cannot do them, which ``last_error``
        says, and the node keeps its values."""
        uuid = self.new_node(boot_mode="bios", secure_boot=False)["uuid"]
        missing = targets.unique("missing")
        for path, target in (("boot_mode", "uefi"), ("secure_boot", True)):
            self.assertError(self.target.request(
                "PUT", f"/v1/nodes/{missing}/states/{path}",
                {"target": target}), 404,
                f"Node {missing} could not be found.")
            self.assertError(self.target.request(
                "PUT", f"/v1/nodes/{uuid}/states/{path}", {"target": target},
                version="1.75"), 404,
                "This endpoint is supported starting with the API version "
                "1.76")
        self.assertError(self.target.request(
            "PUT", f"/v1/nodes/{uuid}/states/boot_mode", {"target": True}),
            400, "Expected string for target: True")
        self.assertError(self.target.request(
            "PUT", f"/v1/nodes/{uuid}/states/boot_mode", {"target": "efi"}),
            400, "Invalid boot mode efi requested for node. Allowed boot "
            "modes are: bios, uefi")
        self.assertError(self.target.request(
            "PUT", f"/v1/nodes/{uuid}/states/secure_boot",
            {"target": "maybe"}), 400,
            "Invalid target: Unrecognized value 'maybe'")
        for path, target, message in (
                ("boot_mode", "uefi", "Failed to change boot mode to "
                 "'uefi: Driver fake-hardware does not support "
                 "set_boot_mode (disabled or not implemented)."),
                ("secure_boot", "on", "Failed to change secure_boot state "
                 "to 'True': Driver fake-hardware does not support "
                 "set_secure_boot_state (disabled or not implemented).")):
            response = self.target.request(
                "PUT", f"/v1/nodes/{uuid}/states/{path}", {"target": target})
            self.assertEqual(202, response.status_code, response.text)
            node = self.target.wait_node(
                uuid, lambda n, m=message: n["last_error"] == m,
                what=f"the {path} failure")
            self.assertEqual(("bios", False), (node["boot_mode"],
                                               node["secure_boot"]))

    def test_traits_below_1_37(self) -> None:
        """Before 1.37 Ironic routes ``/traits`` to the node itself."""
        uuid = self.new_node()["uuid"]
        missing = targets.unique("missing")
        self.assertError(self.target.request(
            "GET", f"/v1/nodes/{missing}/traits", version="1.36"), 404,
            f"Node {missing} could not be found.")
        self.assertError(self.target.request(
            "GET", f"/v1/nodes/{uuid}/traits", version="1.36"), 406)
        for node in (missing, uuid):
            for path in ("traits", "traits/CUSTOM_X"):
                response = self.target.request(
                    "PUT", f"/v1/nodes/{node}/{path}", {"traits": []},
                    version="1.36")
                self.assertEqual(405, response.status_code, response.text)
                self.assertEqual(
                    {"code": 405, "title": "Method Not Allowed",
                     "description": ""},
                    json.loads(response.json()["error_message"]))
                self.assertEqual("Resource could not be found.",
                                 self.assertError(self.target.request(
                                     "DELETE", f"/v1/nodes/{node}/{path}",
                                     version="1.36"), 404))
        self.assertEqual(200, self.target.request(
            "GET", f"/v1/nodes/{uuid}").status_code)


class AlignedDifferences(base.ContractMixin):
    """Answers that used to differ from Ironic's and now match them."""

    def test_allocation_uuid_that_is_an_instance_uuid(self) -> None:
        """Ironic creates the allocation (201) and fails it: ``error``."""
        rc, (free,) = self.enroll(1)
        holder = self.target.expect(
            201, "POST", "/v1/nodes", {"driver": "fake-hardware"})
        instance = str(uuidlib.uuid4())
        self.target.expect(200, "PATCH", f"/v1/nodes/{holder['uuid']}", [
            {"op": "add", "path": "/instance_uuid", "value": instance}])
        failed = self.allocate({"resource_class": rc, "uuid": instance})
        self.assertEqual(("error", None),
                         (failed["state"], failed["node_uuid"]))
        self.assertIn(f"Instance {instance} is already associated with a "
                      "node, it cannot be associated with",
                      failed["last_error"])
        self.assertIsNone(self.target.node(free["uuid"])["instance_uuid"])
        # The allocation exists now: repeating the uuid names it.
        self.assertError(self.target.request(
            "POST", "/v1/allocations", {"resource_class": rc,
                                        "uuid": instance}), 409,
            f"An allocation with UUID {instance} already exists.")

    def test_unserved_routes_use_the_framework_error_shape(self) -> None:
        """Paths and methods not served (at a version): pecan's body."""
        node = self.target.expect(
            201, "POST", "/v1/nodes", {"driver": "fake-hardware"})["uuid"]
        for status, title, method, path, version in (
                (404, "Not Found", "GET", f"/v1/nodes/{node}/vifs", "1.27"),
                (404, "Not Found", "GET", f"/v1/nodes/{node}/firmware",
                 "1.85"),
                (404, "Not Found", "DELETE", f"/v1/nodes/{node}/allocation",
                 "1.51"),
                (404, "Not Found", "GET", "/v1/no-such-collection", "1.1"),
                (405, "Method Not Allowed", "PUT", f"/v1/nodes/{node}",
                 "1.115"),
                (405, "Method Not Allowed", "POST", "/v1/shards", "1.115")):
            response = self.target.request(method, path, {},
                                           version=version)
            self.assertEqual(status, response.status_code, path)
            self.assertEqual({"code": status, "title": title,
                              "description": ""},
                             json.loads(response.json()["error_message"]),
                             f"{method} {path} at {version}")

    def test_node_booleans_as_ironic_reads_them(self) -> None:
        """Booleans may be strings oslo reads as booleans; maintenance can
        be set on create; other strings are a 400 in oslo's wording."""
        created = self.target.expect(201, "POST", "/v1/nodes", {
            "driver": "fake-hardware", "maintenance": "yes",
            "retired": "False", "disable_power_off": "1"})
        self.assertEqual((True, False, True), (
            created["maintenance"], created["retired"],
            created["disable_power_off"]))
        patched = self.target.expect(
            200, "PATCH", f"/v1/nodes/{created['uuid']}",
            [{"op": "replace", "path": "/protected", "value": "off"},
             {"op": "replace", "path": "/maintenance", "value": "off"}])
        self.assertEqual((False, False), (patched["protected"],
                                         patched["maintenance"]))
        self.assertError(self.target.request(
            "PATCH", f"/v1/nodes/{created['uuid']}",
            [{"op": "replace", "path": "/protected", "value": "t"}]), 409,
            f"Node {created['uuid']} can only be made protected in "
            "provision states 'active' or 'rescue', the current state is "
            "'enroll'")
        acceptable = ("acceptable values are: '0', '1', 'f', 'false', 'n', "
                      "'no', 'off', 'on', 't', 'true', 'y', 'yes'")
        self.assertError(self.target.request(
            "POST", "/v1/nodes", {"driver": "fake-hardware",
                                  "retired": "maybe"}), 400,
            "Invalid retired: Unrecognized value 'maybe', " + acceptable)
        self.assertError(self.target.request(
            "PATCH", f"/v1/nodes/{created['uuid']}",
            [{"op": "replace", "path": "/retired", "value": "x"}]), 400,
            "Invalid retired: Unrecognized value 'x', " + acceptable)
        self.assertError(self.target.request(
            "PATCH", f"/v1/nodes/{created['uuid']}",
            [{"op": "replace", "path": "/extra", "value": "x"}]), 400,
            "Schema error for patch: 'x' is not of type 'object', 'null'")

    def test_schema_error_names_the_possible_root_cause(self) -> None:
        node = self.target.expect(
            201, "POST", "/v1/nodes", {"driver": "fake-hardware"})["uuid"]
        response = self.target.request("POST", "/v1/ports", {
            "node_uuid": node, "address": "52:54:00:12:34:56",
            "local_link_connection": {"port_id": 5}})
        self.assertError(
            response, 400, "Schema error for local_link_connection: ",
            "is not valid under any of the given schemas. Possible root "
            "cause: 'switch_id' is a required property")
        cause = ("is not valid under any of the given schemas. Possible "
                 "root cause: '{}' does not match '^CUSTOM_[A-Z0-9_]+$'")
        for method, path, body, prefix, trait in (
                ("PUT", f"/v1/nodes/{node}/traits", {"traits": ["bad one"]},
                 "Schema error for body: ", "bad one"),
                ("PUT", f"/v1/nodes/{node}/traits/lower", None,
                 "Schema error for trait: ", "lower"),
                ("POST", "/v1/allocations", {"resource_class": "x",
                                             "traits": ["bad one"]},
                 "Schema error: ", "bad one")):
            self.assertEqual(
                f"{prefix}'{trait}' {cause.format(trait)}",
                self.assertError(self.target.request(method, path, body),
                                 400), path)


globals().update(targets.per_target(ApiVersionContract))
globals().update(targets.per_target(AlignedDifferences))
