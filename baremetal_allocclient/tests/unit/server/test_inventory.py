"""Inventory parsing."""

from __future__ import annotations

import testtools

from baremetal_allocclient.server import inventory


class LoadTests(testtools.TestCase):
    def test_yaml_mapping(self) -> None:
        specs = inventory.load(
            "n-1:\n  driver: fake-hardware\n  resource_class: rc\n"
            "  traits: [CUSTOM_B, CUSTOM_A, CUSTOM_A]\n"
            "  properties: {cpus: 4}\n  owner: p\n"
            "  nics: [{mac: 'AA:bb:cc:dd:ee:01', extra: {k: v}}]\n",
            "inv.yaml")
        self.assertEqual(1, len(specs))
        spec = specs[0]
        self.assertEqual(("n-1", "rc", ("CUSTOM_A", "CUSTOM_B"), "p"),
                         (spec.name, spec.resource_class, spec.traits,
                          spec.owner))
        self.assertEqual({"cpus": 4}, spec.properties)
        self.assertEqual((inventory.NicSpec("aa:bb:cc:dd:ee:01",
                                            {"k": "v"}),), spec.nics)

    def test_json_list(self) -> None:
        specs = inventory.load(
            '[{"name": "a", "uuid": "9c1a3f8e-2b6d-4f0a-8c5e-1d2e3f4a5b6c"}]',
            "inv.json")
        self.assertEqual("9c1a3f8e-2b6d-4f0a-8c5e-1d2e3f4a5b6c",
                         specs[0].uuid)
        self.assertIsNone(specs[0].resource_class)

    def test_uuids_are_stored_in_lower_case(self) -> None:
        specs = inventory.load(
            '[{"name": "a", "uuid": "9C1A3F8E-2B6D-4F0A-8C5E-1D2E3F4A5B6C"}]',
            "inv.json")
        self.assertEqual("9c1a3f8e-2b6d-4f0a-8c5e-1d2e3f4a5b6c",
                         specs[0].uuid)

    def test_unstorable_values_are_refused(self) -> None:
        for text in ("n-1:\n  properties: {cpus: .nan}\n",
                     "n-1:\n  extra: {x: [1, -.inf]}\n",
                     'n-1:\n  description: "a\\0b"\n',
                     'n-1:\n  driver_info: {"k\\0": 1}\n'):
            error = self.assertRaises(inventory.InventoryError,
                                      inventory.load, text, "inv.yaml")
            self.assertIn("invalid value", str(error), text)

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
            ("a: {nics: x}\n", "nics must be a list"),
            ("a: {nics: [x]}\n", "each of nics must be a mapping"),
            ("a: {nics: [{mac: 'aa-bb-cc-dd-ee-ff'}]}\n",
             "'aa-bb-cc-dd-ee-ff' is not a MAC address"),
            ("a: {nics: [{}]}\n", "None is not a MAC address"),
            ("a: {nics: [{mac: 'aa:bb:cc:dd:ee:ff', vlan: 5}]}\n",
             "unknown key(s) vlan in nics"),
            ("a: {nics: [{mac: 'aa:bb:cc:dd:ee:ff', pxe_enabled: 'x'}]}\n",
             "pxe_enabled must be a boolean"),
            ("a: {nics: [{mac: 'aa:bb:cc:dd:ee:ff'}]}\n"
             "b: {nics: [{mac: 'AA:BB:CC:DD:EE:FF'}]}\n",
             "MAC address aa:bb:cc:dd:ee:ff appears twice"),
        ]
        for text, words in cases:
            error = self.assertRaises(inventory.InventoryError,
                                      inventory.load, text, "inv.yaml")
            self.assertIn(words, str(error), text)
