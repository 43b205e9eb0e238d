# Copyright baremetal-allocclient developers
# Apache License 2.0 (see LICENSE in the repository root)
"""The connection options of every module of baremetal_alloc.cloud."""

from __future__ import annotations


class ModuleDocFragment:

    DOCUMENTATION = r"""
options:
  cloud:
    description:
      - Name of a cloud of C(clouds.yaml), or a dict holding a whole cloud
        configuration, as for the openstack.cloud modules.
      - Without it, C(OS_CLOUD) names the cloud, and the other C(OS_*)
        variables (C(OS_AUTH_TYPE), C(OS_ENDPOINT), C(OS_AUTH_URL),
        C(OS_USERNAME)...) are read as openstacksdk reads them.
    type: raw
  auth_type:
    description:
      - Name of the keystoneauth1 auth plugin, for example C(none) or
        C(http_basic) (standalone Ironic, bifrost) or C(password)
        (Keystone).
    type: str
  auth:
    description:
      - Options of the auth plugin, for example C(endpoint) for C(none),
        or C(auth_url), C(username), C(password), C(project_name) for
        C(password).
    type: dict
  endpoint:
    description:
      - URL of the bare metal API, overriding the service catalog.
      - With the C(none) and C(http_basic) plugins it is also the
        plugin's endpoint.  Given alone (no I(cloud), I(auth),
        I(auth_type) nor C(OS_CLOUD), C(OS_AUTH_TYPE) or C(OS_AUTH_URL)),
        the API is used without authentication.
    type: str
  region_name:
    description:
      - Region of the cloud.
    type: str
  interface:
    description:
      - Endpoint interface of the service catalog.
    type: str
    choices: [public, internal, admin]
    aliases: [endpoint_type]
  validate_certs:
    description:
      - Whether to verify the server's TLS certificate.
    type: bool
    aliases: [verify]
  ca_cert:
    description:
      - CA bundle verifying the server's certificate.
    type: str
    aliases: [cacert]
  client_cert:
    description:
      - Client certificate for TLS.
    type: str
    aliases: [cert]
  client_key:
    description:
      - Key of the client certificate.
    type: str
    aliases: [key]
  api_timeout:
    description:
      - Timeout of each API request, in seconds.
    type: int
  baremetal_api_version:
    description:
      - Pin the bare metal API version (for example C(1.58)); by default
        the highest version both sides support is used.
    type: str
requirements:
  - python >= 3.10
  - baremetal-allocclient
"""
