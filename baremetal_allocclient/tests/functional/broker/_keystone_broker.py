"""The broker in front of a real Ironic, both behind one real Keystone:
Ironic checks tokens (``auth_strategy = keystone``, scope enforced), the
server checks them too (``--auth-strategy keystone``) and claims with
its own system-scoped account from clouds.yaml (``--ironic-cloud``),
finding Ironic in the catalog unless it is given its URL."""

from __future__ import annotations

import os
from collections.abc import Callable

import yaml

from baremetal_allocclient.tests.fixtures import databases
from baremetal_allocclient.tests.fixtures.launcher import ServerProcess
from baremetal_allocclient.tests.fixtures.peers import started
from baremetal_allocclient.tests.functional import targets
from baremetal_allocclient.tests.functional.keystone import _cloud, _keystone

#: The clouds.yaml cloud the server claims with.
CLOUD = "fronted"


def clouds_yaml(directory: str, cloud: _cloud.Cloud) -> str:
    """A clouds.yaml whose cloud :data:`CLOUD` is the system admin."""
    path = os.path.join(directory, "clouds.yaml")
    with open(path, "w", encoding="utf-8") as stream:
        yaml.safe_dump({"clouds": {CLOUD: {
            "auth_type": "password",
            "auth": {"auth_url": cloud.keystone.url,
                     "username": _cloud.ADMIN,
                     "password": cloud.users[_cloud.ADMIN].password,
                     "user_domain_id": "default",
                     "system_scope": "all"},
            "region_name": _keystone.REGION,
            "identity_api_version": 3,
        }}}, stream)
    return path


def start_ironic(cloud: _cloud.Cloud,
                 cleanup: Callable[..., object]) -> targets.Ironic:
    """A real Ironic behind ``cloud``'s Keystone, on a scratch MariaDB
    database when the tests have one (as the broker target's); stopped
    (and its database dropped) by ``cleanup``."""
    database = (databases.ScratchDatabase("mysql")
                if os.environ.get(databases.MYSQL_ENV) else None)
    if database is not None:
        cleanup(database.drop)
    ironic = started(targets.Ironic(database,
                                    keystone=cloud.ironic_keystone()))
    cleanup(ironic.close)
    return ironic


def start_broker(cloud: _cloud.Cloud, cleanup: Callable[..., object],
                 *extra: str) -> ServerProcess:
    """The server in front of the catalog's Ironic (``extra``: more
    ``serve`` options, ``--ironic-url`` say); stopped by ``cleanup``."""
    server = ServerProcess()
    cleanup(server.cleanup)
    server.start(
        "--backend", "ironic", "--ironic-cloud", CLOUD,
        "--auth-strategy", "keystone", "--keystone-config",
        cloud.keystone_config(server.tmpdir), *extra,
        schema=True, timeout=120,
        env={_cloud.PASSWORD_ENV: cloud.users[_cloud.SERVICE].password,
             "OS_CLIENT_CONFIG_FILE": clouds_yaml(server.tmpdir, cloud)})
    return server
