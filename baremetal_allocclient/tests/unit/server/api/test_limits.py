"""Input limits: JSON depth, query parameters, schema bounds."""

from __future__ import annotations

import json

import testtools
from hypothesis import given, settings
from hypothesis import strategies as st

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api import limits, versions
from baremetal_allocclient.server.api.errors import ApiError
from baremetal_allocclient.server.domain.errors import Invalid

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=20,
)


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


class JsonDepthTests(testtools.TestCase):

    def test_examples(self) -> None:
        self.assertEqual(0, limits.json_depth(b'"[[[{"'))
        self.assertEqual(1, limits.json_depth(b'{"a": "]]]\\"[[["}'))
        self.assertEqual(2, limits.json_depth(b'["\\\\", []]'))
        self.assertEqual(100000, limits.json_depth(b"[" * 100000))

    @settings(max_examples=200, derandomize=True)
    @given(_JSON)
    def test_matches_the_parsed_depth(self, value: object) -> None:
        raw = json.dumps(value, ensure_ascii=False).encode()
        self.assertEqual(_depth(value), limits.json_depth(raw))

    @settings(max_examples=300, derandomize=True)
    @given(st.text(alphabet='[]{}"\\a ,', max_size=4 * limits.MAX_JSON_DEPTH))
    def test_check_refuses_exactly_what_nests_too_deeply(self, text: str
                                                         ) -> None:
        raw = text.encode()
        too_deep = limits.json_depth(raw) > limits.MAX_JSON_DEPTH
        try:
            limits.check_json_depth(raw)
        except ApiError:
            self.assertTrue(too_deep, raw)
        else:
            self.assertFalse(too_deep, raw)

    def test_check(self) -> None:
        limits.check_json_depth(b"[" * limits.MAX_JSON_DEPTH)
        error = self.assertRaises(ApiError, limits.check_json_depth,
                                  b"[" * (limits.MAX_JSON_DEPTH + 1))
        self.assertEqual(400, error.status)


class QueryTests(testtools.TestCase):

    def test_known_parameters_pass(self) -> None:
        limits.check_query("/v1/allocations", "GET",
                           [("state", "active"), ("limit", "5")])
        limits.check_query("/v1/nodes/<ident>", "GET", [("fields", "uuid")])

    def test_unknown_parameter_is_400_naming_the_accepted(self) -> None:
        error = self.assertRaises(ApiError, limits.check_query,
                                  "/v1/allocations", "GET", [("stat", "x")])
        self.assertEqual(400, error.status)
        self.assertIn("'stat'", error.message)
        self.assertIn("resource_class", error.message)
        error = self.assertRaises(ApiError, limits.check_query,
                                  "/v1/allocations", "POST", [("x", "1")])
        self.assertIn("accepted: none", error.message)

    def test_long_values_and_too_many(self) -> None:
        self.assertRaises(ApiError, limits.check_query, "/v1/allocations",
                          "GET", [("state", "x" * 5000)])
        self.assertRaises(ApiError, limits.check_query, "/v1/allocations",
                          "GET", [("state", "x")] * 51)


class SchemaLimitTests(testtools.TestCase):

    def _create(self, body: object) -> None:
        schemas.validate(body, schemas.allocation_create(
            versions.MAX_VERSION))

    def test_list_lengths(self) -> None:
        self._create({"traits": ["CUSTOM_A"] * schemas.MAX_TRAITS})
        self.assertRaises(Invalid, self._create,
                          {"traits": ["CUSTOM_A"] * (schemas.MAX_TRAITS + 1)})
        self.assertRaises(Invalid, self._create, {
            "candidate_nodes": ["n"] * (schemas.MAX_CANDIDATES + 1)})

    def test_long_values_give_a_short_message(self) -> None:
        error = self.assertRaises(Invalid, self._create,
                                  {"node": "n" * 100000})
        self.assertLess(len(error.message), 600)
        self.assertIn("$.node", error.message)
        self.assertIn("maxLength", error.message)
