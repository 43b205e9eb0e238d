"""The classes behind the verbs python-ironicclient also has.

``openstack baremetal allocation create|list|show|delete|set|unset`` exist
in python-ironicclient too. This project's entry points for them name the
attributes of this module, which pick the implementation when
OpenStackClient loads the command: this project's, or python-ironicclient's
own when the environment variable :data:`SWITCH` is ``ironicclient`` (and
python-ironicclient is installed). Both print the same default output;
this project's add options and columns of its own.

Nothing is imported until a command is loaded: OpenStackClient loads every
registered command class on each run.
"""

from __future__ import annotations

import importlib
import logging
import os

#: The environment variable that chooses the implementation.
SWITCH = "BAREMETAL_ALLOC_OSC_COMMANDS"
#: Its values: this project's commands (the default) or ironicclient's.
OURS = "baremetal-allocclient"
IRONICCLIENT = "ironicclient"

_OUR_MODULE = "baremetal_allocclient.osc.v1.allocation"
_IRONICCLIENT_MODULE = "ironicclient.osc.v1.baremetal_allocation"
#: Our class name -> python-ironicclient's class of the same verb.
SHARED: dict[str, str] = {
    "CreateAllocation": "CreateBaremetalAllocation",
    "ListAllocations": "ListBaremetalAllocation",
    "ShowAllocation": "ShowBaremetalAllocation",
    "DeleteAllocation": "DeleteBaremetalAllocation",
    "SetAllocation": "SetBaremetalAllocation",
    "UnsetAllocation": "UnsetBaremetalAllocation",
}

LOG = logging.getLogger(__name__)


def chosen() -> str:
    """The implementation :data:`SWITCH` asks for (unknown values: ours)."""
    value = os.environ.get(SWITCH, "").strip().lower() or OURS
    if value not in (OURS, IRONICCLIENT):
        LOG.warning("%s=%s is neither %s nor %s: using %s", SWITCH, value,
                    OURS, IRONICCLIENT, OURS)
        return OURS
    return value


def implementation(name: str) -> type:
    """The command class serving our class ``name``'s verb."""
    if chosen() == IRONICCLIENT:
        try:
            theirs = importlib.import_module(_IRONICCLIENT_MODULE)
        except ImportError:
            LOG.warning("%s=%s but python-ironicclient is not installed: "
                        "using %s", SWITCH, IRONICCLIENT, OURS)
        else:
            found: type = getattr(theirs, SHARED[name])
            return found
    ours: type = getattr(importlib.import_module(_OUR_MODULE), name)
    return ours


def __getattr__(name: str) -> type:
    if name in SHARED:
        return implementation(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
