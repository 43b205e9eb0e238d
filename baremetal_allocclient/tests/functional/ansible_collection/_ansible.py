"""ansible-core from PyPI in a virtualenv of its own, and the collection
built and installed from this checkout, once per test process.

The virtualenv is ``$BAREMETAL_ALLOC_ANSIBLE_VENV`` (default
``<repo>/.venv-ansible``; ``.ci/run`` keeps it in
``~/.cache/baremetal-allocclient``), installed on demand under a file
lock like the peers' (:func:`..fixtures.peers.ensure_venv`).  The modules
run on this test process's Python (``ansible_python_interpreter``), which
has this package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from baremetal_allocclient.tests.fixtures.peers import (
    REPO_ROOT,
    Lazy,
    ensure_venv,
    venv_path,
)
from baremetal_allocclient.tests.fixtures.processes import clean_env

#: What the Ansible virtualenv holds (ansible-core 2.19 runs on the
#: controller's Python 3.11+ and its modules on 3.8 to 3.13).
ANSIBLE_REQUIREMENTS: tuple[str, ...] = ("ansible-core==2.19.14",)
ANSIBLE_VENV_ENV = "BAREMETAL_ALLOC_ANSIBLE_VENV"
NAMESPACE = "baremetal_alloc"
NAME = "cloud"
#: The collection's source in this repository.
SOURCE = os.path.join(REPO_ROOT, "ansible_collections", NAMESPACE, NAME)


def ansible_bin() -> str:
    """The Ansible virtualenv's ``bin`` directory (installed on demand)."""
    return ensure_venv(venv_path(ANSIBLE_VENV_ENV, ".venv-ansible"),
                       ANSIBLE_REQUIREMENTS, "Ansible")


def run(argv: Sequence[str], env: Mapping[str, str] | None = None,
        cwd: str | None = None, timeout: float = 300,
        input: str | None = None
        ) -> subprocess.CompletedProcess[str]:
    """One command of the Ansible virtualenv, to its end."""
    command = [os.path.join(ansible_bin(), argv[0]), *argv[1:]]
    return subprocess.run(command, capture_output=True, text=True,
                          env=clean_env(env), cwd=cwd, timeout=timeout,
                          input=input, check=False)


def checked(proc: subprocess.CompletedProcess[str]) -> str:
    if proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(proc.args)} exited {proc.returncode}\n"
            f"stdout: {proc.stdout[-6000:]}\nstderr: {proc.stderr[-4000:]}")
    return proc.stdout


class Installed:
    """The collection as a user gets it: ``ansible-galaxy collection
    build`` of the source, then ``install`` of that tarball into a
    collections directory of its own."""

    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="baremetal-alloc-ansible-")
        try:
            checked(run(["ansible-galaxy", "collection", "build", SOURCE,
                         "--output-path", self.root]))
            (self.tarball,) = [os.path.join(self.root, name)
                               for name in os.listdir(self.root)
                               if name.endswith(".tar.gz")]
            self.collections = os.path.join(self.root, "collections")
            checked(run(["ansible-galaxy", "collection", "install",
                         self.tarball, "-p", self.collections]))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


_INSTALLED = Lazy(Installed, Installed.close)


def installed() -> Installed:
    """The built and installed collection of this test process."""
    return _INSTALLED.get()


def _registered(task: Mapping[str, Any], var: str) -> dict[str, Any]:
    """``task`` registering its result as ``var``; its ``attempts`` key
    (not Ansible's) becomes a retry until it succeeds."""
    out = {key: value for key, value in task.items() if key != "attempts"}
    out["register"] = var
    if task.get("attempts", 1) > 1:
        out.update(retries=task["attempts"] - 1, delay=1,
                   until=f"{var} is succeeded")
    return out


def playbook(workdir: str, tasks: list[dict[str, Any]],
             play: Mapping[str, Any] | None = None,
             env: Mapping[str, str] | None = None
             ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run ``tasks`` (written as JSON, which is YAML) in one play on
    localhost; the process and what each task registered, by task name
    (a task that did not run is missing).

    Each task registers its result (``register`` is added, from its
    name; ``attempts: N`` retries it until it succeeds); an ``always``
    section writes them all to a JSON file with
    ``copy``, so the results are read as data, not from the output.
    """
    registered = {task["name"]: f"result_{index}"
                  for index, task in enumerate(tasks)}
    results_path = os.path.join(workdir, "results.json")
    pairs = ", ".join(f"{json.dumps(name)}: ({var} | default(None))"
                      for name, var in registered.items())
    plays = [{
        "hosts": "localhost", "gather_facts": False, **(play or {}),
        "tasks": [{"block": [_registered(task, registered[task["name"]])
                             for task in tasks],
                   "always": [{"name": "results", "ansible.builtin.copy": {
                       "content": "{{ {" + pairs + "} | to_json }}",
                       "dest": results_path}}]}]}]
    path = os.path.join(workdir, "playbook.yaml")
    with open(path, "w") as handle:
        json.dump(plays, handle, indent=1)
    inventory = os.path.join(workdir, "inventory.ini")
    with open(inventory, "w") as handle:
        handle.write(f"localhost ansible_connection=local "
                     f"ansible_python_interpreter={sys.executable}\n")
    proc = run(["ansible-playbook", "-i", inventory, path], env={
        "ANSIBLE_COLLECTIONS_PATH": installed().collections,
        "ANSIBLE_LOCAL_TEMP": os.path.join(workdir, "tmp"),
        "ANSIBLE_HOME": os.path.join(workdir, "home"),
        "ANSIBLE_NOCOLOR": "1",
        **(env or {})})
    try:
        with open(results_path) as handle:
            found: dict[str, Any] = json.load(handle)
    except (OSError, ValueError):
        raise AssertionError(
            f"ansible-playbook wrote no results (exit {proc.returncode})\n"
            f"stdout: {proc.stdout[-6000:]}\nstderr: {proc.stderr[-4000:]}"
        ) from None
    return proc, {name: value for name, value in found.items()
                  if value is not None}
