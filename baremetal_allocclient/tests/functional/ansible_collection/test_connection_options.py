"""The collection's connection options as the config loader's arguments
(``module_utils/allocclient.cloud_arguments``, pure), each way the
openstack.cloud modules take them.

module_utils imports Ansible's, so the cases run in one process of the
Ansible virtualenv, with the collection on its path.
"""

from __future__ import annotations

import json
import os
from typing import Any

import testtools

from baremetal_allocclient.tests.fixtures.peers import REPO_ROOT
from baremetal_allocclient.tests.functional.ansible_collection import (
    _ansible,
)

URL = "http://127.0.0.1:6385"
BASE: dict[str, Any] = dict.fromkeys((
    "cloud", "auth_type", "auth", "endpoint", "region_name", "interface",
    "validate_certs", "ca_cert", "client_cert", "client_key", "api_timeout",
    "baremetal_api_version"))

#: (params, environment, expected [cloud, overrides] or "ValueError").
CASES: list[tuple[dict[str, Any], dict[str, str], Any]] = [
    # endpoint alone: no authentication
    ({"endpoint": URL}, {}, [None, {
        "auth_type": "none", "baremetal_endpoint_override": URL,
        "auth": {"endpoint": URL}}]),
    # endpoint with OS_CLOUD: only the endpoint is overridden
    ({"endpoint": URL}, {"OS_CLOUD": "lab"}, [None, {
        "baremetal_endpoint_override": URL}]),
    # auth_type and auth as given
    ({"auth_type": "none", "auth": {"endpoint": URL}}, {}, [None, {
        "auth_type": "none", "auth": {"endpoint": URL}}]),
    # http_basic takes the endpoint too
    ({"auth_type": "http_basic", "endpoint": URL,
      "auth": {"username": "u", "password": "p"}}, {}, [None, {
          "auth_type": "http_basic", "baremetal_endpoint_override": URL,
          "auth": {"username": "u", "password": "p", "endpoint": URL}}]),
    # a cloud by name, Keystone's password plugin, TLS options
    ({"cloud": "lab", "auth_type": "password",
      "auth": {"password": "s"}, "validate_certs": False,
      "ca_cert": "/ca.pem", "client_cert": "/c.pem", "client_key": "/k.pem",
      "region_name": "r1", "interface": "internal", "api_timeout": 30},
     {}, ["lab", {
         "auth_type": "password", "auth": {"password": "s"},
         "verify": False, "cacert": "/ca.pem", "cert": "/c.pem",
         "key": "/k.pem", "region_name": "r1", "interface": "internal",
         "api_timeout": 30}]),
    # a cloud as a dict: the whole config, options on top (with the none
    # plugin the endpoint option is the plugin's endpoint as well)
    ({"cloud": {"auth_type": "none", "auth": {"endpoint": URL}},
      "endpoint": URL + "/v1"}, {}, [None, {
          "auth_type": "none", "baremetal_endpoint_override": URL + "/v1",
          "auth": {"endpoint": URL + "/v1"}}]),
    ({"cloud": {"auth_type": "none", "auth": {"endpoint": URL}}}, {},
     [None, {"auth_type": "none", "auth": {"endpoint": URL}}]),
    ({"cloud": 3}, {}, "ValueError"),
]

SCRIPT = """
import json, sys
from ansible_collections.baremetal_alloc.cloud.plugins.module_utils import (
    allocclient)
out = []
for params, environ in json.load(sys.stdin):
    try:
        out.append(list(allocclient.cloud_arguments(params, environ)))
    except ValueError:
        out.append("ValueError")
print(json.dumps(out))
"""


class TestConnectionOptions(testtools.TestCase):

    def test_cloud_arguments(self) -> None:
        cases = [[{**BASE, **params}, env] for params, env, _ in CASES]
        proc = _ansible.run(["python", "-c", SCRIPT],
                            env={"PYTHONPATH": REPO_ROOT}, input=json.dumps(
                                cases), cwd=os.path.dirname(REPO_ROOT))
        got = json.loads(_ansible.checked(proc))
        for (params, env, expected), actual in zip(CASES, got, strict=True):
            self.assertEqual(expected, actual, (params, env))
