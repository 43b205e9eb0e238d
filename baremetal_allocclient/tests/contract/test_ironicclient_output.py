"""Side by side: python-ironicclient's and this project's shared verbs.

``openstack baremetal allocation create|list|show|delete|set|unset`` run
twice against the same reference server: once from the Ironic virtualenv
(OpenStackClient with python-ironicclient and no plugin of ours) and once
from this interpreter's ``openstack`` (this project's plugin, which
replaces those verbs). Their output must be the same in every format each
verb offers, so a script written for python-ironicclient keeps working.
"""

from __future__ import annotations

import os
import re
from typing import ClassVar

import testtools

from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.cli import clirunner

SHOW_FORMATS = ("table", "value", "json", "yaml", "shell")
LIST_FORMATS = ("table", "value", "json", "yaml", "csv")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00")
_PADDING = re.compile(r"  +|--+")


class _OutputCase(testtools.TestCase):
    """Every shared verb and format prints what python-ironicclient does.

    One class per verb group, so that stestr can spread the groups (each
    runs dozens of real ``openstack`` commands) over its workers.
    """

    target: ClassVar[targets.Target]
    rc: ClassVar[str]
    name: ClassVar[str]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.target = targets.reference_target()
        cls.rc = targets.unique("rc")
        cls.target.make_nodes(1, cls.rc, traits=["CUSTOM_CMP"])
        cls.name = targets.unique("cmp")
        body = {"resource_class": cls.rc, "name": cls.name,
                "traits": ["CUSTOM_CMP"], "extra": {"k": "v"}}
        made = cls.target.expect(201, "POST", "/v1/allocations", body)
        cls.target.wait_allocation(made["uuid"])
        # One in "error": no node, so None and an error message show.
        cls.target.expect(201, "POST", "/v1/allocations",
                          {"resource_class": cls.rc, "owner": "p1"})

    def cli(self, program: str, *args: str) -> str:
        """stdout of ``PROGRAM baremetal allocation ARGS`` (must succeed)."""
        proc = preforked.run(
            [program, "--os-auth-type", "none", "--os-endpoint",
             self.target.endpoint, "baremetal", "allocation", *args],
            env=clirunner.clean_env(), timeout=180)
        self.assertEqual(0, proc.returncode,
                         f"{program} {args}: {proc.stderr}")
        return proc.stdout

    @property
    def programs(self) -> tuple[str, str]:
        """(python-ironicclient's ``openstack``, ours)."""
        return (os.path.join(targets.ensure_ironic_venv(), "openstack"),
                os.path.join(clirunner.BIN_DIR, "openstack"))

    def assertSame(self, *args: str) -> None:
        theirs, ours = (self.cli(p, *args) for p in self.programs)
        self.assertEqual(theirs, ours, f"baremetal allocation {args}")


class ShowOutputTest(_OutputCase):

    def test_show(self) -> None:
        for fmt in SHOW_FORMATS:
            self.assertSame("show", self.name, "-f", fmt)
            self.assertSame("show", self.name, "--fields", "uuid", "state",
                            "node_uuid", "-f", fmt)


class ListOutputTest(_OutputCase):

    def test_list(self) -> None:
        for fmt in LIST_FORMATS:
            for extra in ((), ("--long",), ("--fields", "name", "uuid")):
                self.assertSame("list", "--resource-class", self.rc,
                                "--sort", "uuid", *extra, "-f", fmt)


class ChangeOutputTest(_OutputCase):

    def test_create_set_unset_delete(self) -> None:
        """New records differ only in their identity and timestamps."""
        rc = targets.unique("none")
        for fmt in SHOW_FORMATS:
            outputs = []
            for program in self.programs:
                name = targets.unique("new")  # the same length each time
                out = self.cli(program, "create", "--resource-class",
                               rc, "--name", name,
                               "--extra", "k=v", "-f", fmt)
                uuid = self.target.allocation(name)["uuid"]
                outputs.append(_normalized(
                    out.replace(uuid, "UUID").replace(name, "NAME")))
            self.assertEqual(outputs[0], outputs[1], fmt)
        for verb in (("set", "--name", "NEW", "--extra", "a=b"),
                     ("unset", "--extra", "a"),
                     ("delete",)):
            outputs = []
            for program in self.programs:
                name = targets.unique("new")
                self.target.expect(201, "POST", "/v1/allocations", {
                    "resource_class": targets.unique("none"), "name": name,
                    "extra": {"a": "b"}})
                args = [verb[0], name, *verb[1:]]
                if verb[0] == "set":
                    args[3] = targets.unique("new")
                outputs.append(self.cli(program, *args).replace(name, "N"))
            self.assertEqual(outputs[0], outputs[1], verb[0])


def _normalized(text: str) -> str:
    """Timestamps and table padding made comparable."""
    text = _TIME.sub("TIME", text)
    return _PADDING.sub(" ", text)
