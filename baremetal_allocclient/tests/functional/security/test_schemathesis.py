"""Fuzz the HTTP API from its own OpenAPI document with schemathesis.

Complements :mod:`.test_fuzz` (hand-written strategies, SQLite, two
projects): here the requests come from the document the server serves
(``GET /v1/openapi.json``), valid and invalid ones for every operation,
then stateful scenarios that follow the document's links (an allocation
or node identifier from one answer feeds the next request), on SQLite
and on PostgreSQL.

Every answer must be below 500; every 4xx the application answers must
carry Ironic's error body (``error_message``, a JSON string) and no
exception text (the front end's own 431 for an oversized request line is plain
text); afterwards the database invariants must hold: no node reserved
twice, a reserved node's ``instance_uuid`` is its allocation's UUID,
nothing is left ``allocating``.

Bounded: ``BAREMETAL_ALLOC_SCHEMATHESIS_EXAMPLES`` examples per operation
and mode (default 15; a third of them on PostgreSQL) and
``BAREMETAL_ALLOC_SCHEMATHESIS_SCENARIOS`` stateful scenarios (default
60).  The seed is printed; set
``BAREMETAL_ALLOC_SCHEMATHESIS_SEED`` to replay a run.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import urllib.parse
from collections import Counter
from typing import Any, ClassVar

import hypothesis
import requests
import schemathesis
import testtools
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode

from baremetal_allocclient.tests.fixtures.inprocess import (
    InProcessServer,
    serve_for_class,
)

EXAMPLES = int(os.environ.get("BAREMETAL_ALLOC_SCHEMATHESIS_EXAMPLES", "15"))
SCENARIOS = int(os.environ.get("BAREMETAL_ALLOC_SCHEMATHESIS_SCENARIOS",
                               "60"))
SEED = int(os.environ.get("BAREMETAL_ALLOC_SCHEMATHESIS_SEED")
           or random.SystemRandom().randrange(2**32))
RESOURCE_CLASS = "fuzz-st"
NODE_COUNT = 8
_LEAKS = ("Traceback", "sqlalchemy", "psycopg", "[SQL", 'File "/',
          "Internal error:")
_HEADERS = {"X-OpenStack-Ironic-API-Version": "latest"}
#: Answered by the HTTP front end before the application sees the
#: request, in plain text: a request line or headers above
#: security.MAX_HEADER_BYTES.
_HTTP_LAYER = frozenset({414, 431})


def error_body_problem(response: Any) -> str | None:
    """Why a 4xx body is not Ironic's error document, or None (pure)."""
    try:
        outer = json.loads(response.content)
        inner = json.loads(outer["error_message"])
    except (ValueError, TypeError, KeyError):
        return "not Ironic's {'error_message': '<JSON>'} document"
    if {"faultstring", "faultcode", "debuginfo"} <= set(inner):
        return None
    if {"code", "title", "description"} <= set(inner):  # version errors
        return None
    return f"error_message has neither shape: {sorted(inner)}"


def _request_text(response: Any) -> str:
    """The request's URL (decoded) and body, as text."""
    request = response.request
    body = request.body or b""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    return urllib.parse.unquote(str(request.url)) + str(body)


class _Run:
    """Requests made and problems found in one database's run."""

    def __init__(self) -> None:
        self.statuses: Counter[int] = Counter()
        self.stateful = 0
        self.problems: list[str] = []
        #: The stateful phase ended on hypothesis's flaky-generation check.
        self.stopped_early = False

    def check(self, case: Any, response: Any) -> None:
        status = int(response.status_code)
        self.statuses[status] += 1
        text = response.content.decode("utf-8", "replace")
        problem = None
        if status >= 500:
            problem = "server error"
        elif status >= 400 and status not in _HTTP_LAYER:
            problem = error_body_problem(response)
        if problem is None:
            # A marker the request itself carried is the client's input
            # quoted back ("The sort_key value \"psycopg\" is invalid"),
            # not a leak.
            sent = _request_text(response)
            problem = next((f"leaks {m!r}" for m in _LEAKS
                            if m in text and m not in sent), None)
        if problem is not None and len(self.problems) < 20:
            self.problems.append(f"{problem}: {status} {text[:300]}\n  "
                                 f"{case.as_curl_command()[:600]}")

    @property
    def requests(self) -> int:
        return sum(self.statuses.values())

    @property
    def server_errors(self) -> int:
        return sum(n for s, n in self.statuses.items() if s >= 500)


def _settings(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck),
                    phases=[hypothesis.Phase.generate])


def _steer(case: Any) -> None:
    """Half the generated creates ask for the enrolled class, so
    allocations do get nodes (decided by the case itself: replayable)."""
    body = case.body
    if (case.method, case.path) == ("POST", "/v1/allocations") and (
        isinstance(body, dict) and not body.get("node")
        and len(json.dumps(body, sort_keys=True)) % 2 == 0
    ):
        body["resource_class"] = RESOURCE_CLASS
        body.pop("candidate_nodes", None)


class _SchemathesisTests:
    """Mixin; ``kind`` names the database."""

    kind: ClassVar[str]
    server: ClassVar[InProcessServer]
    #: Examples per operation and mode.
    examples: ClassVar[int] = EXAMPLES

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.server = serve_for_class(
            cls, "--step-delay", "0.01", "--db-connections", "4",
            kind=cls.kind, inventory={
                f"st-{i}": {"driver": "fake-hardware",
                            "resource_class": RESOURCE_CLASS}
                for i in range(NODE_COUNT)})

    def test_fuzz_from_the_openapi_document(self) -> None:
        test: Any = self
        run = _Run()
        began = time.monotonic()
        schema = schemathesis.openapi.from_url(
            self.server.endpoint + "/v1/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            for operation in operations:
                self._examples(run, operation, mode)
        self._stateful(run, schema)
        elapsed = time.monotonic() - began
        self._settle()
        violations = self._invariant_violations()
        print(f"\nschemathesis {self.kind}: seed {SEED}, {run.requests} "
              f"requests ({run.stateful} stateful"
              f"{', stopped early' if run.stopped_early else ''}) "
              f"in {elapsed:.0f} s, "
              f"5xx: {run.server_errors}, invariant violations: "
              f"{len(violations)}, statuses "
              f"{dict(sorted(run.statuses.items()))}", file=sys.stderr)
        test.assertEqual([], run.problems, f"seed {SEED}")
        test.assertEqual([], violations, f"seed {SEED}")
        test.assertGreater(run.statuses[201], 0)  # some creates succeeded
        test.assertNotIn("Traceback", self.server.log())

    def _examples(self, run: _Run, operation: Any,
                  mode: GenerationMode) -> None:
        @hypothesis.seed(SEED)
        @_settings(self.examples)
        @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
        def send(case: Any) -> None:
            _steer(case)
            run.check(case, case.call(headers=_version(case)))

        send()

    def _stateful(self, run: _Run, schema: Any) -> None:
        base = schema.as_state_machine()

        class Machine(base):  # type: ignore[misc, valid-type]
            def get_call_kwargs(self, case: Any) -> dict[str, Any]:
                _steer(case)
                return {"headers": _version(case)}

            def validate_response(self, response: Any, case: Any,
                                  *args: Any, **kwargs: Any) -> None:
                run.stateful += 1
                run.check(case, response)

        hypothesis.seed(SEED)(Machine)
        try:
            Machine.run(settings=_settings(SCENARIOS))
        except hypothesis.errors.FlakyStrategyDefinition:
            # The server keeps its state from one scenario to the next,
            # so a rule that an earlier answer enabled can be off when
            # hypothesis draws the same choices again; it then calls the
            # generation flaky and stops.  That says nothing of the
            # server: every answer so far was checked (``run.problems``,
            # never raised), and the invariants are checked after.
            run.stopped_early = True

    def _settle(self) -> None:
        deadline = time.monotonic() + 60
        while self._get("/v1/allocations?state=allocating")["allocations"]:
            if time.monotonic() > deadline:
                raise AssertionError("allocations still allocating")
            time.sleep(0.2)

    def _get(self, path: str) -> Any:
        resp = requests.get(self.server.endpoint + path, headers=_HEADERS,
                            timeout=30)
        resp.raise_for_status()
        return resp.json()

    def _invariant_violations(self) -> list[str]:
        allocations = self._get("/v1/allocations?limit=1000")["allocations"]
        nodes = {n["uuid"]: n for n in
                 self._get("/v1/nodes/detail?limit=1000")["nodes"]}
        found: list[str] = []
        holders: Counter[str] = Counter()
        for alloc in allocations:
            if alloc["state"] == "allocating":
                found.append(f"{alloc['uuid']} still allocating")
            node = nodes.get(alloc["node_uuid"] or "")
            if node is None:
                continue
            holders[node["uuid"]] += 1
            if (node["allocation_uuid"], node["instance_uuid"]) != (
                alloc["uuid"], alloc["uuid"]
            ):
                found.append(f"node {node['uuid']} holds "
                             f"{node['allocation_uuid']} / instance "
                             f"{node['instance_uuid']}, not {alloc['uuid']}")
        found += [f"node {n} reserved {c} times"
                  for n, c in holders.items() if c > 1]
        return found


def _version(case: Any) -> dict[str, str]:
    """The newest API version unless the case chose one itself."""
    if "X-OpenStack-Ironic-API-Version" in (case.headers or {}):
        return {}
    return dict(_HEADERS)


class SQLiteSchemathesisTests(_SchemathesisTests, testtools.TestCase):
    kind = "sqlite"


class PostgreSQLSchemathesisTests(_SchemathesisTests, testtools.TestCase):
    """A third of the examples per operation (generating them costs the
    same on both databases and dominates; the stateful scenarios, which
    store and read back what passes, run in full)."""

    kind = "postgresql"
    examples = max(1, EXAMPLES // 3)
