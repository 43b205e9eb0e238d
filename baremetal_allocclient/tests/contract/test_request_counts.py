"""python-ironicclient makes the same requests to both targets.

The real ``openstack`` command (python-ironicclient, from the Ironic
virtualenv) runs ``baremetal node list``, ``allocation create --wait``
and ``allocation delete`` through a counting loopback proxy in front of
each target.  A server that serves a lower maximum API version than the
client asks for costs every command a 406, a ``GET /v1`` and a retry;
with the same maximum as Ironic, the request sequences are the same.

The only timing-dependent requests are the polls of ``--wait`` (one per
second while the allocation is still ``allocating``): consecutive
identical polls are counted once when comparing, and the raw numbers are
in the failure message.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import testtools
from testtools.content import text_content

from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.fixtures.processes import clean_env
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.counting_proxy import (
    CountingProxy,
)

_UUID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_UNIQUE = re.compile(r"\b(rc|node|alloc)-[0-9a-f]{12}\b")

Seen = list[tuple[str, str, int]]


def normalized(seen: Seen) -> Seen:
    """UUIDs and per-test names replaced; repeated polls counted once."""
    result: Seen = []
    for method, path, status in seen:
        entry = (method, _UNIQUE.sub(r"\1-X", _UUID.sub("UUID", path)),
                 status)
        if method == "GET" and result and result[-1] == entry:
            continue
        result.append(entry)
    return result


class RequestCountTests(testtools.TestCase):
    """The same commands cost the same requests on both targets."""

    def run_commands(self, target: targets.Target) -> dict[str, Seen]:
        """Run the three commands through a proxy; what each sent."""
        rc = targets.unique("rc")
        target.make_nodes(1, rc, name_prefix=targets.unique("node"))
        proxy = CountingProxy(target.endpoint)
        self.addCleanup(proxy.close)
        bin_dir = target._clients_bin()

        def openstack(*args: str) -> subprocess.CompletedProcess[str]:
            argv = [f"{bin_dir}/openstack", "--os-auth-type", "none",
                    "--os-endpoint", proxy.endpoint, "baremetal", *args]
            proc = preforked.run(argv, env=clean_env(),
                                 timeout=180)
            self.assertEqual(0, proc.returncode,
                             f"{target.name}: {args}: {proc.stderr}")
            return proc

        seen: dict[str, Seen] = {}
        openstack("node", "list", "--resource-class", rc)
        seen["node list"] = proxy.take()
        created: dict[str, Any] = json.loads(openstack(
            "allocation", "create", "--resource-class", rc, "--wait", "60",
            "-f", "json").stdout)
        self.assertEqual("active", created["state"], created)
        seen["allocation create --wait"] = proxy.take()
        openstack("allocation", "delete", created["uuid"])
        seen["allocation delete"] = proxy.take()
        return seen

    def test_same_requests_as_ironic(self) -> None:
        ironic = targets.ironic_target()  # skipped when switched off
        reference = targets.reference_target()
        on_ironic = self.run_commands(ironic)
        on_reference = self.run_commands(reference)
        self.addDetail("request-counts", text_content(json.dumps({
            command: {"ironic": len(on_ironic[command]),
                      "reference": len(on_reference[command])}
            for command in on_ironic})))
        for command, ironic_seen in on_ironic.items():
            reference_seen = on_reference[command]
            self.assertEqual(
                normalized(ironic_seen), normalized(reference_seen),
                f"{command}: Ironic {len(ironic_seen)} requests "
                f"{ironic_seen}, reference {len(reference_seen)} requests "
                f"{reference_seen}")
            # No version negotiation on either: the client's first
            # request is accepted.
            self.assertNotIn(406, [s for _m, _p, s in reference_seen])
