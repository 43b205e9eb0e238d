# Copyright baremetal-allocclient developers
# Apache License 2.0 (see LICENSE in the repository root)
"""What the modules of baremetal_alloc.cloud share: the connection options
(as the openstack.cloud modules take them), the client built from them
through the baremetal-allocclient SDK's own clouds.yaml resolution, and
plain JSON views of allocations and nodes."""

from __future__ import annotations

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

try:
    from baremetal_allocclient import exceptions as sdk_exceptions
    from baremetal_allocclient import leases as sdk_leases
    from baremetal_allocclient.v1 import Client
except ImportError:
    HAS_SDK = False
    SDK_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_SDK = True
    SDK_IMPORT_ERROR = None

#: Auth plugins that take the bare metal endpoint as their own option.
ENDPOINT_PLUGINS = ("none", "http_basic")
#: The prefix of the keys the SDK itself records in ``extra`` (group marks,
#: lease); they are not the user's and never compared with ``extra``.
SDK_EXTRA_PREFIX = "baremetal_alloc"


def connection_argument_spec():
    """The connection options, named as in openstack.cloud."""
    return dict(
        cloud=dict(type="raw"),
        auth_type=dict(type="str"),
        auth=dict(type="dict", no_log=True),
        endpoint=dict(type="str"),
        region_name=dict(type="str"),
        interface=dict(type="str", choices=["public", "internal", "admin"],
                       aliases=["endpoint_type"]),
        validate_certs=dict(type="bool", aliases=["verify"]),
        ca_cert=dict(type="str", aliases=["cacert"]),
        client_cert=dict(type="str", aliases=["cert"]),
        client_key=dict(type="str", aliases=["key"], no_log=False),
        api_timeout=dict(type="int"),
        baremetal_api_version=dict(type="str"),
    )


def new_module(argument_spec, **kwargs):
    """An AnsibleModule with the connection options added; fails at once
    when the SDK is not importable by the module's Python."""
    spec = connection_argument_spec()
    spec.update(argument_spec)
    module = AnsibleModule(argument_spec=spec, **kwargs)
    if not HAS_SDK:
        module.fail_json(msg=missing_required_lib("baremetal-allocclient"),
                         exception=SDK_IMPORT_ERROR)
    return module


def cloud_arguments(params, environ):
    """The cloud name and the config loader's overrides for ``params``
    (pure).

    As in openstack.cloud: ``cloud`` is a clouds.yaml entry's name, or a
    dict that is the whole cloud config.  ``endpoint`` overrides the bare
    metal endpoint; with neither a cloud, ``auth``, ``auth_type`` nor an
    ``OS_CLOUD``/``OS_AUTH_TYPE``/``OS_AUTH_URL`` variable, it means no
    authentication (like ``baremetal-alloc --os-endpoint``).
    """
    cloud = params.get("cloud")
    overrides = {}
    if isinstance(cloud, dict):
        overrides.update(cloud)
        cloud = None
    elif cloud is not None and not isinstance(cloud, str):
        raise ValueError("cloud must be a clouds.yaml entry's name or a "
                         "dict")
    auth_type = params.get("auth_type")
    auth = dict(params.get("auth") or {})
    endpoint = params.get("endpoint")
    if endpoint and not (auth_type or auth or cloud or overrides
                         or _env_names_auth(environ)):
        auth_type = "none"
    if auth_type:
        overrides["auth_type"] = auth_type
    if endpoint:
        overrides["baremetal_endpoint_override"] = endpoint
        if (auth_type or overrides.get("auth_type")) in ENDPOINT_PLUGINS:
            auth.setdefault("endpoint", endpoint)
    if auth:
        overrides["auth"] = {**(overrides.get("auth") or {}), **auth}
    for option, key in (("region_name", "region_name"),
                        ("interface", "interface"),
                        ("ca_cert", "cacert"), ("client_cert", "cert"),
                        ("client_key", "key"),
                        ("api_timeout", "api_timeout")):
        if params.get(option) is not None:
            overrides[key] = params[option]
    if params.get("validate_certs") is not None:
        overrides["verify"] = params["validate_certs"]
    return cloud, overrides


def _env_names_auth(environ):
    return any(environ.get(name) for name in
               ("OS_CLOUD", "OS_AUTH_TYPE", "OS_AUTH_URL"))


def client(module):
    """The SDK client for the module's connection options: clouds.yaml,
    ``OS_*`` and the options resolved by openstacksdk's loader as
    ``baremetal-alloc`` resolves them, through its cache of resolved
    clouds (which holds no secret), so that a playbook's later tasks do
    not import the loader again."""
    import os

    from baremetal_allocclient.shell import resolve_cloud

    try:
        cloud, overrides = cloud_arguments(module.params, os.environ)
        return Client.from_resolved_cloud(
            resolve_cloud(cloud, overrides),
            api_version=module.params.get("baremetal_api_version"))
    except (ValueError, sdk_exceptions.ClientError) as exc:
        module.fail_json(msg="Cannot connect: %s" % exc)


def user_extra(extra):
    """``extra`` without the keys the SDK records itself (pure)."""
    return {key: value for key, value in (extra or {}).items()
            if not key.startswith(SDK_EXTRA_PREFIX)}


def allocation_dict(allocation):
    """An allocation as plain JSON, with its lease's end (``None`` without
    a lease) and ``extra`` as the user wrote it in ``user_extra``."""
    data = allocation.to_dict()
    data["user_extra"] = user_extra(data.get("extra"))
    try:
        end = sdk_leases.expires_at(allocation.marks)
    except sdk_leases.LeaseError:
        end = None
    data["lease_expires_at"] = end.isoformat() if end else None
    return data


def node_dicts(client_, allocations):
    """The nodes of the ``allocations`` that have one, as plain JSON (a
    node that is gone is left out)."""
    nodes = []
    for allocation in allocations:
        if not allocation.node_uuid:
            continue
        try:
            nodes.append(client_.get_node(allocation.node_uuid).to_dict())
        except sdk_exceptions.NotFound:
            continue
    return nodes


def find_allocations(client_, name):
    """The allocation named ``name``, else the members of the group
    ``name`` (empty when there is neither)."""
    try:
        return [client_.get_allocation(name)]
    except sdk_exceptions.NotFound:
        return client_.list_group(name)
