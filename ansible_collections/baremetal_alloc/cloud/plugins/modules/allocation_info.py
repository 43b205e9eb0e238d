#!/usr/bin/python
# Copyright baremetal-allocclient developers
# Apache License 2.0 (see LICENSE in the repository root)

from __future__ import annotations

DOCUMENTATION = r"""
module: allocation_info
short_description: List or show bare metal allocations
version_added: 1.0.0
description:
  - Lists the allocations of the Ironic Allocation API with the list's
    filters, or shows one by name or UUID, on real Ironic and on
    baremetal-alloc-server, through the baremetal-allocclient SDK.
options:
  name:
    description:
      - Name or UUID of one allocation to show; without it, the
        allocations are listed.
      - A name that is no allocation's but a group's gives the group's
        members.
    type: str
  state:
    description:
      - Only allocations in this state.
    type: str
    choices: [allocating, active, error]
  resource_class:
    description:
      - Only allocations of this resource class.
    type: str
  node:
    description:
      - Only the allocation of this node (name or UUID).
    type: str
  owner:
    description:
      - Only allocations of this owner.
    type: str
  group:
    description:
      - Only the members of this group.
    type: str
  expired:
    description:
      - C(true) keeps only allocations whose lease ended, C(false) the
        others.
    type: bool
  limit:
    description:
      - At most this many allocations.
    type: int
  sort_key:
    description:
      - Field to sort by.
    type: str
  sort_dir:
    description:
      - Sort direction.
    type: str
    choices: [asc, desc]
  with_nodes:
    description:
      - Also return the nodes of the allocations.
    type: bool
    default: false
extends_documentation_fragment:
  - baremetal_alloc.cloud.connection
attributes:
  check_mode:
    support: full
    description: Reads only.
  diff_mode:
    support: none
    description: Reads only.
author:
  - baremetal-allocclient developers (@openstack)
"""

EXAMPLES = r"""
- name: Active allocations of a resource class
  baremetal_alloc.cloud.allocation_info:
    cloud: bifrost
    state: active
    resource_class: baremetal
  register: listed

- name: One allocation and its node
  baremetal_alloc.cloud.allocation_info:
    cloud: bifrost
    name: ci-job-42
    with_nodes: true
"""

RETURN = r"""
allocations:
  description:
    - The allocations found (empty when I(name) names none), each with
      C(user_extra), its extra without the SDK's own keys, and
      C(lease_expires_at).
  returned: always
  type: list
  elements: dict
nodes:
  description: Their nodes, with I(with_nodes).
  returned: always
  type: list
  elements: dict
"""

from ansible_collections.baremetal_alloc.cloud.plugins.module_utils import (
    allocclient,
)

try:
    from baremetal_allocclient import exceptions as sdk_exceptions
except ImportError:
    pass  # allocclient.new_module says so

FILTERS = ("state", "resource_class", "node", "owner", "group", "expired",
           "limit", "sort_key", "sort_dir")


def argument_spec():
    return dict(
        name=dict(type="str"),
        state=dict(type="str", choices=["allocating", "active", "error"]),
        resource_class=dict(type="str"),
        node=dict(type="str"),
        owner=dict(type="str"),
        group=dict(type="str"),
        expired=dict(type="bool"),
        limit=dict(type="int"),
        sort_key=dict(type="str", no_log=False),
        sort_dir=dict(type="str", choices=["asc", "desc"]),
        with_nodes=dict(type="bool", default=False),
    )


def main():
    module = allocclient.new_module(
        argument_spec(), supports_check_mode=True,
        mutually_exclusive=[("name", key) for key in FILTERS])
    client = allocclient.client(module)
    params = module.params
    try:
        if params["name"]:
            found = allocclient.find_allocations(client, params["name"])
        else:
            found = list(client.list_allocations(
                **{key: params[key] for key in FILTERS}))
        nodes = (allocclient.node_dicts(client, found)
                 if params["with_nodes"] else [])
        module.exit_json(
            changed=False, nodes=nodes,
            allocations=[allocclient.allocation_dict(a) for a in found])
    except (sdk_exceptions.ClientError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    finally:
        client.close()


if __name__ == "__main__":
    main()
