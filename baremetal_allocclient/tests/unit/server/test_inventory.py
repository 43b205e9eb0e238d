"""Inventory parsing."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server import inventory


class LoadTests(testtools.TestCase):
    def test_yaml_mapping(self) -> None:
        specs = inventory.load(
            "n-1:\n  driver: fake-hardware\n  resource_class: rc\n"
            "  traits: [CUSTOM_B, CUSTOM_A, CUSTOM_A]\n"
            "  properties: {cpus: 4}\n  owner: p\n  nics: [{mac: x}]\n",
            "inv.yaml")
        self.assertEqual(1, len(specs))
        spec = specs[0]
        self.assertEqual(("n-1", "rc", ("CUSTOM_A", "CUSTOM_B"), "p"),
                         (spec.name, spec.resource_class, spec.traits,
                          spec.owner))
        self.assertEqual({"cpus": 4}, spec.properties)

    def test_json_list(self) -> None:
        specs = inventory.load(
            '[{"name": "a", "uuid": "9c1a3f8e-2b6d-4f0a-8c5e-1d2e3f4a5b6c"}]',
            "inv.json")
        self.assertEqual("9c1a3f8e-2b6d-4f0a-8c5e-1d2e3f4a5b6c",
                         specs[0].uuid)
        self.assertIsNone(specs[0].resource_class)

    def test_errors(self) -> None:
        cases = [
            ("- 1\n", "expected a mapping"),
            ("42\n", "an inventory is"),
            ("a: {driver: ipmi}\n", "not supported"),
            ("a: {colour: red}\n", "unknown key(s) colour"),
            ("a: {uuid: nope}\n", "invalid uuid"),
            ("a: {traits: [x]}\n", "'x' is neither a standard"),
            ("a: {traits: x}\n", "traits must be a list"),
            ("a: {properties: []}\n", "properties must be a mapping"),
            ("a: {owner: 5}\n", "owner must be a string"),
            ("a: {resource_class: " + "x" * 81 + "}\n", "too long"),
            ("- {name: a}\n- {name: a}\n", "duplicate node name"),
            ("- {name: 'bad name'}\n", "invalid node name"),
            ("a: [unclosed\n", "inv.yaml"),
        ]
        for text, words in cases:
            error = self.assertRaises(inventory.InventoryError,
                                      inventory.load, text, "inv.yaml")
            self.assertIn(words, str(error), text)
