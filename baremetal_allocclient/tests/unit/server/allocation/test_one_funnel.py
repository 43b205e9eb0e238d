"""One funnel (issue 20, item 8): the SDK's prefilter, the server's
selection SQL and ``explain`` take their steps in one and the same order,
so a failure's message and its funnel name the same culprit."""

from __future__ import annotations

from typing import Any

import testtools

from baremetal_allocclient import constraints as model
from baremetal_allocclient.server.allocation import matching
from baremetal_allocclient.server.allocation import selection as sel
from baremetal_allocclient.server.db.models import Node
from baremetal_allocclient.tests.unit.server._sqlite import SQLiteDatabase

_BASIC = [model.Kind.RESOURCE_CLASS, model.Kind.AVAILABLE,
          model.Kind.NOT_IN_MAINTENANCE, model.Kind.POWER_STATE,
          model.Kind.UNRESERVED]
_IRONIC = {sel.Filter.OWNER: model.Kind.OWNER,
           sel.Filter.CANDIDATES: model.Kind.CANDIDATES,
           sel.Filter.TRAITS: model.Kind.TRAITS}

#: Every step applies.
FULL = sel.Request(
    "rc", traits=("CUSTOM_A",), candidate_nodes=("u-1",), owner="p",
    constraints=model.Constraints(
        forbidden_traits=("CUSTOM_B",), conductor_group="g", shard="s",
        node_owner="p", node_lessee="q", node_name="n1",
        require_node_name=True,
        properties=(model.property_constraint("cpus", "min", 2),
                    model.property_constraint("arch", "eq", "x86"))))


def _server_order(request: sel.Request) -> list[tuple[model.Kind, int]]:
    """The selection SQL's filters, one entry per funnel step."""
    order: list[tuple[model.Kind, int]] = []
    for flt in sel.active_filters(request):
        if flt is sel.Filter.RESOURCE_CLASS:
            order += [(kind, 0) for kind in _BASIC]
        elif isinstance(flt, sel.Filter):
            order.append((_IRONIC[flt], 0))
        else:
            order.append((flt.kind, flt.position))
    return order


def _node() -> dict[str, Any]:
    return {"uuid": "u-1", "name": "n1", "resource_class": "rc",
            "provision_state": "available", "maintenance": False,
            "power_state": "power off", "owner": "p", "lessee": "q",
            "traits": ["CUSTOM_A"], "conductor_group": "g", "shard": "s",
            "properties": {"cpus": 4, "arch": "x86"}}


class OneFunnelTests(testtools.TestCase):
    def test_ironic_query_then_traits_then_the_extension(self) -> None:
        names = [s.name(FULL.selection) for s in model.steps(FULL.selection)]
        self.assertEqual([
            "resource_class", "available", "not_in_maintenance",
            "power_state", "unreserved", "owner", "candidate_nodes",
            "traits", "node_owner", "node_lessee", "forbidden_traits",
            "property:cpus>=2", "property:arch=x86", "conductor_group",
            "shard", "node_name"], names)

    def test_sdk_server_and_explain_share_the_order(self) -> None:
        steps = model.steps(FULL.selection)
        names = [s.name(FULL.selection) for s in steps]
        # The SDK's client-side prefilter.
        sdk, survivors = model.funnel(FULL.selection, [_node()])
        self.assertEqual(names, [name for name, _ in sdk.counts])
        self.assertEqual(1, len(survivors))
        # The server's selection SQL.
        self.assertEqual([(s.kind, s.index) for s in steps],
                         _server_order(FULL))
        # ``explain`` (and ``last_error``): counted in SQL on a database.
        db = self.useFixture(SQLiteDatabase()).db
        with db.write() as session:
            session.add(Node(uuid="u-1", name="n1", resource_class="rc",
                             driver="fake-hardware",
                             provision_state="available",
                             power_state="power off"))
        with db.read() as session:
            explained = matching.funnel_counts(session, FULL)
        self.assertEqual(names, [name for name, _ in explained.counts])

    def test_message_and_funnel_blame_one_step(self) -> None:
        """Two nodes of one class, only n2 with CUSTOM_X; the request
        names n1 as candidate and asks for CUSTOM_X."""
        request = sel.Request("rc", traits=("CUSTOM_X",),
                              candidate_nodes=("u-1",))
        nodes = [{**_node(), "traits": []},
                 {**_node(), "uuid": "u-2", "name": "n2",
                  "traits": ["CUSTOM_X"]}]
        funnel, survivors = model.funnel(request.selection, nodes)
        self.assertEqual([], survivors)
        self.assertEqual("traits", funnel.first_empty)
        why = sel.explain_failure(request, funnel, 0)
        self.assertEqual(
            "no suitable nodes have the requested traits CUSTOM_X", why.ironic)
        self.assertEqual(
            "no suitable nodes have the requested traits CUSTOM_X; funnel: "
            "resource_class 2 > available 2 > not_in_maintenance 2 > "
            "power_state 2 > unreserved 2 > candidate_nodes 1 > traits 0 "
            "(emptied by traits)", why.extended)
