"""The ``group`` and ``lease`` fields (allocation/marks.py): given and
shown only with the extensions' header, never in ``extra``; an older
client's lease in ``extra`` still counts as the lease."""

from __future__ import annotations

import json
import uuid as uuidlib
from typing import Any

import testtools

from baremetal_allocclient import leases
from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)

_BOTH = {"X-Baremetal-Alloc-Extensions": "groups, leases"}
_LEASES = {"X-Baremetal-Alloc-Extensions": "leases"}
_END = "2030-01-02T03:04:05Z"


def _rc() -> str:
    return "rc-" + uuidlib.uuid4().hex[:12]


def fault(resp: Any) -> str:
    """The faultstring of an Ironic-style error body."""
    return str(json.loads(resp.json()["error_message"])["faultstring"])


class MarkFieldsTests(testtools.TestCase):
    """One server for the class; every test uses its own resource class."""

    server: InProcessServer

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.server = serve_for_class(cls)

    def post(self, body: dict[str, Any], headers: dict[str, str] | None
             = None) -> Any:
        return self.server.request("POST", "/v1/allocations", body,
                                   headers={"Prefer": "wait=10",
                                            **(headers or {})})

    def get(self, path: str, headers: dict[str, str] | None = None) -> Any:
        resp = self.server.request("GET", path, headers=headers or {})
        self.assertEqual(200, resp.status_code, resp.text)
        return resp.json()

    def test_fields_are_shown_only_to_requests_that_opt_in(self) -> None:
        rc = _rc()
        self.server.make_nodes(2, rc)
        made = self.post({"resource_class": rc, "extra": {"job": "1"},
                          "group": {"name": "g", "size": 2},
                          "lease": {"expires_at": _END, "duration": "2h"}},
                         _BOTH)
        self.assertEqual(201, made.status_code, made.text)
        self.assertEqual(({"name": "g", "size": 2},
                          {"expires_at": _END, "duration": "2h"}),
                         (made.json()["group"], made.json()["lease"]))
        uuid = made.json()["uuid"]
        plain = self.get(f"/v1/allocations/{uuid}")
        self.assertEqual({"job": "1"}, plain["extra"])
        self.assertNotIn("group", plain)
        self.assertNotIn("lease", plain)
        shown = self.get(f"/v1/allocations/{uuid}", _LEASES)
        self.assertEqual(({"job": "1"}, {"expires_at": _END,
                                         "duration": "2h"}),
                         (shown["extra"], shown["lease"]))
        self.assertNotIn("group", shown)
        listed = self.get(f"/v1/allocations?resource_class={rc}",
                          _BOTH)["allocations"]
        self.assertEqual([("g", _END)], [
            (a["group"]["name"], a["lease"]["expires_at"]) for a in listed])
        plain_list = self.get(f"/v1/allocations?resource_class={rc}")
        self.assertEqual([{"job": "1"}], [
            a["extra"] for a in plain_list["allocations"]])
        self.assertNotIn("lease", plain_list["allocations"][0])
        # An allocation with neither shows both as null, list and show.
        other = self.post({"resource_class": rc}, _BOTH).json()
        for found in (self.get(f"/v1/allocations/{other['uuid']}", _BOTH),
                      *self.get(f"/v1/allocations?resource_class={rc}"
                                "&fields=uuid", _BOTH)["allocations"][1:]):
            self.assertEqual((None, None), (found["group"], found["lease"]))

    def test_fields_are_refused_without_the_header(self) -> None:
        rc = _rc()
        self.server.make_nodes(1, rc)
        for field, value in (("group", {"name": "g", "size": 2}),
                             ("lease", {"duration": "1h"})):
            resp = self.post({"resource_class": rc, field: value})
            self.assertEqual(400, resp.status_code, resp.text)
            self.assertIn("Additional properties are not allowed",
                          fault(resp))

    def test_a_bad_lease_is_a_400(self) -> None:
        rc = _rc()
        self.server.make_nodes(1, rc)
        for lease in ({"duration": "2x"}, {"expires_at": "soon"}, {},
                      {"duration": "1h", "extra": 1}):
            resp = self.post({"resource_class": rc, "lease": lease}, _BOTH)
            self.assertEqual(400, resp.status_code, (lease, resp.text))

    def test_a_duration_alone_starts_now_and_patch_renews(self) -> None:
        rc = _rc()
        self.server.make_nodes(1, rc)
        before = leases.utcnow()
        made = self.post({"resource_class": rc,
                          "lease": {"duration": "90m"}}, _LEASES).json()
        end = leases.parse_timestamp(made["lease"]["expires_at"])
        self.assertEqual("1h30m", made["lease"]["duration"])
        self.assertGreaterEqual(end, before.replace(microsecond=0)
                                + leases.parse_duration("90m"))
        path = f"/v1/allocations/{made['uuid']}"
        plain = self.server.request("PATCH", path, [
            {"op": "add", "path": "/lease", "value": {"duration": "1h"}}])
        self.assertEqual(400, plain.status_code, plain.text)
        renewed = self.server.request("PATCH", path, [
            {"op": "add", "path": "/lease",
             "value": {"expires_at": _END, "duration": "5h"}}],
            headers=_LEASES)
        self.assertEqual(200, renewed.status_code, renewed.text)
        self.assertEqual({"expires_at": _END, "duration": "5h"},
                         renewed.json()["lease"])
        self.assertEqual({}, renewed.json()["extra"])
        gone = self.server.request("PATCH", path, [
            {"op": "remove", "path": "/lease"}], headers=_LEASES)
        self.assertIsNone(gone.json()["lease"])

    def test_a_lease_written_into_extra_still_counts(self) -> None:
        """What older SDKs write: the keys stay in extra as written, and
        the allocation has that lease."""
        rc = _rc()
        self.server.make_nodes(1, rc)
        written = {leases.EXPIRES_KEY: _END, leases.DURATION_KEY: "2h"}
        made = self.post({"resource_class": rc, "extra": written}).json()
        path = f"/v1/allocations/{made['uuid']}"
        shown = self.get(path, _LEASES)
        self.assertEqual((written, {"expires_at": _END, "duration": "2h"}),
                         (shown["extra"], shown["lease"]))
        later = "2031-01-02T03:04:05Z"
        resp = self.server.request("PATCH", path, [
            {"op": "add", "path": "/extra/" + leases.EXPIRES_KEY,
             "value": later}])
        self.assertEqual(200, resp.status_code, resp.text)
        self.assertEqual(later, self.get(path, _LEASES)["lease"]
                         ["expires_at"])

    def test_advertised_in_v1(self) -> None:
        found = self.get("/v1")["extensions"]
        self.assertEqual((2, "lease", "X-Baremetal-Alloc-Extensions"), (
            found["leases"]["version"], found["leases"]["field"],
            found["leases"]["header"]))
        self.assertNotIn("expires_at_key", found["leases"])
        self.assertEqual((2, "group"), (found["groups"]["version"],
                                        found["groups"]["field"]))
