"""The OpenAPI document: committed copy, coverage of routes, valid schemas."""

from __future__ import annotations

import json
import os

import jsonschema
import testtools

from baremetal_allocclient.server import app, openapi
from baremetal_allocclient.server.api import limits

_COMMITTED = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "..", "doc",
    "source",
    "openapi.json",
)


class OpenApiTests(testtools.TestCase):

    def test_committed_file_equals_the_generated_document(self) -> None:
        with open(_COMMITTED, encoding="utf-8") as stream:
            committed = stream.read()
        self.assertEqual(
            openapi.render(), committed,
            "doc/source/openapi.json is stale; regenerate it with "
            "python -m baremetal_allocclient.server.openapi",
        )

    def test_every_served_route_is_documented(self) -> None:
        served = {(path, method) for path, method, _h in app._ROUTES}
        served.discard(("/v1/openapi.json", "GET"))
        documented = {(op.path, op.method) for op in openapi.OPERATIONS}
        self.assertEqual(served, documented)

    def test_query_parameters_are_the_enforced_ones(self) -> None:
        doc = openapi.document()
        for (route, method), names in limits.QUERY_PARAMS.items():
            op = doc["paths"][openapi.openapi_path(route)][method.lower()]
            query = {p["name"] for p in op["parameters"] if "name" in p
                     and p["in"] == "query"}
            self.assertEqual(set(names), query, (route, method))

    def test_request_bodies_are_the_validating_schemas(self) -> None:
        doc = openapi.document()
        body = doc["paths"]["/v1/allocations"]["post"]["requestBody"]
        schema = body["content"]["application/json"]["schema"]
        self.assertEqual(
            openapi.schemas.allocation_create(openapi.versions.MAX_VERSION),
            schema,
        )
        self.assertEqual(50, schema["properties"]["traits"]["maxItems"])

    def test_embedded_schemas_are_valid_json_schema(self) -> None:
        doc = openapi.document()
        count = 0
        for methods in doc["paths"].values():
            for op in methods.values():
                body = op.get("requestBody")
                if body:
                    jsonschema.Draft202012Validator.check_schema(
                        body["content"]["application/json"]["schema"])
                    count += 1
        self.assertGreaterEqual(count, 8)
        self.assertEqual("3.1.0", doc["openapi"])

    def test_paths_use_openapi_placeholders(self) -> None:
        self.assertEqual("/v1/nodes/{ident}/traits/{trait}",
                         openapi.openapi_path(
                             "/v1/nodes/<ident>/traits/<trait>"))
        self.assertNotIn("<", json.dumps(list(openapi.document()["paths"])))
