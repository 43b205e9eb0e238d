"""Stateful property test of allocation and release (reference target).

Hypothesis drives random sequences of allocation (with and without traits,
candidates and a name), deallocation, maintenance on/off, deploy, undeploy
and node deletion through the HTTP API.  A small model predicts each
outcome (which allocations must succeed, which requests must be refused),
and after every step the server's state is checked against the
invariants of the Allocation API spec:

- a node holds at most one allocation;
- ``node.instance_uuid == allocation.uuid`` exactly when
  ``node.allocation_uuid == allocation.uuid``;
- no ``active`` allocation without its node;
- no allocation stays ``allocating``;
- an ``active`` allocation's node matches its request: resource class,
  traits, candidates and the constraints extension's (a minimum on the
  ``cpus`` property, forbidden traits), read back from the server.

It runs against the reference server only (real Ironic enrolls 3-4 nodes a
second, far too slow for dozens of examples), with a fixed seed and bounded
examples and steps.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import testtools
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from baremetal_allocclient.tests.functional import targets

_TRAITS = ("CUSTOM_A", "CUSTOM_B")
#: The traits of the nodes enrolled for every example.
_NODE_TRAITS: tuple[tuple[str, ...], ...] = (
    (), ("CUSTOM_A",), ("CUSTOM_A", "CUSTOM_B"), ("CUSTOM_B",))
#: The ``cpus`` property of those nodes (changed by ``set_cpus``).
_NODE_CPUS = (4, 8, 16, 32)
_EXT = {"X-Baremetal-Alloc-Extensions": "constraints"}
_SETTLE_TIMEOUT = 10.0


@dataclasses.dataclass
class ModelNode:
    """What the model expects of one node."""

    uuid: str
    name: str
    traits: frozenset[str]
    cpus: int = 0
    active: bool = False
    maintenance: bool = False
    allocation: str | None = None


@dataclasses.dataclass
class ModelAllocation:
    """What the model expects of one allocation."""

    uuid: str
    state: str
    node: str | None
    traits: frozenset[str] = frozenset()
    candidates: frozenset[str] | None = None
    min_cpus: int | None = None
    forbidden: frozenset[str] = frozenset()


class AllocationMachine(RuleBasedStateMachine):
    """Drives one fresh set of nodes per example through the HTTP API."""

    target: targets.Target

    def __init__(self) -> None:
        super().__init__()
        self.rc = targets.unique("rc")
        self.nodes: dict[str, ModelNode] = {}
        self.allocations: dict[str, ModelAllocation] = {}

    # -- helpers -----------------------------------------------------------

    def _request(self, method: str, path: str, json: object = None
                 ) -> Any:
        return self.target.request(method, path, json)

    def _expect(self, response: Any, *statuses: int) -> None:
        if response.status_code not in statuses:
            raise AssertionError(
                f"{response.request.method} {response.request.path_url} -> "
                f"{response.status_code}, expected {statuses}: "
                f"{response.text[:1000]}")

    @staticmethod
    def _pick(index: int, eligible: list[ModelNode]) -> ModelNode | None:
        """The index-th eligible node, or None if none is.

        Draws never depend on server state (hypothesis replays choices), so
        rules draw a plain index and map it onto what is eligible now.
        """
        if not eligible:
            return None
        # Small indexes are drawn most often: reserved nodes come first,
        # so operations on them (the interesting ones) are frequent.
        ordered = sorted(eligible,
                         key=lambda n: (n.allocation is None, n.name))
        return ordered[index % len(ordered)]

    def _wait_node(self, node: ModelNode, state: str) -> None:
        self.target.wait_node(
            node.uuid,
            lambda n: n["provision_state"] == state
            and not n.get("target_provision_state"),
            timeout=_SETTLE_TIMEOUT, what=state)

    def _interest(self, uuid: str) -> tuple[int, str]:
        node = self.allocations[uuid].node
        if node is None:
            return (2, uuid)
        return (0 if self.nodes[node].active else 1, uuid)

    def _release(self, node: ModelNode) -> None:
        if node.allocation is not None:
            del self.allocations[node.allocation]
            node.allocation = None

    # -- rules -------------------------------------------------------------

    @initialize()
    def enroll(self) -> None:
        """Four nodes with different traits under a fresh resource class."""
        enrolled = self.target.make_nodes(
            len(_NODE_TRAITS), self.rc, name_prefix=targets.unique("sm"),
            each=[{"properties": {"cpus": cpus}} for cpus in _NODE_CPUS])
        for node, traits, cpus in zip(enrolled, _NODE_TRAITS, _NODE_CPUS,
                                      strict=True):
            if traits:
                self.target.expect(204, "PUT",
                                   f"/v1/nodes/{node['uuid']}/traits",
                                   {"traits": list(traits)})
            self.nodes[node["uuid"]] = ModelNode(
                node["uuid"], node["name"], frozenset(traits), cpus)

    @rule(traits=st.frozensets(st.sampled_from(_TRAITS)),
          named=st.booleans(),
          picks=st.none() | st.lists(st.integers(0, 7), min_size=1,
                                     max_size=4),
          by_name=st.booleans())
    def allocate(self, traits: frozenset[str], named: bool,
                 picks: list[int] | None, by_name: bool) -> None:
        """Create an allocation; it must succeed iff a node fits."""
        self._allocate(traits, named, picks, by_name)

    @rule(min_cpus=st.none() | st.sampled_from(_NODE_CPUS),
          forbidden=st.frozensets(st.sampled_from(_TRAITS)),
          picks=st.none() | st.lists(st.integers(0, 7), min_size=1,
                                     max_size=4))
    def allocate_constrained(self, min_cpus: int | None,
                             forbidden: frozenset[str],
                             picks: list[int] | None) -> None:
        """An allocation with the constraints extension."""
        self._allocate(frozenset(), False, picks, False, min_cpus,
                       forbidden)

    @rule(index=st.integers(0, 7), cpus=st.sampled_from(_NODE_CPUS))
    def set_cpus(self, index: int, cpus: int) -> None:
        """Change a free node's ``cpus`` property (a PATCH)."""
        node = self._pick(index, [n for n in self.nodes.values()
                                  if n.allocation is None])
        if node is None:
            return
        response = self._request("PATCH", f"/v1/nodes/{node.uuid}", [
            {"op": "add", "path": "/properties/cpus", "value": cpus}])
        self._expect(response, 200)
        node.cpus = cpus

    @rule(traits=st.frozensets(st.sampled_from(_TRAITS)))
    def allocate_and_deploy(self, traits: frozenset[str]) -> None:
        """The usual workflow: reserve a node, then deploy onto it."""
        result = self._allocate(traits, False, None, False)
        if result["state"] == "active":
            node = self.nodes[result["node_uuid"]]
            self._expect(self.target.set_provision(node.uuid, "active"), 202)
            self._wait_node(node, "active")
            node.active = True

    def _allocate(self, traits: frozenset[str], named: bool,
                  picks: list[int] | None, by_name: bool,
                  min_cpus: int | None = None,
                  forbidden: frozenset[str] = frozenset()
                  ) -> dict[str, Any]:
        body: dict[str, Any] = {"resource_class": self.rc,
                                "traits": sorted(traits)}
        headers: dict[str, str] = {}
        if min_cpus is not None or forbidden:
            headers = _EXT
            body["constraints"] = {"forbidden_traits": sorted(forbidden)}
            if min_cpus is not None:
                body["constraints"]["properties"] = [
                    {"key": "cpus", "min": min_cpus}]
        candidates: set[str] | None = None
        if picks is not None and self.nodes:
            chosen = [self._pick(i, list(self.nodes.values()))
                      for i in picks]
            candidates = {n.uuid for n in chosen if n is not None}
            body["candidate_nodes"] = sorted(
                self.nodes[u].name if by_name else u for u in candidates)
        if named:
            body["name"] = targets.unique("sm-alloc")
        response = self.target.request("POST", "/v1/allocations", body,
                                       headers=headers)
        self._expect(response, 201)
        result = self.target.wait_allocation(response.json()["uuid"],
                                             timeout=_SETTLE_TIMEOUT)
        fitting = {
            n.uuid for n in self.nodes.values()
            if not n.active and not n.maintenance and n.allocation is None
            and traits <= n.traits
            and (candidates is None or n.uuid in candidates)
            and (min_cpus is None or n.cpus >= min_cpus)
            and not forbidden & n.traits}
        if fitting:
            assert result["state"] == "active", (result, fitting)
            assert result["node_uuid"] in fitting, (result, fitting)
            self.nodes[result["node_uuid"]].allocation = result["uuid"]
        else:
            assert result["state"] == "error", (result, self.nodes)
            assert result["node_uuid"] is None, result
            assert result["last_error"], result
        self.allocations[result["uuid"]] = ModelAllocation(
            result["uuid"], result["state"], result["node_uuid"], traits,
            None if candidates is None else frozenset(candidates),
            min_cpus, forbidden)
        return result

    @rule(index=st.integers(0, 7))
    def deploy_or_undeploy(self, index: int) -> None:
        """Deploy an available node or tear an active one down.

        One rule for both keeps tear-downs as frequent as deployments.
        Tearing down deletes the node's allocation.
        """
        node = self._pick(index, [n for n in self.nodes.values()
                                  if not n.maintenance])
        if node is None:
            return
        if node.active:
            self._expect(self.target.set_provision(node.uuid, "deleted"),
                         202)
            self._wait_node(node, "available")
            node.active = False
            self._release(node)
        else:
            self._expect(self.target.set_provision(node.uuid, "active"),
                         202)
            self._wait_node(node, "active")
            node.active = True

    @rule()
    def deallocate(self) -> None:
        """Delete an allocation: 409 under an active node not in maint.

        It takes the most interesting allocation: one under a deployed
        node, else a reserving one, else a failed one.  (Hypothesis draws
        rules without arguments most often, which keeps releases frequent.)
        """
        if not self.allocations:
            return
        uuid = min(self.allocations, key=self._interest)
        alloc = self.allocations[uuid]
        node = self.nodes[alloc.node] if alloc.node else None
        response = self._request("DELETE", f"/v1/allocations/{uuid}")
        if node is not None and node.active and not node.maintenance:
            self._expect(response, 409)
            return
        self._expect(response, 204)
        if node is not None:
            node.allocation = None
        del self.allocations[uuid]

    @rule(index=st.integers(0, 7), now=st.booleans())
    def delete_node(self, index: int, now: bool) -> None:
        """Delete a node: refused while associated unless in maintenance.

        ``now`` halves how often nodes go, so examples keep some to use.
        """
        node = self._pick(index, list(self.nodes.values()))
        if node is None or not now:
            return
        response = self._request("DELETE", f"/v1/nodes/{node.uuid}")
        if not node.maintenance and node.allocation is not None:
            self._expect(response, 409)
            return
        if not node.maintenance and node.active:
            self._expect(response, 400, 409)
            return
        self._expect(response, 204)
        self._release(node)
        del self.nodes[node.uuid]

    @rule(index=st.integers(0, 7))
    def toggle_maintenance(self, index: int) -> None:
        """Switch maintenance on or off on any node."""
        node = self._pick(index, list(self.nodes.values()))
        if node is None:
            return
        on = not node.maintenance
        if on:
            response = self._request(
                "PUT", f"/v1/nodes/{node.uuid}/maintenance",
                {"reason": "state machine"})
        else:
            response = self._request(
                "DELETE", f"/v1/nodes/{node.uuid}/maintenance")
        self._expect(response, 202)
        node.maintenance = on

    # -- invariants --------------------------------------------------------

    @invariant()
    def server_agrees_with_the_spec_and_the_model(self) -> None:
        """Check the spec's invariants and the model after every step."""
        listed = self.target.expect(
            200, "GET", "/v1/allocations",
            params={"resource_class": self.rc, "limit": 1000})["allocations"]
        allocations = {a["uuid"]: a for a in listed}
        nodes = {uuid: self.target.node(uuid) for uuid in self.nodes}

        assert not [a for a in listed if a["state"] == "allocating"], listed
        holders: dict[str, list[str]] = {}
        for alloc in listed:
            if alloc["node_uuid"] is not None:
                holders.setdefault(alloc["node_uuid"], []).append(
                    alloc["uuid"])
            if alloc["state"] == "active":
                node = nodes.get(alloc["node_uuid"])
                assert node is not None, ("active without node", alloc)
                assert node["allocation_uuid"] == alloc["uuid"], (alloc, node)
                self._matches_request(alloc, node)
        for uuid, held in holders.items():
            assert len(held) <= 1, ("node holds several", uuid, held)
        for node in nodes.values():
            for alloc_uuid in allocations:
                assert ((node["instance_uuid"] == alloc_uuid)
                        == (node["allocation_uuid"] == alloc_uuid)), node
            if node["allocation_uuid"] is not None:
                assert node["allocation_uuid"] in allocations, node

        assert set(allocations) == set(self.allocations), (
            sorted(allocations), sorted(self.allocations))
        for uuid, expected in self.allocations.items():
            assert allocations[uuid]["state"] == expected.state, uuid
            assert allocations[uuid]["node_uuid"] == expected.node, uuid
        for uuid, model in self.nodes.items():
            node = nodes[uuid]
            assert node["allocation_uuid"] == model.allocation, (node, model)
            assert node["maintenance"] == model.maintenance, (node, model)
            assert node["provision_state"] == (
                "active" if model.active else "available"), (node, model)


    def _matches_request(self, alloc: dict[str, Any],
                         node: dict[str, Any]) -> None:
        """The node of an active allocation, as the server shows it now,
        satisfies what the allocation asked for (nodes are changed only
        while free, so this holds for as long as the allocation does)."""
        asked = self.allocations.get(alloc["uuid"])
        if asked is None:  # the model check below reports it
            return
        traits = set(node["traits"] or ())
        assert node["resource_class"] == self.rc, (alloc, node)
        assert asked.traits <= traits, (asked, node)
        assert not asked.forbidden & traits, (asked, node)
        assert asked.candidates is None or (
            node["uuid"] in asked.candidates), (asked, node)
        assert asked.min_cpus is None or (
            node["properties"]["cpus"] >= asked.min_cpus), (asked, node)


class TestAllocationStateMachine(testtools.TestCase):
    """Runs the machine on the reference server with a fixed seed."""

    def test_random_operation_sequences_keep_the_invariants(self) -> None:
        """Bounded, derandomized: the same sequences on every run."""
        AllocationMachine.target = targets.reference_target()
        run_state_machine_as_test(
            AllocationMachine,
            settings=settings(
                max_examples=20,
                stateful_step_count=25,
                derandomize=True,
                database=None,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )
