"""Run this project's real command-line front ends as subprocesses.

Both front ends are the installed console scripts next to the running
interpreter: ``baremetal-alloc`` and ``openstack`` (python-openstackclient
with this project's plugin, and python-ironicclient installed too, so the
runs also prove which implementation serves ``baremetal allocation``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from baremetal_allocclient.tests.fixtures import preforked
from baremetal_allocclient.tests.fixtures.processes import clean_env

BIN_DIR = os.path.dirname(sys.executable)
STANDALONE = "baremetal-alloc"
OPENSTACK = "openstack"


def argv_for(
    frontend: str,
    endpoint: str | None,
    args: Sequence[str],
    global_args: Sequence[str] = (),
) -> list[str]:
    """The full command line of one allocation command."""
    if frontend == STANDALONE:
        head = [os.path.join(BIN_DIR, STANDALONE), *global_args]
        if endpoint is not None:
            head += ["--os-endpoint", endpoint]
        return [*head, *args]
    head = [os.path.join(BIN_DIR, OPENSTACK), *global_args]
    head += ["--os-auth-type", "none"]
    if endpoint is not None:
        head += ["--os-endpoint", endpoint]
    return [*head, "baremetal", "allocation", *args]


class CliResult:
    """A finished run with parsers for each output format."""

    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.argv = list(proc.args)
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def __repr__(self) -> str:
        return (
            f"<{' '.join(self.argv[1:])} -> {self.returncode}\n"
            f"stdout: {self.stdout}\nstderr: {self.stderr}>"
        )

    def json(self) -> Any:
        return json.loads(self.stdout)

    def yaml(self) -> Any:
        return yaml.safe_load(self.stdout)

    def csv(self) -> list[dict[str, str]]:
        return list(csv.DictReader(io.StringIO(self.stdout)))

    def lines(self) -> list[str]:
        return [line for line in self.stdout.splitlines() if line]

    def shell(self) -> dict[str, str]:
        """Parse ``-f shell`` output (``name="value"`` lines)."""
        found: dict[str, str] = {}
        for line in self.lines():
            name, _, value = line.partition("=")
            assert value.startswith('"') and value.endswith('"'), line
            found[name] = value[1:-1].replace('\\"', '"')
        return found


def run(
    frontend: str,
    endpoint: str | None,
    *args: str,
    global_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 180,
) -> CliResult:
    """Run one command and return its result, whatever the exit code."""
    proc = preforked.run(
        argv_for(frontend, endpoint, args, global_args),
        env=clean_env(env), timeout=timeout)
    return CliResult(proc)
