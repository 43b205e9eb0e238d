"""The constraint options shared by ``create``, ``explain`` and
``capacity`` (both programs), and their parsing into
:class:`~baremetal_allocclient.constraints.Constraints` (pure; bad values
are usage errors, exit code 2)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from baremetal_allocclient import constraints as model
from baremetal_allocclient.osc.v1 import parsing

#: Shortcuts for the usual node properties: option -> (key, operator).
_SHORTCUTS = (
    ("--min-cpus", "cpus", model.Op.MIN),
    ("--min-memory-mb", "memory_mb", model.Op.MIN),
    ("--min-local-gb", "local_gb", model.Op.MIN),
    ("--cpu-arch", "cpu_arch", model.Op.EQ),
)


def _minimum(text: str) -> tuple[str, str]:
    key, value = parsing.key_value(text)
    if model.as_number(value) is None:
        raise argparse.ArgumentTypeError(
            f"expected KEY=NUMBER, got {text!r}")
    return key, value


def _values(text: str) -> tuple[str, list[str]]:
    """``rack=r1,r2`` -> ``("rack", ["r1", "r2"])``."""
    key, value = parsing.key_value(text)
    members = [v.strip() for v in value.split(",")]
    if not all(members):
        raise argparse.ArgumentTypeError(
            f"expected KEY=VALUE[,VALUE...], got {text!r}")
    return key, members


def _alternative(text: str) -> tuple[model.PropertyConstraint, ...]:
    """``--any-of``: a JSON list of property constraints in the wire
    format (``[{"key": "cpus", "min": 64}, {"key": "gpu", "exists":
    true}]``), all of which one alternative needs."""
    try:
        terms = json.loads(text)
        if not isinstance(terms, list) or not terms:
            raise model.ConstraintError("expected a non-empty JSON list")
        return model.from_wire({"any_of": [terms]}).any_of[0]
    except (ValueError, TypeError, AttributeError) as exc:
        raise argparse.ArgumentTypeError(
            f"expected a JSON list of property constraints, got {text!r}"
            f" ({exc})") from None


def _key(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a property key")
    return text.strip()


def _number(text: str) -> str:
    if model.as_number(text) is None:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    return text


def add_constraint_options(parser: argparse.ArgumentParser | Any) -> None:
    """Add the constraint options to a command's parser."""
    group = parser.add_argument_group(
        "node constraints",
        "Evaluated by the server when it offers the constraints extension "
        "(baremetal-alloc-server), otherwise by this client before it "
        "creates anything (Ironic). See 'Choosing nodes' in the docs.")
    add = group.add_argument
    add("--forbid-trait", dest="forbidden_traits", action="append",
        default=[], metavar="<trait>",
        help="Trait the node must NOT have. Repeat for several.")
    add("--any-trait", dest="any_traits", action="append", default=[],
        metavar="<trait>",
        help="The node must have at least one of the traits given so. "
        "Repeat.")
    add("--min-property", dest="min_properties", action="append",
        type=_minimum, default=[], metavar="<key=number>",
        help="node.properties[key] must be a number >= this. Repeat.")
    add("--property", dest="exact_properties", action="append",
        type=parsing.key_value, default=[], metavar="<key=value>",
        help="node.properties[key] must equal this (numerically when "
        "both are numbers). Repeat.")
    _add_more_property_options(add)
    for option, key, op in _SHORTCUTS:
        sign = ">=" if op is model.Op.MIN else "="
        add(option, dest=f"shortcut_{key}",
            type=_number if op is model.Op.MIN else parsing.non_empty,
            metavar="<value>", help=f"Same as properties {key}{sign}VALUE.")
    add("--order", choices=[o.value for o in model.Order],
        help="Which matching node to take: first_fit (any; from a random "
        "place in the fleet) or best_fit (the one whose properties exceed "
        "the request least, keeping big nodes free). Default: the "
        "server's (first_fit against Ironic).")
    add("--conductor-group", metavar="<group>",
        help="Node's conductor group (case-insensitive).")
    add("--shard", metavar="<shard>", help="Node's shard.")
    add("--node-owner", metavar="<project>", help="Node's owner.")
    add("--node-lessee", metavar="<project>", help="Node's lessee.")
    names = group.add_mutually_exclusive_group()
    names.add_argument(
        "--prefer-node", metavar="<name>", type=parsing.non_empty,
        help="Try the node with this name first.")
    names.add_argument(
        "--require-node", metavar="<name>", type=parsing.non_empty,
        help="Take only the node with this name.")


def _add_more_property_options(add: Any) -> None:
    add("--max-property", dest="max_properties", action="append",
        type=_minimum, default=[], metavar="<key=number>",
        help="node.properties[key] must be a number <= this. Repeat.")
    add("--property-in", dest="in_properties", action="append",
        type=_values, default=[], metavar="<key=value[,value...]>",
        help="node.properties[key] must equal one of these. Repeat.")
    add("--property-not-in", dest="not_in_properties", action="append",
        type=_values, default=[], metavar="<key=value[,value...]>",
        help="node.properties[key] must be missing or equal none of "
        "these. Repeat.")
    add("--property-exists", dest="exists_properties", action="append",
        type=_key, default=[], metavar="<key>",
        help="node.properties must have this key. Repeat.")
    add("--property-not-exists", dest="not_exists_properties",
        action="append", type=_key, default=[], metavar="<key>",
        help="node.properties must not have this key. Repeat.")
    add("--any-of", dest="any_of", action="append", type=_alternative,
        default=[], metavar="<json>",
        help="One alternative: a JSON list of property constraints "
        "('[{\"key\": \"cpus\", \"min\": 64}]'); the node must "
        "satisfy every one of at least one alternative. Repeat for "
        "each alternative.")


#: The generic property options after --property: (dest, operator).
_MORE = (("max_properties", model.Op.MAX), ("in_properties", model.Op.IN),
         ("not_in_properties", model.Op.NOT_IN))


def constraints_from_args(parser: argparse.ArgumentParser,
                          args: argparse.Namespace) -> model.Constraints:
    """The parsed options as Constraints (empty when none was given); a
    value that cannot be evaluated is a usage error."""
    try:
        return _constraints(args)
    except model.ConstraintError as exc:
        parser.error(str(exc))


def _constraints(args: argparse.Namespace) -> model.Constraints:
    props = [model.property_constraint(k, model.Op.MIN, v)
             for k, v in args.min_properties]
    props += [model.property_constraint(k, model.Op.EQ, v)
              for k, v in args.exact_properties]
    for dest, op in _MORE:
        props += [model.property_constraint(k, op, v)
                  for k, v in getattr(args, dest)]
    props += [model.property_constraint(k, model.Op.EXISTS)
              for k in args.exists_properties]
    props += [model.property_constraint(k, model.Op.NOT_EXISTS)
              for k in args.not_exists_properties]
    for _option, key, op in _SHORTCUTS:
        value = getattr(args, f"shortcut_{key}")
        if value is not None:
            props.append(model.property_constraint(key, op, value))
    group = args.conductor_group
    return model.Constraints(
        forbidden_traits=tuple(dict.fromkeys(args.forbidden_traits)),
        any_traits=tuple(dict.fromkeys(args.any_traits)),
        any_of=tuple(args.any_of),
        properties=tuple(props),
        conductor_group=group.lower() if group is not None else None,
        shard=args.shard,
        node_owner=args.node_owner,
        node_lessee=args.node_lessee,
        node_name=args.require_node or args.prefer_node,
        require_node_name=args.require_node is not None,
        order=None if args.order is None else model.Order(args.order),
    )
