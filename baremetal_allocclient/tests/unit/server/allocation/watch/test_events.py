"""Who sees a change, and how it is framed (pure)."""

from __future__ import annotations

import json

import testtools

from baremetal_allocclient.server.allocation.watch import events, hub
from baremetal_allocclient.server.db.models import AllocationChange
from baremetal_allocclient.server.domain.principal import Principal

ADMIN = Principal(user="admin", project=None, admin=True)
ALICE = Principal(user="alice", project="proj-a", admin=False)


def _event(**fields: object) -> events.Event:
    row = AllocationChange(
        seq=7, op="updated", uuid="u1", name="web-1", state="active",
        node_uuid="n1", owner="proj-b", resource_class="gpu",
        group_name="g", extra={"a": 1}, traits=[])
    for key, value in fields.items():
        setattr(row, key, value)
    return events.event(row)


class FilterTest(testtools.TestCase):

    def test_a_member_never_sees_another_projects_change(self) -> None:
        self.assertFalse(events.Filter(ALICE).matches(_event()))
        self.assertFalse(events.Filter(ALICE).matches(_event(owner=None)))
        self.assertTrue(events.Filter(ALICE).matches(
            _event(owner="proj-a")))
        self.assertTrue(events.Filter(ADMIN).matches(_event()))

    def test_each_filter_narrows(self) -> None:
        change = _event()
        for key, value in (("resource_class", "gpu"), ("state", "active"),
                           ("owner", "proj-b"), ("node_uuid", "n1"),
                           ("name", "web-1"), ("group", "g"),
                           ("uuid", "u1")):
            self.assertTrue(events.Filter(ADMIN, **{key: value})
                            .matches(change), key)
            self.assertFalse(events.Filter(ADMIN, **{key: "other"})
                             .matches(change), key)

    def test_the_line_is_one_json_object(self) -> None:
        line = _event().line
        self.assertTrue(line.endswith(b"\n"))
        self.assertEqual(1, line.count(b"\n"))
        body = json.loads(line)
        self.assertEqual((7, "updated", "active", {"a": 1}),
                         (body["cursor"], body["op"],
                          body["allocation"]["state"],
                          body["allocation"]["extra"]))

    def test_a_chunk_says_its_length_in_hex(self) -> None:
        self.assertEqual(b"1A\r\n" + b"x" * 26 + b"\r\n",
                         hub.chunk(b"x" * 26))
