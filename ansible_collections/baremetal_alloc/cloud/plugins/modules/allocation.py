#!/usr/bin/python
# Copyright baremetal-allocclient developers
# Apache License 2.0 (see LICENSE in the repository root)

from __future__ import annotations

DOCUMENTATION = r"""
module: allocation
short_description: Reserve and release bare metal nodes (Ironic allocations)
version_added: 1.0.0
description:
  - Makes an allocation of the Ironic Allocation API, or an all-or-nothing
    group of them, and releases them, on real Ironic (bifrost included)
    and on baremetal-alloc-server, through the baremetal-allocclient SDK.
  - Idempotent by I(name) - an allocation (or group) of that name that
    asks for the same resource class, traits, owner and count is kept as
    it is, and only its I(extra) is brought in line.
  - An allocation of that name in the C(error) state is deleted and made
    again.
options:
  name:
    description:
      - Name of the allocation, or of the group when I(count) is more
        than 1 (its members are then C(NAME-0) to C(NAME-<count-1>)).
    type: str
    required: true
  state:
    description:
      - C(present) makes the allocation(s) when there are none of that
        name; C(absent) deletes them, releasing their nodes (an
        allocation whose node is gone is deleted as well).
    type: str
    choices: [present, absent]
    default: present
  resource_class:
    description:
      - Resource class the node must have; required to make allocations.
    type: str
  traits:
    description:
      - Traits the node must have.
    type: list
    elements: str
  candidate_nodes:
    description:
      - Only pick among these nodes (names or UUIDs).
      - Used when allocations are made, not compared with existing ones
        (Ironic records UUIDs).
    type: list
    elements: str
  owner:
    description:
      - Project owning the allocation (API 1.60).
    type: str
  extra:
    description:
      - Metadata recorded with the allocation(s).  When given, an existing
        allocation's I(extra) is made equal to it (keys the SDK records
        itself, for groups and leases, are left alone).
    type: dict
  constraints:
    description:
      - What the node must satisfy besides the above, as the
        C(baremetal-alloc create) options say it.  Evaluated by a server
        with the constraints extension, otherwise by the SDK before
        anything is made (Ironic).
      - Used when allocations are made, not compared with existing ones.
    type: dict
    suboptions:
      forbidden_traits:
        description: Traits the node must not have.
        type: list
        elements: str
      min_properties:
        description: C(node.properties[key]) must be a number at least this.
        type: dict
      properties:
        description:
          - C(node.properties[key]) must equal this (numerically when both
            are numbers).
        type: dict
      min_cpus:
        description: Same as I(min_properties) C(cpus).
        type: int
      min_memory_mb:
        description: Same as I(min_properties) C(memory_mb).
        type: int
      min_local_gb:
        description: Same as I(min_properties) C(local_gb).
        type: int
      cpu_arch:
        description: Same as I(properties) C(cpu_arch).
        type: str
      conductor_group:
        description: The node's conductor group (case-insensitive).
        type: str
      shard:
        description: The node's shard.
        type: str
      node_owner:
        description: The node's owner.
        type: str
      node_lessee:
        description: The node's lessee.
        type: str
      prefer_node:
        description: Try the node with this name first.
        type: str
      require_node:
        description: Take only the node with this name.
        type: str
  count:
    description:
      - Number of nodes.  More than 1 makes an all-or-nothing group named
        I(name) - every member is made, or none is kept.
    type: int
    default: 1
  lease:
    description:
      - Give the node(s) back after this long (C(2h), C(1h30m), C(45m)...),
        counted from when they are made; C(baremetal-alloc expire) or the
        server's C(--expire-leases) release them then.
      - Applies when allocations are made; an existing allocation's lease
        is not renewed.
    type: str
  wait:
    description:
      - Wait until the allocation is C(active) (or has failed).  A group
        always waits, since it is all or nothing.
    type: bool
    default: true
  timeout:
    description:
      - Seconds the whole operation may take when waiting.
    type: int
    default: 600
extends_documentation_fragment:
  - baremetal_alloc.cloud.connection
attributes:
  check_mode:
    support: full
    description: Nothing is made or deleted; C(changed) says what would be.
  diff_mode:
    support: full
    description: The allocation(s) before and after.
author:
  - baremetal-allocclient developers (@openstack)
"""

EXAMPLES = r"""
- name: Reserve a GPU node for two hours
  baremetal_alloc.cloud.allocation:
    cloud: bifrost
    name: ci-job-42
    resource_class: baremetal
    traits: [CUSTOM_GPU]
    constraints:
      min_memory_mb: 65536
      forbidden_traits: [CUSTOM_BROKEN]
    lease: 2h
  register: reserved

- name: Three nodes or none
  baremetal_alloc.cloud.allocation:
    endpoint: http://127.0.0.1:6385
    name: cluster
    resource_class: baremetal
    count: 3

- name: Give the node back
  baremetal_alloc.cloud.allocation:
    cloud: bifrost
    name: ci-job-42
    state: absent
"""

RETURN = r"""
allocation:
  description:
    - The allocation (the first member of a group); C(null) after
      C(absent) or in check mode before it is made.
  returned: always
  type: dict
  contains:
    uuid:
      description: UUID of the allocation.
      type: str
    name:
      description: Name of the allocation.
      type: str
    state:
      description: C(allocating), C(active) or C(error).
      type: str
    node_uuid:
      description: UUID of the node reserved.
      type: str
    resource_class:
      description: Resource class asked for.
      type: str
    traits:
      description: Traits asked for.
      type: list
      elements: str
    extra:
      description: The allocation's extra, as the server returns it.
      type: dict
    user_extra:
      description: The extra without the keys the SDK records itself.
      type: dict
    lease_expires_at:
      description: When the lease ends (ISO 8601), C(null) without one.
      type: str
    last_error:
      description: Why it failed.
      type: str
allocations:
  description: Every allocation (the members of a group, in order).
  returned: always
  type: list
  elements: dict
nodes:
  description: The reserved nodes, as the API shows them.
  returned: always
  type: list
  elements: dict
explanation:
  description:
    - On failure, the selection funnel of the request (how many nodes
      pass each step, the step that left none).
  returned: failure
  type: dict
"""

from ansible_collections.baremetal_alloc.cloud.plugins.module_utils import (
    allocclient,
)

try:
    from baremetal_allocclient import constraints as sdk_constraints
    from baremetal_allocclient import exceptions as sdk_exceptions
    from baremetal_allocclient.v1.request import AllocationRequest
except ImportError:
    pass  # allocclient.new_module says so

#: (option, property key, operator) of the constraint shortcuts.
SHORTCUTS = (
    ("min_cpus", "cpus", "min"),
    ("min_memory_mb", "memory_mb", "min"),
    ("min_local_gb", "local_gb", "min"),
    ("cpu_arch", "cpu_arch", "eq"),
)
#: What an existing allocation is compared on (when the option is given).
COMPARED = ("resource_class", "traits", "owner")
#: What the operation failing means.
FAILURES = ("AllocationFailed", "GroupFailed", "NoMatchingNodes",
            "WaitTimeout")


def argument_spec():
    constraint_options = dict(
        forbidden_traits=dict(type="list", elements="str"),
        min_properties=dict(type="dict"),
        properties=dict(type="dict"),
        min_cpus=dict(type="int"),
        min_memory_mb=dict(type="int"),
        min_local_gb=dict(type="int"),
        cpu_arch=dict(type="str"),
        conductor_group=dict(type="str"),
        shard=dict(type="str"),
        node_owner=dict(type="str"),
        node_lessee=dict(type="str"),
        prefer_node=dict(type="str"),
        require_node=dict(type="str"),
    )
    return dict(
        name=dict(type="str", required=True),
        state=dict(type="str", default="present",
                   choices=["present", "absent"]),
        resource_class=dict(type="str"),
        traits=dict(type="list", elements="str"),
        candidate_nodes=dict(type="list", elements="str"),
        owner=dict(type="str"),
        extra=dict(type="dict"),
        constraints=dict(type="dict", options=constraint_options,
                         mutually_exclusive=[("prefer_node",
                                              "require_node")]),
        count=dict(type="int", default=1),
        lease=dict(type="str"),
        wait=dict(type="bool", default=True),
        timeout=dict(type="int", default=600),
    )


def constraints_of(options):
    """The ``constraints`` option as the SDK's Constraints (pure)."""
    if not options:
        return None
    op = sdk_constraints.Op
    props = [sdk_constraints.property_constraint(key, op.MIN, value)
             for key, value in (options.get("min_properties") or {}).items()]
    props += [sdk_constraints.property_constraint(key, op.EQ, value)
              for key, value in (options.get("properties") or {}).items()]
    for option, key, kind in SHORTCUTS:
        if options.get(option) is not None:
            props.append(sdk_constraints.property_constraint(
                key, op(kind), options[option]))
    group = options.get("conductor_group")
    name = options.get("require_node") or options.get("prefer_node")
    return sdk_constraints.Constraints(
        forbidden_traits=tuple(dict.fromkeys(
            options.get("forbidden_traits") or ())),
        properties=tuple(props),
        conductor_group=group.lower() if group is not None else None,
        shard=options.get("shard"),
        node_owner=options.get("node_owner"),
        node_lessee=options.get("node_lessee"),
        node_name=name,
        require_node_name=options.get("require_node") is not None,
    )


def request_of(params):
    """The SDK's AllocationRequest for the options (InvalidArgument or
    ConstraintError when a value is wrong)."""
    return AllocationRequest(
        resource_class=params["resource_class"],
        traits=params["traits"] or (),
        candidate_nodes=params["candidate_nodes"] or (),
        name=params["name"], owner=params["owner"], extra=params["extra"],
        constraints=constraints_of(params["constraints"]),
        lease=params["lease"])


def wanted(params):
    """What the diff shows after a make (pure)."""
    keys = ("name", "resource_class", "traits", "candidate_nodes", "owner",
            "extra", "constraints", "count", "lease")
    return {key: params[key] for key in keys if params[key] is not None}


def differences(params, existing):
    """Why the allocations of that name are not what is asked for (pure):
    a list of ``field: have != want``."""
    problems = []
    if len(existing) != params["count"]:
        problems.append("count: %d != %d" % (len(existing), params["count"]))
    for allocation in existing:
        for key in COMPARED:
            want = params[key]
            have = getattr(allocation, key)
            if want is None:
                continue
            if key == "traits":
                want, have = sorted(set(want)), sorted(set(have or ()))
            if have != want:
                problems.append("%s of %s: %r != %r" % (
                    key, allocation.name, have, want))
    return problems


def extra_change(params, allocation):
    """``(set, unset)`` bringing the user's part of ``extra`` to the
    option (pure); None when nothing changes."""
    want = params["extra"]
    if want is None:
        return None
    have = allocclient.user_extra(allocation.extra)
    to_set = {key: value for key, value in want.items()
              if have.get(key) != value or key not in have}
    to_unset = [key for key in have if key not in want]
    if not to_set and not to_unset:
        return None
    return to_set, to_unset


def explanation(client, request, error):
    """The funnel of ``request`` (the one ``error`` carries, else asked
    for), or None when it cannot be had."""
    funnel = getattr(error, "funnel", None)
    if funnel:
        return funnel
    if request.resource_class is None:
        return None
    try:
        return client.explain(request)
    except sdk_exceptions.ClientError:
        return None


def funnel_line(doc):
    """``resource_class 4 > traits 0 (emptied by traits)``, or ``...
    unreserved 2 (2 candidates)`` when no step left none (pure)."""
    line = " > ".join("%s %s" % (step["step"], step["count"])
                      for step in doc.get("funnel") or ())
    if doc.get("first_empty"):
        return line + " (emptied by %s)" % doc["first_empty"]
    return line + " (%s candidates)" % doc.get("candidates")


def result(client, allocations, changed, diff=None):
    out = dict(changed=changed,
               allocations=[allocclient.allocation_dict(a)
                            for a in allocations],
               nodes=allocclient.node_dicts(client, allocations))
    out["allocation"] = out["allocations"][0] if allocations else None
    if diff is not None:
        out["diff"] = diff
    return out


def absent(module, client, existing):
    if not existing:
        return result(client, [], False)
    diff = dict(before=dict(allocations=[a.to_dict() for a in existing]),
                after={})
    if not module.check_mode:
        for allocation in existing:
            client.delete_allocation(allocation.ident, ignore_missing=True)
    out = result(client, [], True, diff)
    out["released"] = [a.uuid for a in existing]
    return out


def make(module, client, request):
    params = module.params
    try:
        if params["count"] > 1:
            return client.allocate_group(params["count"], request,
                                         timeout=params["timeout"])
        if params["wait"]:
            return [client.allocate(request, timeout=params["timeout"])]
        return [client.create_allocation(request)]
    except sdk_exceptions.ClientError as exc:
        if type(exc).__name__ not in FAILURES:
            raise
        doc = explanation(client, request, exc)
        msg = str(exc)
        if doc:
            msg += "; funnel: " + funnel_line(doc)
        module.fail_json(msg=msg, explanation=doc, allocations=[],
                         nodes=[], allocation=None)


def keep(module, client, existing):
    """The allocations of that name are there: check them, wait for them
    and bring their ``extra`` in line."""
    problems = differences(module.params, existing)
    if problems:
        module.fail_json(
            msg="%s exists and differs: %s; release it (state: absent) "
                "first" % (module.params["name"], "; ".join(problems)),
            allocations=[allocclient.allocation_dict(a) for a in existing])
    changes = [(a, extra_change(module.params, a)) for a in existing]
    changes = [(a, change) for a, change in changes if change]
    if not changes:
        if module.params["wait"] and any(
                a.state == "allocating" for a in existing):
            existing = client.wait_for_allocations(
                existing, timeout=module.params["timeout"])
        return result(client, existing, False)
    diff = dict(before=dict(extra={a.name: allocclient.user_extra(a.extra)
                                   for a, _c in changes}),
                after=dict(extra={a.name: module.params["extra"]
                                  for a, _c in changes}))
    if not module.check_mode:
        updated = {a.uuid: client.update_allocation(
            a.ident, set_extra=to_set, unset_extra=to_unset)
            for a, (to_set, to_unset) in changes}
        existing = [updated.get(a.uuid, a) for a in existing]
    return result(client, existing, True, diff)


def present(module, client, existing):
    failed = [a for a in existing if a.state == "error"]
    if failed and not module.check_mode:
        for allocation in existing:
            client.delete_allocation(allocation.ident, ignore_missing=True)
        existing = []
    if existing and not failed:
        return keep(module, client, existing)
    if module.params["resource_class"] is None:
        module.fail_json(msg="resource_class is needed to make %s"
                         % module.params["name"])
    request = request_of(module.params)
    diff = dict(before=dict(allocations=[a.to_dict() for a in existing]),
                after=wanted(module.params))
    if module.check_mode:
        return result(client, [], True, diff)
    return result(client, make(module, client, request), True, diff)


def main():
    module = allocclient.new_module(argument_spec(),
                                    supports_check_mode=True)
    if module.params["count"] < 1:
        module.fail_json(msg="count must be at least 1")
    client = allocclient.client(module)
    try:
        existing = allocclient.find_allocations(client,
                                                module.params["name"])
        if module.params["state"] == "absent":
            module.exit_json(**absent(module, client, existing))
        module.exit_json(**present(module, client, existing))
    except (sdk_exceptions.ClientError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    finally:
        client.close()


if __name__ == "__main__":
    main()
