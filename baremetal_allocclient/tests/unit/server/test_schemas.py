"""Request validation."""

from __future__ import annotations

from typing import Any

import testtools

from baremetal_allocclient.server import schemas
from baremetal_allocclient.server.api.errors import as_api_error
from baremetal_allocclient.server.api.versions import Version
from baremetal_allocclient.server.domain import identifiers
from baremetal_allocclient.server.domain.errors import Invalid

LATEST = Version(1, 73)


class AllocationSchemaTests(testtools.TestCase):
    def test_valid(self) -> None:
        for body in [
            {"resource_class": "x"},
            {"resource_class": "x", "traits": ["CUSTOM_A", "HW_CPU_X86_VMX"],
             "candidate_nodes": ["n"], "name": "a", "extra": {"k": 1},
             "uuid": None, "owner": "p", "node": None},
            {"node": "n"},
        ]:
            schemas.validate(body, schemas.allocation_create(LATEST))

    def test_invalid(self) -> None:
        cases: list[tuple[Any, Version, str]] = [
            ([], LATEST, "is not of type 'object'"),
            (None, LATEST, "is not of type 'object'"),
            ({"resource_class": 1}, LATEST, "is not of type"),
            ({"resource_class": "x" * 81}, LATEST, "is too long"),
            ({"resource_class": "x", "x": 1}, LATEST, "'x' was unexpected"),
            ({"resource_class": "x", "traits": ["lower"]}, LATEST,
             "'lower' is not valid under any of the given schemas"),
            ({"resource_class": "x", "traits": ["CUSTOM_"]}, LATEST,
             "'CUSTOM_' is not valid under any of the given schemas"),
            # Upper case but not in the os-traits catalogue, as in Ironic.
            ({"resource_class": "x", "traits": ["FOO_BAR"]}, LATEST,
             "'FOO_BAR' is not valid under any of the given schemas"),
            ({"resource_class": "x", "node": "n"}, Version(1, 57),
             "'node' was unexpected"),
            ({"resource_class": "x", "owner": "o"}, Version(1, 59),
             "'owner' was unexpected"),
        ]
        for body, version, words in cases:
            error = self.assertRaises(
                Invalid, schemas.validate, body,
                schemas.allocation_create(version))
            self.assertEqual(400, as_api_error(error).status)
            self.assertIn(words, error.message)
            self.assertTrue(error.message.startswith("Schema error: "))


class NameAndUuidTests(testtools.TestCase):
    def test_names(self) -> None:
        for name, valid in [("node-1", True), ("a.b_c~d", True),
                            ("n" * 255, True), ("n" * 256, False),
                            ("has space", False), ("", False),
                            ("slash/", False), (5, False), (None, False)]:
            self.assertEqual(valid, identifiers.is_valid_name(name), str(name))

    def test_uuids(self) -> None:
        good = "9c1a3f8e-2b6d-4f0a-8c5e-1d2e3f4a5b6c"
        for value, valid in [(good, True), (good.upper(), True),
                             ("not-a-uuid", False), (good[:-1], False),
                             (good.replace("-", ""), False), (None, False)]:
            self.assertEqual(valid, identifiers.is_uuid(value), str(value))
        self.assertTrue(identifiers.is_uuid_like(good.replace("-", "")))
        self.assertFalse(identifiers.is_uuid_like("node-1"))


class CanonicalUuidTests(testtools.TestCase):
    def test_lower_case_hyphenated(self) -> None:
        lower = "a1b2c3d4-e5f6-4a1b-8c2d-e3f4a5b6c7d8"
        for given in (lower, lower.upper(), lower.replace("-", "").upper(),
                      "{" + lower.upper() + "}", "urn:uuid:" + lower):
            self.assertEqual(lower, identifiers.canonical_uuid(given), given)

    def test_names_are_left_alone(self) -> None:
        for name in ("Node-1", "ABC", "a1b2c3d4"):
            self.assertEqual(name, identifiers.canonical_uuid(name))


class NodeBooleanTests(testtools.TestCase):
    """Node booleans given as strings, read as Ironic (oslo) reads them."""

    def test_strings_oslo_accepts(self) -> None:
        body = {"maintenance": " YES ", "retired": "0", "protected": "t",
                "automated_clean": None, "disable_power_off": False,
                "name": "true"}
        self.assertEqual(
            {"maintenance": True, "retired": False, "protected": True,
             "automated_clean": None, "disable_power_off": False,
             "name": "true"}, schemas.node_booleans(body))

    def test_other_strings_are_400_with_a_bounded_echo(self) -> None:
        error = self.assertRaises(Invalid, schemas.node_booleans,
                                  {"retired": "x" * 5000})
        self.assertEqual(400, as_api_error(error).status)
        self.assertTrue(error.message.startswith(
            "Invalid retired: Unrecognized value 'xxx"))
        self.assertLess(len(error.message), 300)
        self.assertIn("'off', 'on', 't', 'true', 'y', 'yes'", error.message)


    def test_console_enabled_is_a_node_boolean(self) -> None:
        self.assertEqual({"console_enabled": False, "secure_boot": "no"},
                         schemas.node_booleans({"console_enabled": "off",
                                                "secure_boot": "no"}))

    def test_only_the_given_fields(self) -> None:
        self.assertEqual({"target": True, "retired": "x"},
                         schemas.node_booleans({"target": "on",
                                                "retired": "x"},
                                               ("target",)))

    def test_secure_boot_is_read_as_python_bool(self) -> None:
        self.assertEqual(
            [None, True, True, False, False, True],
            [schemas.secure_boot_value(v)
             for v in (None, "false", "0", "", False, True)])


class RootCauseTests(testtools.TestCase):
    """Errors of rules with alternatives name the likeliest cause."""

    def test_trait_names_the_custom_pattern(self) -> None:
        error = self.assertRaises(Invalid, schemas.validate, "lower",
                                  schemas.TRAIT, "Schema error for trait")
        self.assertEqual(
            "Schema error for trait: 'lower' is not valid under any of the "
            "given schemas. Possible root cause: 'lower' does not match "
            "'^CUSTOM_[A-Z0-9_]+$'", error.message)

    def test_no_alternatives_no_root_cause(self) -> None:
        error = self.assertRaises(Invalid, schemas.validate, 5,
                                  {"type": "string"})
        self.assertEqual("Schema error: 5 is not of type 'string'",
                         error.message)


def _every_schema() -> list[dict[str, Any]]:
    """Every schema a handler validates against, at the first and the
    latest version, with and without the extensions."""
    from baremetal_allocclient.server.ironic.handlers import boot_mode

    found = [value for name, value in vars(schemas).items()
             if name.isupper() and isinstance(value, dict)
             and ("type" in value or "anyOf" in value)]
    found.append(boot_mode.BODY)
    for version in (Version(1, 1), Version(1, 52), LATEST,
                    schemas.versions.MAX_VERSION):
        found += [schemas.allocation_create(version, extended, queue)
                  for extended in (False, True) for queue in (False, True)]
        found += [schemas.allocation_group(version),
                  schemas.node_create(version)]
    return found


def _words(schema: object) -> set[str]:
    """The property names, enum members and trait-like strings of a
    schema: what generated instances are made of, so that they reach
    its inner rules."""
    words: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                words.update(value)
            if key == "enum":
                words.update(w for w in value if isinstance(w, str))
            words |= _words(value)
    elif isinstance(schema, list):
        for value in schema:
            words |= _words(value)
    return words


SCHEMAS = _every_schema()
WORDS = sorted(set().union(*map(_words, SCHEMAS)))
# Near misses of the rules' edges: a pattern's anchors, lengths, case.
EDGES = ["CUSTOM_A", "CUSTOM_A\n", "CUSTOM_", "custom_a", "\nCUSTOM_A",
         "HW_CPU_X86_VMX\n", "/", "/a", "/a\n", "a/b", "\ud800", "x" * 81,
         "x" * 256, "CUSTOM_" + "A" * 249, "", "true", "1", "null"]


def _json_data() -> Any:
    from hypothesis import strategies as st

    scalars = st.one_of(
        st.none(), st.booleans(),
        st.integers(min_value=-2**70, max_value=2**70),
        st.floats(), st.text(max_size=20),
        st.sampled_from(WORDS + EDGES))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.dictionaries(st.one_of(st.sampled_from(WORDS), st.text(
            max_size=8)), inner, max_size=6)), max_leaves=25)


class TwoValidatorsTests(testtools.TestCase):
    """jsonschema-rs passes nothing jsonschema refuses (the module's
    docstring), so the verdict of ``validate`` is jsonschema's."""

    def test_fast_never_passes_what_jsonschema_refuses(self) -> None:
        from hypothesis import given, settings
        from hypothesis import strategies as st

        @settings(max_examples=3000, deadline=None, database=None)
        @given(st.sampled_from(SCHEMAS), _json_data())
        def check(schema: dict[str, Any], instance: Any) -> None:
            fast, slow = schemas._validators(schema)
            if schemas._passes(fast, instance):
                self.assertTrue(slow.is_valid(instance),
                                f"{instance!r} against {schema!r:.200}")

        check()

    def test_what_only_jsonschema_passes_is_still_valid(self) -> None:
        # jsonschema-rs refuses it (a pattern's "$" is the end of the
        # string); jsonschema passes it, as Ironic's does, and its
        # verdict stands, as before jsonschema-rs was used.
        create = schemas.allocation_create(LATEST)
        body = {"resource_class": "x", "traits": ["CUSTOM_A\n"]}
        fast, _slow = schemas._validators(create)
        self.assertFalse(schemas._passes(fast, body))
        schemas.validate(body, create)

    def test_what_the_fast_validator_cannot_read_jsonschema_decides(
            self) -> None:
        create = schemas.allocation_create(LATEST)
        body = {"resource_class": "x", "traits": ["CUSTOM_A\ud800"]}
        fast, _slow = schemas._validators(create)
        self.assertRaises(ValueError, fast.is_valid, body)
        error = self.assertRaises(Invalid, schemas.validate, body, create)
        self.assertEqual(400, as_api_error(error).status)
        self.assertIn("is not valid under any of the given schemas",
                      error.message)

    def test_valid_bodies_pass_the_fast_validator(self) -> None:
        create = schemas.allocation_create(LATEST)
        body = {"resource_class": "x", "name": "a", "extra": {"k": [1]},
                "traits": ["CUSTOM_A", "HW_CPU_X86_VMX", "HW_CPU_X86_AVX2"],
                "candidate_nodes": ["n"]}
        fast, _slow = schemas._validators(create)
        self.assertTrue(schemas._passes(fast, body))
