"""Inventory parsing."""

from __future__ import annotations

import json
import os

import testtools

from baremetal_allocclient.server.ironic import inventory


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


class BifrostInventoryTests(testtools.TestCase):
    """Bifrost's inventories as they are (see data/bifrost/NOTICE)."""

    DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(__file__)))), "functional", "data", "bifrost")

    def _example(self, name: str,
                 defaults: inventory.Defaults) -> inventory.Inventory:
        path = os.path.join(self.DATA, name)
        with open(path, encoding="utf-8") as stream:
            return inventory.parse(stream.read(), path, defaults)

    def test_examples_need_the_fake_hardware_option(self) -> None:
        error = self.assertRaises(
            inventory.InventoryError, self._example,
            "baremetal.json.example", inventory.Defaults())
        self.assertIn("driver 'ipmi' is not supported (only fake-hardware; "
                      "enroll --fake-hardware", str(error))

    def test_json_and_yaml_examples_give_the_same_nodes(self) -> None:
        defaults = inventory.Defaults(resource_class="baremetal",
                                      any_driver=True)
        from_json = self._example("baremetal.json.example", defaults)
        from_yaml = self._example("baremetal.yml.example", defaults)
        self.assertEqual(from_json, from_yaml)
        self.assertEqual({"ipmi"}, from_json.mapped_drivers)
        self.assertEqual({"ipa_kernel_url", "ipa_ramdisk_url",
                          "ipv4_address"}, from_json.ignored)
        basic, advanced = from_json.nodes
        self.assertEqual(("basicipmiexample0", "baremetal"),
                         (basic.name, basic.resource_class))
        self.assertEqual({"cpu_arch": "x86_64", "memory_mb": "32760",
                          "local_gb": "235", "cpus": "16"}, basic.properties)
        self.assertEqual(["00:00:00:23:34:56", "00:00:00:12:34:57"],
                         [nic.address for nic in basic.nics])
        self.assertEqual({}, basic.instance_info)
        self.assertEqual("493972895dc465a09702ce6e85a836c5",
                         advanced.instance_info["image_checksum"])
        self.assertEqual("dual", advanced.driver_info["ipmi_bridging"])

    def test_every_documented_host_side_key_is_accepted(self) -> None:
        entry = dict.fromkeys(inventory.HOST_SIDE_KEYS, "x")
        parsed = inventory.parse(json.dumps({"n": entry}), "inv.json")
        self.assertEqual(inventory.HOST_SIDE_KEYS, parsed.ignored)

    def test_nested_driver_info_is_flattened(self) -> None:
        (spec,) = inventory.load(
            "n:\n  driver_info:\n    power: {ipmi_address: 1.2.3.4}\n"
            "    deploy: {deploy_kernel: k}\n    ipmi_port: 623\n", "i.yaml")
        self.assertEqual({"ipmi_address": "1.2.3.4", "deploy_kernel": "k",
                          "ipmi_port": 623}, spec.driver_info)
        error = self.assertRaises(
            inventory.InventoryError, inventory.load,
            "n:\n  driver_info:\n    power: {ipmi_port: 1}\n"
            "    ipmi_port: 2\n", "i.yaml")
        self.assertIn("driver_info.power.ipmi_port is also given",
                      str(error))

    def test_ram_and_memory_mb_together_are_refused(self) -> None:
        error = self.assertRaises(
            inventory.InventoryError, inventory.load,
            "n: {properties: {ram: 1, memory_mb: 2}}\n", "i.yaml")
        self.assertIn("both ram and memory_mb", str(error))

    def test_defaults_fill_only_what_is_missing(self) -> None:
        defaults = inventory.Defaults(resource_class="baremetal",
                                      traits=("CUSTOM_LAB",))
        plain, named = inventory.load(
            "a: {}\nb: {resource_class: gold, traits: [CUSTOM_X]}\n",
            "i.yaml", defaults)
        self.assertEqual(("baremetal", ("CUSTOM_LAB",)),
                         (plain.resource_class, plain.traits))
        self.assertEqual(("gold", ("CUSTOM_X",)),
                         (named.resource_class, named.traits))
        error = self.assertRaises(
            inventory.InventoryError, inventory.load, "a: {}\n", "i.yaml",
            inventory.Defaults(traits=("lab",)))
        self.assertIn("default trait 'lab'", str(error))
