"""Ironic's own API suite (ironic-tempest-plugin 3.2.0 on tempest 47.0.0)
against the reference server, behind a real Keystone (issue 51).

One Keystone and one reference server (SQLite) for the class; the server
is the catalog's ``baremetal`` endpoint and tempest reaches it as any
cloud's: system-scoped admin, ``[enforce_scope] ironic = true``, dynamic
credentials.  CI runs what fits its time budget (the whole table is
``tools/ironic-tempest``, doc/source/reference/api-compatibility.rst):

* ``tests/api/admin/test_allocations``: all 17 must pass (SQLite);
* the RBAC node tests' owner and lessee cases (:data:`OWNER_LESSEE`) on
  SQLite (in the same tempest run), PostgreSQL and MariaDB: a second
  server on a scratch database of each configured kind becomes the
  catalog's endpoint in turn (a kind whose URL is unset is skipped, as
  the other database tests do).

Every test listed must pass and no other may run: the counts are
asserted, so a test the plugin renames or a new failure is seen.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from typing import ClassVar

import testtools

from baremetal_allocclient.tests.fixtures import databases
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.broker import _keystone_broker
from baremetal_allocclient.tests.functional.keystone import _cloud, _keystone
from baremetal_allocclient.tests.functional.tempest import _tempest

_API = "ironic_tempest_plugin.tests.api."
ALLOCATIONS = _API + "admin.test_allocations."
#: The allocation tests (all of the module).
ALLOCATION_TESTS = 17
_NODES = _API + "rbac_defaults.test_nodes.TestNode"
#: The RBAC node tests about owner and lessee, all ten: a project
#: reader sees no node it neither owns nor leases, and changing one is a
#: 404 (the node is looked up before the role is checked, as in Ironic);
#: a system reader sees every node and changes neither field.
OWNER_LESSEE = tuple(
    f"{_NODES}{who}Reader.test_reader_{case}" for who, case in (
        ("Project", "cannot_get_node"),
        ("Project", "list_is_empty"),
        ("Project", "cannot_update_node_owner"),
        ("Project", "cannot_update_node_lessee"),
        ("Project", "cannot_update_owner_provisioned"),
        ("System", "can_get_node"),
        ("System", "list_is_not_empty"),
        ("System", "cannot_update_node_owner"),
        ("System", "cannot_update_node_lessee"),
        ("System", "cannot_update_owner_provisioned"),
    ))


def _exactly(ids: tuple[str, ...]) -> list[str]:
    """Include-list regexes naming exactly these tests (an id may end
    with tempest's ``[id-...]``)."""
    return [f"^{re.escape(test)}(\\[|$)" for test in ids]


class IronicTempestTests(testtools.TestCase):
    """The plugin's allocation and owner/lessee RBAC tests."""

    cloud: ClassVar[_cloud.Cloud]
    bin_dir: ClassVar[str]
    durations: ClassVar[dict[str, float]] = {}

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.bin_dir = _tempest.ensure_tempest_venv()
        # bcrypt's least cost: tempest makes a user per credential.  No
        # pause between fake-hardware states: Ironic's fake driver tears a
        # node down at once, and a class's clean-up deletes the node a
        # test has just told to tear down (a 409 while it is cleaning).
        # One Keystone thread: tempest's workers create and delete their
        # users at the same moments, and Keystone on SQLite answers 500
        # to one of two writes started together.
        cls.cloud = _cloud.Cloud(hash_rounds=4,
                                 serve_args=("--step-delay", "0"),
                                 keystone_threads=1)
        cls.addClassCleanup(cls.cloud.close)

    def tempest(self, include: list[str],
                concurrency: int = 2) -> _tempest.Outcomes:
        """Run the tests ``include`` names against the catalog's
        endpoint; each one's outcome."""
        workdir = tempfile.mkdtemp(prefix="bm-alloc-tempest-")
        self.addCleanup(shutil.rmtree, workdir, ignore_errors=True)
        config = _tempest.write_config(workdir, _tempest.Cloud(
            self.cloud.keystone.url,
            self.cloud.users[_cloud.ADMIN].password, _keystone.REGION))
        began = time.monotonic()
        try:
            return _tempest.run(self.bin_dir, workdir, config, include,
                                concurrency=concurrency)
        finally:
            self.durations[self.id()] = time.monotonic() - began
            self.addDetail("tempest seconds", testtools.content.text_content(
                f"{time.monotonic() - began:.1f}"))
            self.addDetail("tempest log (errors)",
                           testtools.content.text_content(
                               _errors(f"{workdir}/tempest.log")))

    def assertAllPass(self, found: dict[str, str], expected: int,
                      prefix: str) -> None:
        failed = {test: status for test, status in found.items()
                  if status != "success"}
        self.assertEqual({}, failed)
        self.assertEqual(expected, len(found), sorted(found))
        self.assertEqual([], [t for t in found if not t.startswith(prefix)])

    def _allocations_and_owner_lessee(self) -> None:
        """The allocation and owner/lessee tests in one tempest run
        against the catalog's endpoint: every one passes."""
        found = self.tempest([f"^{re.escape(ALLOCATIONS)}",
                              *_exactly(OWNER_LESSEE)])
        self.assertAllPass(
            {t: s for t, s in found.items() if t.startswith(ALLOCATIONS)},
            ALLOCATION_TESTS, ALLOCATIONS)
        self.assertAllPass(
            {t: s for t, s in found.items() if not t.startswith(ALLOCATIONS)},
            len(OWNER_LESSEE), _NODES)

    def test_allocations_and_owner_lessee_sqlite(self) -> None:
        """One tempest run (its start and credentials cost more than
        the owner/lessee tests themselves)."""
        self._allocations_and_owner_lessee()

    def _owner_lessee(self, kind: str) -> None:
        scratch = databases.scratch(self.addCleanup, kind)
        server = self.cloud.another_server(db_url=scratch.url)
        self.addCleanup(server.cleanup)
        self.cloud.point_endpoint(server.endpoint)
        self.addCleanup(self.cloud.point_endpoint,
                        self.cloud.server.endpoint)
        found = self.tempest(_exactly(OWNER_LESSEE))
        self.assertAllPass(found, len(OWNER_LESSEE), _NODES)

    def test_allocations_through_the_broker(self) -> None:
        """The allocation and owner/lessee tests through the server in
        front of a real Ironic behind the same Keystone (``--backend
        ironic``): the
        server is the catalog's endpoint; it claims in Ironic with its
        own system-scoped account and passes the rest (nodes, chassis)
        on with tempest's tokens."""
        if os.environ.get(targets.IRONIC_SWITCH_ENV, "1") == "0":
            self.skipTest("real Ironic skipped")
        ironic = _keystone_broker.start_ironic(self.cloud, self.addCleanup)
        broker = _keystone_broker.start_broker(
            self.cloud, self.addCleanup, "--ironic-url", ironic.endpoint)
        self.cloud.point_endpoint(broker.endpoint)
        self.addCleanup(self.cloud.point_endpoint,
                        self.cloud.server.endpoint)
        self._allocations_and_owner_lessee()

    def test_owner_lessee_postgresql(self) -> None:
        self._owner_lessee("postgresql")

    def test_owner_lessee_mariadb(self) -> None:
        self._owner_lessee("mysql")


#: A request tempest logged with a 4xx or 5xx answer, or an error.
_BAD = re.compile(r"\): [45]\d\d [A-Z]+ | ERROR | WARNING ")


def _errors(path: str, size: int = 20000) -> str:
    """The lines of tempest's log about failed requests and errors."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "".join(line for line in handle
                           if _BAD.search(line))[-size:]
    except OSError as exc:
        return f"(no log: {exc})"


