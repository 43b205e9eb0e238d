"""Ironic's own API suite: tempest and ironic-tempest-plugin.

Both are installed once, pinned, into their own virtualenv (default
``<repo>/.venv-tempest``, overridden by ``BAREMETAL_ALLOC_TEMPEST_VENV``)
under a file lock, like the other peers.  :func:`write_config` writes the
``tempest.conf`` of a cloud (Keystone's URL and its system admin,
``[enforce_scope] ironic = true``, ``fake-hardware``, the API versions
both targets serve) and :func:`run` runs ``tempest run`` on chosen tests
and reads its subunit stream: each test's outcome by its id.
"""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

import subunit
import testtools

from baremetal_allocclient.tests.fixtures.peers import ensure_venv, venv_path
from baremetal_allocclient.tests.fixtures.processes import (
    StartError,
    clean_env,
)

VENV_ENV = "BAREMETAL_ALLOC_TEMPEST_VENV"
REQUIREMENTS = ("tempest==47.0.0", "ironic-tempest-plugin==3.2.0")
PLUGIN = "ironic_tempest_plugin.tests.api"
#: The API versions the plugin asks for: Ironic 39's range.
MIN_MICROVERSION = "1.1"
MAX_MICROVERSION = "1.115"


def ensure_tempest_venv() -> str:
    """Install tempest and the plugin once (file-locked); their bin dir."""
    return ensure_venv(venv_path(VENV_ENV, ".venv-tempest"), REQUIREMENTS,
                       "tempest")


@dataclass(frozen=True)
class Cloud:
    """What tempest needs of a cloud: Keystone and its system admin."""

    keystone_url: str  # the identity API, .../v3
    admin_password: str
    region: str


def write_config(workdir: str, cloud: Cloud) -> str:
    """``workdir/etc/tempest.conf`` for ``cloud``; its path.

    Dynamic credentials: tempest makes the projects and users each test
    class asks for (``system_admin``, project admins, members, readers)
    with the bootstrap admin.  Only the baremetal service is available.
    """
    etc = os.path.join(workdir, "etc")
    os.makedirs(etc, exist_ok=True)
    path = os.path.join(etc, "tempest.conf")
    services = ("nova", "glance", "neutron", "cinder", "swift",
                "ironic_inspector", "placement")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            "[DEFAULT]\n"
            f"log_file = {os.path.join(workdir, 'tempest.log')}\n"
            "[auth]\n"
            "use_dynamic_credentials = true\n"
            "admin_username = admin\n"
            f"admin_password = {cloud.admin_password}\n"
            "admin_project_name = admin\n"
            "admin_domain_name = Default\n"
            "[identity]\n"
            f"uri_v3 = {cloud.keystone_url}\n"
            "auth_version = v3\n"
            f"region = {cloud.region}\n"
            "disable_ssl_certificate_validation = true\n"
            "[identity-feature-enabled]\n"
            "api_v2 = false\n"
            "[service_available]\n"
            "ironic = true\n"
            + "".join(f"{name} = false\n" for name in services)
            + "[enforce_scope]\n"
            "ironic = true\n"
            "[baremetal]\n"
            "driver = fake-hardware\n"
            f"min_microversion = {MIN_MICROVERSION}\n"
            f"max_microversion = {MAX_MICROVERSION}\n"
            "enabled_hardware_types = fake-hardware\n"
            "enabled_drivers =\n"
            "unprovision_timeout = 60\n"
            "active_timeout = 60\n"
            "power_timeout = 60\n"
            "association_timeout = 60\n"
            "deploywait_timeout = 60\n")
    return path


#: A test's outcome: "success", "fail", "skip" (as subunit names them).
Outcomes = dict[str, str]


def outcomes(stream: bytes) -> Outcomes:
    """Each test's final status in a subunit v2 stream (set-up
    failures, ``setUpClass (...)``, included under their own id)."""
    found: Outcomes = {}

    def record(test: dict[str, object]) -> None:
        status = str(test["status"])
        if status in ("success", "fail", "skip", "xfail", "uxsuccess"):
            found[str(test["id"]).split("[", 1)[0]] = status

    case = subunit.ByteStreamToStreamResult(io.BytesIO(stream),
                                            non_subunit_name="stdout")
    result = testtools.StreamToDict(record)
    result.startTestRun()
    case.run(result)
    result.stopTestRun()
    return found


def run(bin_dir: str, workdir: str, config: str, include: Sequence[str],
        exclude: Sequence[str] = (), concurrency: int = 2,
        timeout: float = 900) -> Outcomes:
    """``tempest run`` of the tests matching the ``include`` regexes but
    not the ``exclude`` ones, in ``workdir``; each test's outcome."""
    lists = []
    for name, patterns in (("include", include), ("exclude", exclude)):
        if not patterns:
            continue
        listed = os.path.join(workdir, f"{name}.txt")
        with open(listed, "w", encoding="utf-8") as handle:
            handle.write("".join(f"{p}\n" for p in patterns))
        lists += [f"--{name}-list", listed]
    argv = [os.path.join(bin_dir, "tempest"), "run", "--config-file",
            config, "--subunit", "--concurrency", str(concurrency), *lists]
    proc = subprocess.run(argv, cwd=workdir, capture_output=True,
                          timeout=timeout, env=clean_env(), check=False)
    found = outcomes(proc.stdout)
    if not found:
        raise StartError(
            f"tempest ran no test ({proc.returncode}): {' '.join(argv)}\n"
            f"{proc.stderr[-4000:].decode(errors='replace')}")
    return found
