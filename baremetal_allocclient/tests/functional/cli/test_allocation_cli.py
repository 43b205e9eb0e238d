"""The real ``baremetal-alloc`` and ``openstack baremetal allocation``
executables against both targets (reference server and real Ironic).

Each test case class enrolls a few nodes of its own resource class; tests
that need "no matching node" use a fresh resource class without nodes, so
nothing here depends on what else the shared target holds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from typing import Any, ClassVar

import yaml

from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.fixtures.processes import free_port
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.cli import clirunner

TRAIT = "CUSTOM_CLI_TEST"
#: Real Ironic on SQLite now and then fails concurrent allocations with this
#: (see real-ironic-notes.md); it is Ironic's weakness, not the CLI's, so
#: scenarios that hit it against Ironic are cleaned up and tried again.
IRONIC_LOCK = "database is locked"
ATTEMPTS = 3
#: python-ironicclient's columns: list, and list --long or create.
DEFAULT_LIST = ["uuid", "name", "resource_class", "state", "node_uuid"]
ALL_FIELDS = [
    "uuid",
    "name",
    "state",
    "owner",
    "node_uuid",
    "last_error",
    "resource_class",
    "traits",
    "candidate_nodes",
    "extra",
    "created_at",
    "updated_at",
]


class AllocationCliTests:
    """Every verb and option, output formats and exit codes."""

    frontend: ClassVar[str]
    target: ClassVar[targets.Target]
    rc: ClassVar[str]
    nodes: ClassVar[list[str]]
    NODES = 3

    # testtools.TestCase provides these; declared for readability.
    assertEqual: Any
    assertIn: Any
    assertNotIn: Any
    assertTrue: Any
    assertIsNone: Any
    addCleanup: Any
    fail: Any

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()  # type: ignore[misc]
        cls.rc = targets.unique("rc-cli")
        cls.nodes = [
            n["uuid"] for n in cls.target.make_nodes(cls.NODES, cls.rc,
                                                     traits=[TRAIT])
        ]

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        # Whatever a test leaves in our class (even after a failed
        # assertion) must not leak into the next test.
        self.addCleanup(self.release_class, self.rc)

    # -- helpers -------------------------------------------------------

    def release_class(self, resource_class: str,
                      only_errors: bool = False) -> None:
        for alloc in list(targets.iter_pages(
                self.target, "/v1/allocations", "allocations",
                {"resource_class": resource_class})):
            if only_errors and alloc["state"] != "error":
                continue
            self.target.request("DELETE", f"/v1/allocations/{alloc['uuid']}")

    def class_allocations(self) -> set[str]:
        """The UUIDs of the allocations of this class's resource class."""
        return {alloc["uuid"] for alloc in targets.iter_pages(
            self.target, "/v1/allocations", "allocations",
            {"resource_class": self.rc})}

    def ironic_flake(self, text: str | None) -> bool:
        return self.target.name == "ironic" and IRONIC_LOCK in (text or "")

    def ok_allocating(self, *args: str) -> clirunner.CliResult:
        """``ok`` for a create that lets the server allocate nodes.

        Against Ironic, an attempt is tried again when the command says
        the database was locked, or when Ironic logged it meanwhile: its
        conductor can lose one allocation of a ``--count`` that way and
        fail the next with "no available nodes" (seen in CI).  What
        the failed attempt left (its active allocations too) is deleted
        before the next."""
        for attempt in range(1, ATTEMPTS + 1):
            locks = self.target.log_mentions(IRONIC_LOCK)
            before = self.class_allocations()
            result = self.cli(*args)
            locked = self.ironic_flake(result.stderr) or (
                self.target.name == "ironic"
                and self.target.log_mentions(IRONIC_LOCK) > locks)
            if result.returncode == 0 or attempt == ATTEMPTS or not locked:
                break
            for uuid in self.class_allocations() - before:
                self.target.request("DELETE", f"/v1/allocations/{uuid}")
        if result.returncode != 0:
            self.fail(f"expected success: {result!r}")
        self.assertNotIn("Traceback", result.stderr)
        return result

    def cli(self, *args: str, **kw: Any) -> clirunner.CliResult:
        return clirunner.run(self.frontend, self.target.endpoint, *args,
                             **kw)

    def ok(self, *args: str, **kw: Any) -> clirunner.CliResult:
        result = self.cli(*args, **kw)
        if result.returncode != 0:
            self.fail(f"expected success: {result!r}")
        self.assertNotIn("Traceback", result.stderr)
        return result

    def fails(self, code: int, *args: str, **kw: Any) -> clirunner.CliResult:
        result = self.cli(*args, **kw)
        if result.returncode != code:
            self.fail(f"expected exit code {code}: {result!r}")
        self.assertNotIn("Traceback", result.stderr)
        self.assertTrue(result.stderr.strip(), "no error message")
        return result

    def release_later(self, ident: str) -> None:
        self.addCleanup(
            self.target.request, "DELETE", f"/v1/allocations/{ident}"
        )

    def create(self, *args: str) -> dict[str, Any]:
        found: dict[str, Any] = self.ok_allocating(
            "create", *args, "-f", "json").json()
        self.release_later(found["uuid"])
        return found

    def failed_allocations(self, count: int) -> tuple[str, list[str]]:
        """``count`` allocations in ``error`` (no node has their class).

        Made through the API one after the other: they are the tests'
        material, and real Ironic leaves some of several concurrent
        allocations in ``allocating`` for good.
        """
        empty = targets.unique("rc-none")
        uuids = []
        for _ in range(count):
            body = self.target.expect(201, "POST", "/v1/allocations",
                                      {"resource_class": empty})
            uuids.append(body["uuid"])
            self.release_later(body["uuid"])
            self.target.wait_allocation(body["uuid"])
        return empty, uuids

    # -- create / get / show / delete ----------------------------------

    def test_create_wait_get_show_delete(self) -> None:
        name = targets.unique("cli")
        created = self.create("--resource-class", self.rc, "--trait", TRAIT,
                              "--name", name, "--extra", "purpose=ci",
                              "--extra", "eq=a=b", "--wait", "60")
        self.assertEqual(ALL_FIELDS, list(created))
        self.assertEqual("active", created["state"])
        self.assertIn(created["node_uuid"], self.nodes)
        self.assertEqual([TRAIT], created["traits"])
        self.assertEqual({"purpose": "ci", "eq": "a=b"}, created["extra"])
        self.assertEqual(name, created["name"])

        node = self.ok("get", name, "-f", "value", "-c", "node_uuid")
        self.assertEqual([created["node_uuid"]], node.lines())
        shown = self.ok("show", created["uuid"], "-f", "yaml").yaml()
        self.assertEqual(created["uuid"], shown["uuid"])
        self.assertEqual(created["node_uuid"], shown["node_uuid"])
        shell = self.ok("show", name, "-f", "shell").shell()
        self.assertEqual(created["uuid"], shell["uuid"])
        self.assertEqual("active", shell["state"])
        self.assertEqual("None", shell["owner"])  # as python-ironicclient
        some = self.ok("get", name, "--fields", "uuid", "state", "-f",
                       "json").json()
        self.assertEqual({"uuid": created["uuid"], "state": "active"}, some)

        deleted = self.ok("delete", name)
        self.assertIn(f"Deleted allocation {name}", deleted.stdout)
        gone = self.fails(1, "get", created["uuid"])
        self.assertIn("404", gone.stderr)
        node_after = self.target.node(created["node_uuid"])
        self.assertIsNone(node_after["allocation_uuid"])

    def test_create_without_wait_returns_at_once(self) -> None:
        for _ in range(ATTEMPTS):
            created = self.create("--resource-class", self.rc,
                                  "--candidate-node", self.nodes[1])
            self.assertIn(created["state"], ("allocating", "active"))
            self.assertEqual([self.nodes[1]], created["candidate_nodes"])
            final = self.target.wait_allocation(created["uuid"])
            if not self.ironic_flake(final["last_error"]):
                break
            self.release_class(self.rc, only_errors=True)
        self.assertEqual(self.nodes[1], final["node_uuid"])

    def test_count_waits_for_all(self) -> None:
        result = self.ok_allocating("create", "--resource-class", self.rc,
                                    "--count", "2", "--wait", "60", "-f",
                                    "json")
        found = result.json()
        for item in found:
            self.release_later(item["uuid"])
        self.assertEqual(2, len(found))
        self.assertEqual({"active"}, {a["state"] for a in found})
        node_uuids = {a["node_uuid"] for a in found}
        self.assertEqual(2, len(node_uuids))
        self.assertTrue(node_uuids <= set(self.nodes))

    def test_wait_failure_exits_1_with_last_error(self) -> None:
        empty = targets.unique("rc-none")
        result = self.fails(1, "create", "--resource-class", empty,
                            "--wait", "60")
        self.assertIn("failed", result.stderr)
        self.assertIn(empty, result.stderr)  # last_error names the class
        left = self.ok("list", "--resource-class", empty, "-f", "json")
        self.assertEqual(["error"], [a["state"] for a in left.json()])
        for item in left.json():
            self.release_later(item["uuid"])

    def test_wait_failure_deletes_with_delete_on_failure(self) -> None:
        empty = targets.unique("rc-none")
        result = self.fails(1, "create", "--resource-class", empty,
                            "--count", "2", "--wait", "60",
                            "--delete-on-failure")
        self.assertEqual(2, result.stderr.count("Deleted allocation"))
        left = self.ok("list", "--resource-class", empty, "-f", "json")
        self.assertEqual([], left.json())

    def test_duplicate_name_conflicts(self) -> None:
        _, (first,) = self.failed_allocations(1)
        name = targets.unique("dup")
        started = time.monotonic()
        self.ok("set", first, "--name", name)
        one_request = time.monotonic() - started
        started = time.monotonic()
        result = self.fails(1, "create", "--resource-class", self.rc,
                            "--name", name)
        conflict = time.monotonic() - started
        self.assertIn("409", result.stderr)
        # A deterministic conflict is reported at once, not retried for
        # seconds (python-ironicclient retries 409s for about 10 s).
        self.assertLess(conflict, one_request + 5.0)

    def test_unknown_allocation(self) -> None:
        missing = targets.unique("missing")
        for verb in ("get", "show", "delete"):
            result = self.fails(1, verb, missing)
            self.assertIn("404", result.stderr)
        self.fails(1, "set", missing, "--name", "x")

    def test_delete_several_reports_each_failure(self) -> None:
        _, uuids = self.failed_allocations(2)
        missing = targets.unique("missing")
        result = self.fails(1, "delete", uuids[0], missing, uuids[1])
        self.assertIn(f"Deleted allocation {uuids[0]}", result.stdout)
        self.assertIn(f"Deleted allocation {uuids[1]}", result.stdout)
        self.assertIn(missing, result.stderr)
        self.assertIn("1 of 3", result.stderr)
        self.ok("delete", "--ignore-missing", missing)

    def test_backfill_and_delete_of_active_node_allocation(self) -> None:
        node = self.nodes[2]
        deployed = self.target.set_provision(node, "active")
        self.assertEqual(202, deployed.status_code, deployed.text)
        self.addCleanup(self._undeploy, node)
        self.target.wait_node(node, lambda n: n["provision_state"] == "active",
                              what="active")
        created = self.create("--node", node, "--name",
                              targets.unique("bf"))
        self.assertEqual("active", created["state"])
        self.assertEqual(node, created["node_uuid"])
        self.assertEqual(self.rc, created["resource_class"])
        result = self.fails(1, "delete", created["uuid"])
        self.assertIn("409", result.stderr)
        self.ok("get", created["uuid"])

    def _undeploy(self, node: str) -> None:
        self.target.set_provision(node, "deleted")
        self.target.wait_node(
            node,
            lambda n: n["provision_state"] == "available"
            and not n.get("target_provision_state")
            and n["power_state"] == "power off",
            what="available after teardown",
        )

    # -- set / unset ---------------------------------------------------

    def test_set_and_unset(self) -> None:
        _, (uuid,) = self.failed_allocations(1)
        name = targets.unique("named")
        self.ok("set", uuid, "--name", name, "--extra", "a=1",
                "--extra", "b=2")
        shown = self.ok("get", name, "-f", "json").json()
        self.assertEqual(name, shown["name"])
        self.assertEqual({"a": "1", "b": "2"}, shown["extra"])
        self.ok("unset", name, "--extra", "a", "--name")
        shown = self.ok("get", uuid, "-f", "json").json()
        self.assertIsNone(shown["name"])
        self.assertEqual({"b": "2"}, shown["extra"])

    # -- list ----------------------------------------------------------

    def test_list_filters_and_formats(self) -> None:
        first = self.create("--resource-class", self.rc, "--wait", "60")
        second = self.create("--resource-class", self.rc, "--wait", "60")
        ours = {first["uuid"], second["uuid"]}

        listed = self.ok("list", "--resource-class", self.rc, "-f", "json")
        rows = listed.json()
        self.assertEqual(ours, {r["uuid"] for r in rows})
        self.assertEqual(DEFAULT_LIST, list(rows[0]))

        long = self.ok("list", "--resource-class", self.rc, "--long",
                       "-f", "yaml").yaml()
        self.assertEqual(set(ALL_FIELDS), set(long[0]))  # yaml sorts keys
        self.assertEqual(ours, {r["uuid"] for r in long})

        some = self.ok("list", "--resource-class", self.rc, "--fields",
                       "uuid,state", "-f", "csv").csv()
        self.assertEqual({"uuid", "state"}, set(some[0]))
        self.assertEqual({"active"}, {r["state"] for r in some})

        by_node = self.ok("list", "--node", first["node_uuid"], "-f",
                          "value", "-c", "uuid")
        self.assertEqual([first["uuid"]], by_node.lines())
        active = self.ok("list", "--resource-class", self.rc, "--state",
                         "active", "-f", "value", "-c", "uuid")
        self.assertEqual(ours, set(active.lines()))
        none = self.ok("list", "--resource-class", self.rc, "--state",
                       "error", "-f", "json")
        self.assertEqual([], none.json())

    def test_owner(self) -> None:
        # An allocation with an owner only matches nodes of that owner;
        # ours have none, so it fails, which is all this test needs.
        owner = targets.unique("proj")
        empty = targets.unique("rc-none")
        created = self.create("--resource-class", empty, "--owner", owner)
        self.assertEqual(owner, created["owner"])
        by_owner = self.ok("list", "--owner", owner, "--fields", "uuid",
                           "owner", "-f", "value")
        self.assertEqual([f"{created['uuid']} {owner}"], by_owner.lines())

    def test_list_pages_and_sorts_on_server(self) -> None:
        empty, uuids = self.failed_allocations(5)
        base = ["list", "--resource-class", empty, "-f", "value", "-c",
                "uuid"]
        paged = self.ok(*base, "--page-size", "2", "--sort", "uuid")
        self.assertEqual(sorted(uuids), paged.lines())
        down = self.ok(*base, "--page-size", "2", "--sort", "uuid:desc")
        self.assertEqual(sorted(uuids, reverse=True), down.lines())
        limited = self.ok(*base, "--page-size", "2", "--limit", "3",
                          "--sort", "uuid")
        self.assertEqual(sorted(uuids)[:3], limited.lines())
        rest = self.ok(*base, "--sort", "uuid", "--marker",
                       sorted(uuids)[2])
        self.assertEqual(sorted(uuids)[3:], rest.lines())

    # -- usage and connection errors -----------------------------------

    def _once_per_front_end(self) -> None:
        """Argument and connection errors never reach the target: check
        them against the reference target only, not again on Ironic."""
        if self.target.name != "reference":
            self.skipTest("target-independent; run on the reference target")

    def test_bad_arguments_exit_2(self) -> None:
        self._once_per_front_end()
        cases = [
            ["create"],
            ["create", "--resource-class", self.rc, "--extra", "novalue"],
            ["create", "--resource-class", self.rc, "--count", "0"],
            ["create", "--resource-class", self.rc, "--wait", "soon"],
            ["create", "--resource-class", self.rc, "--count", "2",
             "--name", "n"],
            ["create", "--resource-class", self.rc, "--count", "2",
             "-f", "shell"],
            ["list", "--limit", "-1"],
            ["list", "--sort", "traits"],
            ["list", "--sort", "uuid:sideways"],
            ["list", "--fields", "bogus"],
            ["list", "--long", "--fields", "uuid"],
            ["list", "--no-such-option"],
            ["get"],
            ["delete"],
            ["set", "x"],
            ["unset", "x"],
        ]
        for args in cases:
            result = self.cli(*args)
            self.assertEqual(2, result.returncode, repr(result))
            self.assertNotIn("Traceback", result.stderr)
        # Nothing was created by the rejected create commands.
        listed = self.ok("list", "--resource-class", self.rc, "-f", "json")
        self.assertEqual([], listed.json())

    def test_unreachable_server(self) -> None:
        self._once_per_front_end()
        endpoint = f"http://127.0.0.1:{free_port()}"
        result = clirunner.run(self.frontend, endpoint, "list")
        self.assertEqual(1, result.returncode, repr(result))
        self.assertIn("Unable to reach", result.stderr)
        self.assertIn(endpoint, result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        debug = clirunner.run(self.frontend, endpoint, "list",
                              global_args=["--debug"])
        self.assertEqual(1, debug.returncode, repr(debug))
        self.assertIn("Traceback", debug.stderr)


    def test_clouds_yaml(self) -> None:
        cloud = targets.unique("cloud")
        workdir = tempfile.mkdtemp(prefix="bm-alloc-clouds-")
        self.addCleanup(shutil.rmtree, workdir, True)
        config = os.path.join(workdir, "clouds.yaml")
        with open(config, "w") as stream:
            yaml.safe_dump({"clouds": {cloud: {
                "auth_type": "none",
                "auth": {"endpoint": self.target.endpoint},
                "baremetal_endpoint_override": self.target.endpoint,
            }}}, stream)
        env = {"OS_CLIENT_CONFIG_FILE": config}
        by_flag = clirunner.run(self.frontend, None, "list",
                                "--resource-class", self.rc, "-f", "json",
                                global_args=["--os-cloud", cloud], env=env)
        self.assertEqual(0, by_flag.returncode, repr(by_flag))
        self.assertEqual([], by_flag.json())
        by_env = clirunner.run(self.frontend, None, "list", "-f", "json",
                               "--resource-class", self.rc,
                               env={**env, "OS_CLOUD": cloud})
        self.assertEqual(0, by_env.returncode, repr(by_env))
        unknown = clirunner.run(self.frontend, None, "list",
                                global_args=["--os-cloud", "no-such-cloud"],
                                env=env)
        self.assertEqual(1, unknown.returncode, repr(unknown))
        self.assertIn("no-such-cloud", unknown.stderr)
        self.assertNotIn("Traceback", unknown.stderr)

    def test_api_version_option(self) -> None:
        pinned = ["--os-baremetal-api-version", "1.58"]
        listed = self.ok("list", "--resource-class", self.rc, "-f", "json",
                         global_args=pinned)
        self.assertEqual([], listed.json())
        too_old = self.fails(1, "create", "--resource-class", self.rc,
                             "--owner", "p", global_args=pinned)
        self.assertIn("1.60", too_old.stderr)
        self.assertEqual([], self.ok("list", "--resource-class", self.rc,
                                     "-f", "json").json())


class StandaloneCli(AllocationCliTests):
    """``baremetal-alloc``"""

    frontend = clirunner.STANDALONE

    def test_without_endpoint_is_a_usage_error(self) -> None:
        result = clirunner.run(self.frontend, None, "list")
        self.assertEqual(2, result.returncode, repr(result))
        self.assertIn("--os-endpoint", result.stderr)

    def test_endpoint_from_environment(self) -> None:
        result = clirunner.run(
            self.frontend, None, "list", "--resource-class", self.rc,
            "-f", "json", env={"OS_ENDPOINT": self.target.endpoint},
        )
        self.assertEqual(0, result.returncode, repr(result))
        self.assertEqual([], result.json())

    def test_unknown_command_exits_2(self) -> None:
        self.assertEqual(2, self.cli("frobnicate").returncode)


class OpenstackCli(AllocationCliTests):
    """``openstack baremetal allocation`` with python-ironicclient present"""

    frontend = clirunner.OPENSTACK

    def test_our_commands_win_and_ironicclient_still_works(self) -> None:
        openstack = os.path.join(os.path.dirname(sys.executable),
                                 "openstack")
        self.assertTrue(os.path.exists(openstack))
        for verb in ("create", "list", "get", "show", "delete", "set",
                     "unset"):
            result = clirunner.run(self.frontend, self.target.endpoint,
                                   verb, "--help")
            self.assertEqual(0, result.returncode, repr(result))
            # Only our commands have these options.
            self.assertIn("--delete-on-failure" if verb == "create"
                          else "usage:", result.stdout)
        debug = self.ok("list", "-f", "json", global_args=["--debug"])
        self.assertIn(
            "baremetal_allocclient.osc.v1.allocation.ListAllocations",
            debug.stderr,
        )
        quiet = self.ok("list", "--resource-class", self.rc)
        self.assertEqual("", quiet.stderr)  # no duplicate-command warning
        nodes = preforked.run(
            [openstack, "--os-auth-type", "none", "--os-endpoint",
             self.target.endpoint, "baremetal", "node", "show",
             self.nodes[0], "-f", "value", "-c", "resource_class"],
            env=clirunner.clean_env(), timeout=120)
        self.assertEqual(0, nodes.returncode, nodes.stderr)
        self.assertEqual(self.rc, nodes.stdout.strip())

    def test_switch_keeps_ironicclient_commands(self) -> None:
        """BAREMETAL_ALLOC_OSC_COMMANDS=ironicclient: ironicclient's own
        classes serve the shared verbs; ours still serve the others."""
        switch = {"BAREMETAL_ALLOC_OSC_COMMANDS": "ironicclient"}
        theirs = clirunner.run(self.frontend, self.target.endpoint,
                               "list", "--help", env=switch)
        self.assertEqual(0, theirs.returncode, repr(theirs))
        self.assertNotIn("--expired", theirs.stdout)
        self.assertNotIn("baremetal-allocclient", theirs.stdout)
        ours = clirunner.run(self.frontend, self.target.endpoint,
                             "list", "--help")
        self.assertIn("--expired", ours.stdout)
        capacity = clirunner.run(self.frontend, self.target.endpoint,
                                 "capacity", "--help", env=switch)
        self.assertIn("baremetal-allocclient", capacity.stdout)

    def test_each_verb_listed_once(self) -> None:
        """``openstack command list`` names each command once, under the
        group that serves it: our twelve verbs in openstack.extension, and
        python-ironicclient's registrations of the shared ones not at all,
        in every format."""
        openstack = os.path.join(os.path.dirname(sys.executable),
                                 "openstack")
        for fmt in ("json", "table", "value"):
            listed = preforked.run(
                [openstack, "command", "list", "-f", fmt],
                env=clirunner.clean_env(), timeout=120)
            self.assertEqual(0, listed.returncode, listed.stderr)
            self.assertEqual("", listed.stderr)
            names = re.findall(r"baremetal allocation [a-z]+|command list",
                               listed.stdout)
            self.assertEqual(len(names), len(set(names)), fmt)
            self.assertEqual(13, len(names), names)
        groups = json.loads(preforked.run(
            [openstack, "command", "list", "-f", "json"],
            env=clirunner.clean_env(), timeout=120).stdout)
        ours = [name for group in groups
                if group["Command Group"] == "openstack.extension"
                for name in group["Commands"]
                if name.startswith("baremetal allocation ")]
        self.assertEqual(12, len(ours), ours)
        # python-ironicclient's other commands are still listed.
        baremetal = [group["Commands"] for group in groups
                     if group["Command Group"] == "openstack.baremetal.v1"]
        self.assertIn("baremetal node list", baremetal[0])


globals().update(targets.per_target(StandaloneCli))
globals().update(targets.per_target(OpenstackCli))
