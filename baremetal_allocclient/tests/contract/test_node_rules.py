"""Node rules ironic-tempest-plugin checks (issue 51), on both targets:
protection, the state names and documents of old versions, and the
``fault`` and ``conductor`` list filters."""

from __future__ import annotations

from baremetal_allocclient.tests.contract import base
from baremetal_allocclient.tests.functional import targets


class NodeRulesContract(base.ContractMixin):

    def test_a_protected_node_is_not_undeployed_rebuilt_or_deleted(
            self) -> None:
        _rc, (node,) = self.enroll()
        uuid = node["uuid"]
        patch = "PATCH", f"/v1/nodes/{uuid}"
        # Not while available, and no reason without protection.
        self.assertError(self.target.request(
            *patch, [{"op": "replace", "path": "/protected", "value": True}]),
            409, "can only be made protected")
        self.deploy(uuid)
        self.assertError(self.target.request(
            *patch, [{"op": "replace", "path": "/protected_reason",
                      "value": "reason!"}]),
            400, "protected_reason field can only be set when protected is "
                 "True")
        self.target.expect(200, *patch, [
            {"op": "replace", "path": "/protected", "value": True},
            {"op": "replace", "path": "/protected_reason",
             "value": "reason!"}])
        for verb in ("deleted", "rebuild"):
            self.assertError(self.target.set_provision(uuid, verb), 403,
                             f"Node {uuid} is protected and cannot be "
                             "undeployed, rebuilt or deleted")
        self.target.expect(200, *patch, [
            {"op": "replace", "path": "/maintenance", "value": True}])
        self.assertError(self.target.request("DELETE", f"/v1/nodes/{uuid}"),
                         403, "is protected")
        # Unprotected, its reason goes, and it is torn down.
        unprotected = self.target.expect(200, *patch, [
            {"op": "replace", "path": "/protected", "value": False},
            {"op": "replace", "path": "/maintenance", "value": False}])
        self.assertIsNone(unprotected["protected_reason"])
        self.undeploy(uuid)

    def test_rebuild_deploys_the_node_again(self) -> None:
        _rc, (node,) = self.enroll()
        self.deploy(node["uuid"])
        response = self.target.set_provision(node["uuid"], "rebuild")
        if not self.is_reference:
            # Ironic 39 under noauth fails every rebuild (a 500 naming
            # its own variable; api-compatibility.rst): seen here so that
            # a fixed Ironic is noticed.
            self.assertEqual(500, response.status_code, response.text)
            self.assertIn("auto_lessee", response.text)
            self.undeploy(node["uuid"])
            return
        self.assertEqual(202, response.status_code, response.text)
        self.target.wait_node(node["uuid"], base.settled("active"),
                              what="active")
        self.undeploy(node["uuid"])

    def test_old_versions_name_and_show_states_as_ironic(self) -> None:
        _rc, (node,) = self.enroll()
        uuid = node["uuid"]
        # Before 1.2 an available node's state is null, in the node and
        # in its states; RAID configuration from 1.12 in both.
        for version, state in (("1.1", None), ("1.2", "available")):
            shown = self.target.expect(200, "GET", f"/v1/nodes/{uuid}",
                                       version=version)
            states = self.target.expect(200, "GET",
                                        f"/v1/nodes/{uuid}/states",
                                        version=version)
            self.assertEqual((state, state), (shown["provision_state"],
                                              states["provision_state"]))
            self.assertNotIn("raid_config", states)
            self.assertNotIn("raid_config", shown)
        states = self.target.expect(200, "GET", f"/v1/nodes/{uuid}/states",
                                    version="1.12")
        self.assertEqual(({}, {}), (states["raid_config"],
                                    states["target_raid_config"]))

    def test_the_fault_filter_knows_ironics_faults(self) -> None:
        self.assertError(self.target.request(
            "GET", "/v1/nodes?fault=somefake", version="1.42"), 400,
            'Unrecognized fault "somefake" is specified, allowed faults '
            "are ('power failure', 'clean failure', 'rescue abort "
            "failure', 'service failure')")
        self.target.expect(200, "GET", "/v1/nodes?fault=power%20failure",
                           version="1.42")

    def test_nodes_by_conductor(self) -> None:
        rc, (node,) = self.enroll()
        conductor = self.target.node(node["uuid"])["conductor"]
        self.assertTrue(conductor)

        def listed(name: str) -> list[str]:
            found = self.target.expect(
                200, "GET", f"/v1/nodes?resource_class={rc}&conductor={name}",
                version="1.49")
            return [n["uuid"] for n in found["nodes"]]

        self.assertEqual([node["uuid"]], listed(conductor))
        self.assertEqual([], listed(targets.unique("elsewhere")))
        self.assertError(self.target.request(
            "GET", f"/v1/nodes?conductor={conductor}", version="1.48"), 406)


globals().update(targets.per_target(NodeRulesContract, broker=False))
