"""Run the documentation's examples exactly as the pages include them.

The getting-started page and the SDK tutorial include files from
``doc/source/examples`` (and the CLI's ``examples/reserve-node.sh``) with
``literalinclude``; these tests run those files against a reference server
that they start with the documented commands, in a fresh directory, and
check what the pages say the examples print.  The only change made to a
file before running it is the port: the documented ``6385`` becomes a free
port, so tests can run in parallel with other servers.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, ClassVar

import requests
import testtools

from baremetal_allocclient.tests.fixtures.processes import (
    Process,
    clean_env,
    free_port,
)
from baremetal_allocclient.v1 import versions

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
EXAMPLES = os.path.join(REPO, "doc", "source", "examples")
# The CLI's shell example, included by the getting-started page.
RESERVE_NODE = os.path.join(REPO, "examples", "reserve-node.sh")
BIN = os.path.dirname(sys.executable)
DOCUMENTED_PORT = "6385"
HEADERS = {"X-OpenStack-Ironic-API-Version": "latest"}
UUID_RE = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


class _DocsServer(testtools.TestCase):
    """A reference server set up by a page's documented steps."""

    #: Example files copied into the working directory first.
    FILES: ClassVar[tuple[str, ...]] = ("inventory.yaml",)
    #: Example scripts run, in order, before the server starts.
    SETUP: ClassVar[tuple[str, ...]] = ("getting-started/setup-database.sh",)
    #: The example holding the one ``serve`` command.
    SERVE: ClassVar[str] = "getting-started/serve.sh"
    #: Credentials the tests use for their own API checks.
    AUTH: ClassVar[tuple[str, str] | None] = None

    workdir: ClassVar[str]
    port: ClassVar[int]
    endpoint: ClassVar[str]
    env: ClassVar[dict[str, str]]
    server: ClassVar[Process]
    nodes: ClassVar[dict[str, str]]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.workdir = tempfile.mkdtemp(prefix="bm-alloc-docs-")
        cls.addClassCleanup(shutil.rmtree, cls.workdir, True)
        cls.port = free_port()
        cls.endpoint = f"http://127.0.0.1:{cls.port}"
        # The reader's shell: our executables first, no OS_* settings.
        cls.env = clean_env(
            {"PATH": BIN + os.pathsep + os.environ.get("PATH", "")})
        for name in cls.FILES:
            shutil.copy(os.path.join(EXAMPLES, name), cls.workdir)
        for name in cls.SETUP:
            result = cls.run_file(name)
            if result.returncode != 0:
                raise AssertionError(f"{name} failed: {result}")
            if name.endswith("setup-database.sh") and (
                    "Enrolled 5 node(s)" not in result.stdout):
                raise AssertionError(f"{name}: {result.stdout}")
        cls.start_server()
        listed = requests.get(cls.endpoint + "/v1/nodes", headers=HEADERS,
                              auth=cls.AUTH, timeout=30).json()["nodes"]
        cls.nodes = {node["uuid"]: node["name"] for node in listed}

    @classmethod
    def start_server(cls) -> None:
        """Run the serve example's command without a shell, to own its
        PID (a backslash-newline continues the line, as in a shell)."""
        command = cls.text(cls.SERVE).replace("\\\n", " ").strip()
        cls.server = Process(
            shlex.split(command), os.path.join(cls.workdir, "serve.log"),
            env=cls.env, cwd=cls.workdir)
        cls.addClassCleanup(cls.server.stop)
        cls.server.wait_ready(cls.endpoint + "/", 60, status=None)

    @classmethod
    def text(cls, name: str) -> str:
        """An example file, with the documented port replaced by ours."""
        with open(os.path.join(EXAMPLES, name), encoding="utf-8") as stream:
            return stream.read().replace(DOCUMENTED_PORT, str(cls.port))

    @classmethod
    def run_file(cls, name: str, *args: str,
                 env: dict[str, str] | None = None
                 ) -> subprocess.CompletedProcess[str]:
        """Run an example (bash or Python) in the working directory."""
        path = os.path.join(cls.workdir, os.path.basename(name))
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(cls.text(name))
        interpreter = sys.executable if name.endswith(".py") else "bash"
        return subprocess.run(
            [interpreter, path, *args], cwd=cls.workdir,
            env={**cls.env, **(env or {})}, capture_output=True, text=True,
            timeout=300, check=False)

    # -- helpers ---------------------------------------------------------
    def ok(self, name: str, *args: str,
           env: dict[str, str] | None = None) -> str:
        result = self.run_file(name, *args, env=env)
        self.assertEqual(0, result.returncode,
                         f"{name}: {result.stdout}\n{result.stderr}")
        return result.stdout

    def api(self, path: str, extensions: str | None = None) -> Any:
        """GET ``path``; ``extensions``: the ones to opt into."""
        headers = dict(HEADERS)
        if extensions is not None:
            headers["X-Baremetal-Alloc-Extensions"] = extensions
        response = requests.get(self.endpoint + path, headers=headers,
                                auth=self.AUTH, timeout=30)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()

    def assertNothingAllocated(self) -> None:
        """Every example releases what it reserved."""
        self.assertEqual([], self.api("/v1/allocations")["allocations"])
        for node in self.api("/v1/nodes?fields=uuid,instance_uuid,"
                             "allocation_uuid")["nodes"]:
            self.assertIsNone(node["allocation_uuid"], node)
            self.assertIsNone(node["instance_uuid"], node)

    @property
    def client_env(self) -> dict[str, str]:
        return {"OS_ENDPOINT": self.endpoint}



class DocumentedExamplesTest(_DocsServer):
    """The getting-started steps, the shell example and the SDK tutorial."""

    # -- getting started -------------------------------------------------
    def test_getting_started_reserve_and_release(self) -> None:
        out = self.ok("getting-started/allocate.sh")
        self.assertRegex(out, r"\| state\s+\| active\s+\|")
        match = re.search(rf"\| node_uuid\s+\| ({UUID_RE})", out)
        assert match is not None, out
        node_uuid = match.group(1)
        # The page says: node-0 or node-2, the baremetal nodes with a GPU.
        self.assertIn(self.nodes[node_uuid], ("node-0", "node-2"))
        self.assertRegex(out, rf"\| {UUID_RE} \| web-1 \| baremetal\s+\| "
                              rf"active \| {node_uuid} \|")

        out = self.ok("getting-started/openstack.sh")
        self.assertEqual(node_uuid, out.strip())

        # The reader's shell still has OS_ENDPOINT from allocate.sh.
        out = self.ok("getting-started/release.sh", env=self.client_env)
        self.assertEqual("Deleted allocation web-1", out.strip())
        self.assertNothingAllocated()

    def reserve_node(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run examples/reserve-node.sh as the page shows, with sh."""
        return subprocess.run(
            ["sh", RESERVE_NODE, *args], cwd=self.workdir,
            env={**self.env, **self.client_env}, capture_output=True,
            text=True, timeout=300, check=False)

    def test_reserve_node_script_prints_uuid_and_releases(self) -> None:
        result = self.reserve_node("-t", "CUSTOM_GPU", "baremetal")
        self.assertEqual(0, result.returncode, result.stderr)
        node_uuid = result.stdout.strip()
        self.assertIn(self.nodes.get(node_uuid), ("node-0", "node-2"))
        self.assertRegex(
            result.stderr,
            rf"reserved node {node_uuid} \(allocation reserve-\S+-\d+\)\n"
            rf"(.*\n)*released node {node_uuid}\n")
        self.assertNothingAllocated()

    def test_reserve_node_script_runs_a_command(self) -> None:
        result = self.reserve_node(
            "-t", "CUSTOM_GPU", "baremetal",
            "sh", "-c", 'echo "deploying to $NODE_UUID"')
        self.assertEqual(0, result.returncode, result.stderr)
        match = re.fullmatch(rf"deploying to ({UUID_RE})\n", result.stdout)
        assert match is not None, result.stdout
        self.assertIn(self.nodes[match.group(1)], ("node-0", "node-2"))
        self.assertNothingAllocated()

    def test_reserve_node_script_failure_and_usage(self) -> None:
        result = self.reserve_node("-t", "CUSTOM_FPGA", "baremetal")
        self.assertEqual(1, result.returncode, result.stderr)
        self.assertEqual("", result.stdout)
        self.assertIn("no suitable nodes have the requested traits "
                      "CUSTOM_FPGA", result.stderr)
        self.assertNothingAllocated()
        self.assertEqual(2, self.reserve_node().returncode)

    # -- SDK tutorial ----------------------------------------------------
    def test_sdk_allocate_one(self) -> None:
        out = self.ok("sdk/allocate_one.py", env=self.client_env)
        match = re.fullmatch(
            rf"web-1 reserved (node-[02]) \(({UUID_RE})\)\n"
            r"instance_uuid is the allocation: True\n"
            r"released\n", out)
        assert match is not None, out
        self.assertEqual(match.group(1), self.nodes[match.group(2)])
        self.assertNothingAllocated()

    def test_sdk_step_by_step(self) -> None:
        out = self.ok("sdk/step_by_step.py", env=self.client_env)
        lines = out.splitlines()
        self.assertEqual(3, len(lines), out)
        gpu = re.fullmatch(rf"\['CUSTOM_GPU'\]: got node ({UUID_RE})",
                           lines[0])
        assert gpu is not None, out
        self.assertIn(self.nodes[gpu.group(1)], ("node-0", "node-2"))
        self.assertRegex(
            lines[1], rf"^\['CUSTOM_FPGA'\]: failed: Failed to process "
                      rf"allocation {UUID_RE}: no suitable nodes have the "
                      rf"requested traits CUSTOM_FPGA\.$")
        self.assertEqual(
            "HTTP 404: Allocation no-such-allocation could not be found.",
            lines[2])
        self.assertNothingAllocated()

    def test_sdk_many_at_once(self) -> None:
        out = self.ok("sdk/many.py", env=self.client_env)
        lines = out.splitlines()
        self.assertEqual("4 active, 1 failed", lines[0], out)
        self.assertRegex(
            lines[1], rf"^  {UUID_RE}: Failed to process allocation "
                      rf"{UUID_RE}: no available nodes match the resource "
                      rf"class baremetal\.$")
        self.assertEqual("0 allocations left", lines[2])
        self.assertNothingAllocated()

    def test_sdk_one_request(self) -> None:
        out = self.ok("sdk/one_request.py", env=self.client_env)
        # node-0 and node-2 have the GPU and 128 GiB.
        self.assertEqual(["2 nodes qualify", "unnamed: lease ends in 2h",
                          "gpu-pair-0 gpu-pair-1", "released 2"],
                         out.splitlines())
        self.assertNothingAllocated()

    def test_sdk_from_cloud(self) -> None:
        clouds = os.path.join(self.workdir, "clouds.yaml")
        with open(clouds, "w", encoding="utf-8") as stream:
            stream.write(self.text("sdk/clouds.yaml"))
        # Something active to list.
        created = requests.post(
            self.endpoint + "/v1/allocations", headers=HEADERS,
            json={"resource_class": "compute-small"}, timeout=30)
        self.assertEqual(201, created.status_code, created.text)
        uuid = created.json()["uuid"]
        self.addCleanup(requests.delete,
                        f"{self.endpoint}/v1/allocations/{uuid}",
                        headers=HEADERS, timeout=30)
        deadline = time.monotonic() + 30
        while self.api(f"/v1/allocations/{uuid}")["state"] == "allocating":
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        node = self.api(f"/v1/allocations/{uuid}")["node_uuid"]

        out = self.ok("sdk/from_cloud.py",
                      env={"OS_CLIENT_CONFIG_FILE": clouds})
        served = self.api("/v1")["version"]["version"]
        expected = min(versions.CLIENT_MAX_VERSION,
                       versions.parse_version(served))
        self.assertEqual(
            [f"API version {versions.format_version(expected)}",
             f"{uuid} {node}"],
            out.splitlines())


class SecurityExampleTest(_DocsServer):
    """The security page's http_basic example with project scoping."""

    FILES = ("inventory.yaml", "security/projects.yaml")
    SETUP = ("getting-started/setup-database.sh",
             "security/make-htpasswd.sh")
    SERVE = "security/serve.sh"
    AUTH = ("operator", "operator-secret")

    def test_member_allocates_in_its_project(self) -> None:
        self.assertEqual(
            401, requests.get(self.endpoint + "/v1/allocations",
                              headers=HEADERS, timeout=30).status_code)
        out = self.ok("security/member.sh")
        self.assertEqual(["team-a", "alice-1 team-a"], out.splitlines())
        allocation = self.api("/v1/allocations/alice-1")
        self.assertEqual("node-4", self.nodes[allocation["node_uuid"]])
        # The admin of the mapping file sees every allocation.
        self.assertEqual(["alice-1"], [
            a["name"] for a in self.api("/v1/allocations")["allocations"]])


class StaticChecksTest(testtools.TestCase):
    """What the pages claim about code, checked without a server."""

    def test_sdk_examples_pass_mypy_strict(self) -> None:
        """The tutorial's code is typed code, as the SDK promises."""
        cache = tempfile.mkdtemp(prefix="bm-alloc-mypy-")
        self.addCleanup(shutil.rmtree, cache, True)
        sdk = os.path.join(EXAMPLES, "sdk")
        files = sorted(os.path.join(sdk, name) for name in os.listdir(sdk)
                       if name.endswith(".py"))
        self.assertGreaterEqual(len(files), 4)
        result = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--cache-dir", cache,
             *files], cwd=REPO, capture_output=True, text=True, timeout=300,
            check=False)
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)

    def test_server_guide_documents_every_option(self) -> None:
        with open(os.path.join(REPO, "doc", "source", "reference",
                               "server.rst"),
                  encoding="utf-8") as stream:
            guide = stream.read()
        server = os.path.join(BIN, "baremetal-alloc-server")
        for args in ([], ["serve"], ["db", "upgrade"], ["enroll"]):
            result = subprocess.run(
                [server, *args, "--help"], capture_output=True, text=True,
                timeout=60, check=True)
            options = set(re.findall(r"(--[a-z][a-z-]+)", result.stdout))
            options.discard("--help")
            self.assertTrue(options or args == ["db", "upgrade"], args)
            for option in sorted(options):
                self.assertIn(f"``{option}", guide,
                              f"{' '.join(args)} {option} is undocumented")
