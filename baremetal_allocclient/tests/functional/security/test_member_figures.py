"""What a failed or waiting allocation tells its reader (issue 20, items
5, 6 and 8), against a real server process with ``--auth-projects``:

- a member's figures (the funnel of its failed allocation, its place in
  line) count only what that member may see;
- a client that did not opt into the extensions reads Ironic's
  ``last_error`` byte for byte; one that did gets the funnel too;
- the message and the funnel name one and the same culprit.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import testtools

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)
from baremetal_allocclient.tests.functional.security import _support as sup

_CONSTRAINTS = {"X-Baremetal-Alloc-Extensions": "constraints"}
_QUEUE = {"X-Baremetal-Alloc-Extensions": "queue"}
_WAIT = {"Prefer": "wait=20"}


def _rc() -> str:
    return "rc-" + uuid.uuid4().hex[:10]


def _failed(uuid_: str, reason: str) -> str:
    return f"Failed to process allocation {uuid_}: {reason}."


class _MemberFigureTests(testtools.TestCase if TYPE_CHECKING else object):
    """alice (proj-a) and bob (proj-b) share one server and admin, on a
    scratch database of ``kind``."""

    kind = "sqlite"
    server: InProcessServer
    creds: sup.Credentials

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(cls, "--queue-interval", "0.2",
                                     kind=cls.kind, http_basic=True)
        cls.creds = cls.server.creds

    def _user(self, user: str) -> tuple[str, str]:
        return self.creds.auth(user)

    def _create(self, body: dict[str, Any], auth: tuple[str, str] | None
                = None, headers: dict[str, str] | None = None) -> Any:
        """A create that waits for the outcome; deleted at the end."""
        created = self.server.expect(
            201, "POST", "/v1/allocations", body, auth=auth,
            headers={**_WAIT, **(headers or {})})
        self.addCleanup(self.server.request, "DELETE",
                        f"/v1/allocations/{created['uuid']}")
        if created["state"] == "allocating" and "queue" not in body:
            created = self.server.wait_allocation(created["uuid"],
                                                  auth=auth)
        return created

    def _get(self, ident: str, auth: tuple[str, str] | None = None,
             headers: dict[str, str] | None = None) -> Any:
        return self.server.expect(200, "GET", f"/v1/allocations/{ident}",
                                  auth=auth, headers=headers or {})

    # -- item 5: a member's figures -----------------------------------------

    def test_member_funnel_counts_only_its_own_nodes(self) -> None:
        rc = _rc()
        self.server.make_nodes(1, rc, owner=sup.PROJECT_A)
        self.server.make_nodes(3, rc, owner=sup.PROJECT_B)
        self.server.make_nodes(1, rc)  # nobody's
        alice = self._user(sup.ALICE)
        failed = self._create({"resource_class": rc,
                               "traits": ["CUSTOM_NONE"]}, alice,
                              _CONSTRAINTS)
        self.assertEqual("error", failed["state"])
        expected = _failed(failed["uuid"], (
            "no suitable nodes have the requested traits CUSTOM_NONE; "
            "funnel: resource_class 1 > available 1 > not_in_maintenance 1"
            " > power_state 1 > unreserved 1 > owner 1 > traits 0 "
            "(emptied by traits)"))
        self.assertEqual(expected, failed["last_error"])
        self.assertEqual(expected, self._get(failed["uuid"], alice,
                                             _CONSTRAINTS)["last_error"])

    def test_admin_explain_with_owner_is_the_stored_funnel(self) -> None:
        rc = _rc()
        self.server.make_nodes(1, rc, owner=sup.PROJECT_A)
        self.server.make_nodes(2, rc, owner=sup.PROJECT_B)
        body = {"resource_class": rc, "owner": sup.PROJECT_A,
                "traits": ["CUSTOM_NONE"]}
        failed = self._create(body, headers=_CONSTRAINTS)
        explained = self.server.expect(200, "POST", "/v1/allocation_explain",
                                       body)
        line = " > ".join(f"{s['step']} {s['count']}"
                          for s in explained["funnel"])
        self.assertEqual("resource_class 1 > available 1 > "
                         "not_in_maintenance 1 > power_state 1 > "
                         "unreserved 1 > owner 1 > traits 0", line)
        self.assertTrue(failed["last_error"].endswith(
            f"; funnel: {line} (emptied by traits)."), failed["last_error"])

    def test_member_queue_position_ignores_other_projects(self) -> None:
        rc = _rc()  # no node at all: both wait in line
        body = {"resource_class": rc, "queue": {"timeout": 120}}
        bob_first = self._create(body, self._user(sup.BOB), _QUEUE)
        alice = self._user(sup.ALICE)
        alice_second = self._create(body, alice, _QUEUE)
        self.assertEqual(1, bob_first["queue"]["position"])
        self.assertEqual(1, alice_second["queue"]["position"])
        self.assertEqual(1, self._get(alice_second["uuid"], alice, _QUEUE)
                         ["queue"]["position"])
        # The admin sees the whole line, as before.
        self.assertEqual(2, self._get(alice_second["uuid"], None, _QUEUE)
                         ["queue"]["position"])

    # -- item 6: Ironic's text unless the client opted in -------------------

    def test_owner_failure_reads_as_ironic_without_the_header(self) -> None:
        rc = _rc()
        self.server.make_nodes(2, rc, owner=sup.PROJECT_B)
        alice = self._user(sup.ALICE)
        failed = self._create({"resource_class": rc}, alice)
        reason = f"no available nodes match the resource class {rc}"
        self.assertEqual(_failed(failed["uuid"], reason),
                         failed["last_error"])
        self.assertEqual(_failed(failed["uuid"], reason),
                         self._get(failed["uuid"], alice)["last_error"])
        listed = self.server.expect(
            200, "GET", f"/v1/allocations?resource_class={rc}", auth=alice)
        self.assertEqual([_failed(failed["uuid"], reason)],
                         [a["last_error"] for a in listed["allocations"]])
        # Opted in: the same reason, then the member's funnel.
        self.assertEqual(
            _failed(failed["uuid"], reason + (
                "; funnel: resource_class 0 > available 0 > "
                "not_in_maintenance 0 > power_state 0 > unreserved 0 > "
                "owner 0 (emptied by resource_class)")),
            self._get(failed["uuid"], alice, _CONSTRAINTS)["last_error"])

    def test_ironic_wording_for_class_candidates_and_traits(self) -> None:
        rc = _rc()
        (node,) = self.server.make_nodes(1, rc)
        (other,) = self.server.make_nodes(1, _rc())
        cases = [
            ({"resource_class": _rc()},
             "no available nodes match the resource class {rc}"),
            ({"resource_class": rc, "candidate_nodes": [other["uuid"]]},
             "none of the requested nodes are available and match the "
             "resource class {rc}"),
            ({"resource_class": rc, "traits": ["CUSTOM_ZZZ"]},
             "no suitable nodes have the requested traits CUSTOM_ZZZ"),
        ]
        for body, wording in cases:
            failed = self._create(body)
            expected = _failed(failed["uuid"], wording.format(
                rc=body["resource_class"]))
            self.assertEqual(expected, failed["last_error"])
            self.assertEqual(expected,
                             self._get(failed["uuid"])["last_error"])
        self.assertIsNone(self.server.expect(
            200, "GET", f"/v1/nodes/{node['uuid']}")["allocation_uuid"])

    # -- item 8: one culprit --------------------------------------------------

    def test_message_and_funnel_name_the_same_culprit(self) -> None:
        rc = _rc()
        n1 = self.server.make_nodes(1, rc, name="n1-" + rc)[0]
        n2 = self.server.make_nodes(1, rc, name="n2-" + rc)[0]
        self.server.expect(204, "PUT", f"/v1/nodes/{n2['uuid']}/traits/"
                           "CUSTOM_X")
        body = {"resource_class": rc, "traits": ["CUSTOM_X"],
                "candidate_nodes": [n1["name"]]}
        plain = self._create(body)
        reason = "no suitable nodes have the requested traits CUSTOM_X"
        self.assertEqual(_failed(plain["uuid"], reason),
                         plain["last_error"])
        opted = self._create(body, headers=_CONSTRAINTS)
        self.assertEqual(_failed(opted["uuid"], reason + (
            "; funnel: resource_class 2 > available 2 > not_in_maintenance"
            " 2 > power_state 2 > unreserved 2 > candidate_nodes 1 > "
            "traits 0 (emptied by traits)")), opted["last_error"])


class SQLiteMemberFigureTests(_MemberFigureTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLMemberFigureTests(_MemberFigureTests, testtools.TestCase):
    kind = "postgresql"


class MariaDBMemberFigureTests(_MemberFigureTests, testtools.TestCase):
    kind = "mysql"

