"""The fake-hardware node state machine, as plain data and pure functions.

Each provision verb maps the states it may start from to the states the
node passes through (each a ``(provision_state, target_provision_state)``
pair) and the state it ends in.  The same intermediate states as Ironic
with fake-hardware are used, so clients that poll see familiar values.
"""

from __future__ import annotations

from dataclasses import dataclass

ENROLL = "enroll"
VERIFYING = "verifying"
MANAGEABLE = "manageable"
CLEANING = "cleaning"
AVAILABLE = "available"
DEPLOYING = "deploying"
ACTIVE = "active"
DELETING = "deleting"
DEPLOY_FAILED = "deploy failed"
ERROR = "error"
ADOPT_FAILED = "adopt failed"
INSPECTING = "inspecting"
INSPECT_WAIT = "inspect wait"
CLEAN_FAILED = "clean failed"
INSPECT_FAILED = "inspect failed"

ALL_STATES = frozenset(
    {
        ENROLL, VERIFYING, MANAGEABLE, CLEANING, AVAILABLE, DEPLOYING,
        ACTIVE, DELETING, DEPLOY_FAILED, ERROR, ADOPT_FAILED, INSPECTING,
        INSPECT_WAIT, CLEAN_FAILED, INSPECT_FAILED, "clean wait",
        "deploy wait", "inspect failed", "adopting", "rescue", "rescuing",
        "rescue wait", "rescue failed", "unrescuing", "unrescue failed",
        "service", "servicing", "service wait", "service failed",
        "service hold",
    }
)

# States in which a node can be deleted without maintenance mode.
DELETE_ALLOWED = (MANAGEABLE, ENROLL, ADOPT_FAILED, AVAILABLE)
# States in which properties such as resource_class, or the instance_uuid
# of a node with an allocation, may change without maintenance mode.
CHANGE_ALLOWED = (ENROLL, INSPECTING, INSPECT_WAIT, MANAGEABLE, AVAILABLE)
# Transitional states in which updates are still allowed (Ironic's list).
UPDATE_ALLOWED = (
    DEPLOY_FAILED, INSPECTING, INSPECT_FAILED, INSPECT_WAIT, CLEAN_FAILED,
    ERROR, VERIFYING, ADOPT_FAILED, "rescue failed", "unrescue failed",
    "service", "service hold", "service failed",
)

POWER_ON = "power on"
POWER_OFF = "power off"


@dataclass(frozen=True)
class Transition:
    """What one provision verb does to a node in fake hardware."""

    verb: str
    steps: tuple[tuple[str, str], ...]
    final: str
    releases_allocation: bool = False
    #: Refused (403) on a protected node: undeploy and rebuild.
    refused_when_protected: bool = False


_MANAGE = Transition("manage", ((VERIFYING, MANAGEABLE),), MANAGEABLE)
_MANAGE_DIRECT = Transition("manage", (), MANAGEABLE)
_PROVIDE = Transition("provide", ((CLEANING, AVAILABLE),), AVAILABLE)
_DEPLOY = Transition("deploy", ((DEPLOYING, ACTIVE),), ACTIVE)
#: A deployed node deployed again (its allocation stays).
_REBUILD = Transition("rebuild", ((DEPLOYING, ACTIVE),), ACTIVE,
                      refused_when_protected=True)
#: Fake inspection finds nothing new and returns to manageable.
_INSPECT = Transition("inspect", ((INSPECTING, MANAGEABLE),), MANAGEABLE)
_UNDEPLOY = Transition(
    "undeploy",
    ((DELETING, AVAILABLE), (CLEANING, AVAILABLE)),
    AVAILABLE,
    releases_allocation=True,
    refused_when_protected=True,
)

# verb -> {starting state -> transition}
_TABLE: dict[str, dict[str, Transition]] = {
    "manage": {
        ENROLL: _MANAGE,
        AVAILABLE: _MANAGE_DIRECT,
        CLEAN_FAILED: _MANAGE_DIRECT,
        INSPECT_FAILED: _MANAGE_DIRECT,
    },
    "provide": {MANAGEABLE: _PROVIDE},
    "inspect": {MANAGEABLE: _INSPECT, INSPECT_FAILED: _INSPECT},
    "active": {AVAILABLE: _DEPLOY, DEPLOY_FAILED: _DEPLOY},
    "rebuild": {ACTIVE: _REBUILD, DEPLOY_FAILED: _REBUILD, ERROR: _REBUILD},
    "deleted": {
        ACTIVE: _UNDEPLOY,
        DEPLOY_FAILED: _UNDEPLOY,
        ERROR: _UNDEPLOY,
    },
}
_TABLE["deploy"] = _TABLE["active"]
_TABLE["undeploy"] = _TABLE["deleted"]

# Verbs newer than the oldest version (minor version that introduced them).
VERB_MIN_MINOR = {
    "manage": 4, "provide": 4, "inspect": 6, "deploy": 73, "undeploy": 73,
}


def transition_for(verb: str, state: str) -> Transition | None:
    """The transition ``verb`` starts from ``state``, None if not allowed."""
    return _TABLE.get(verb, {}).get(state)


def remaining_steps(
    state: str, target: str
) -> tuple[tuple[str, str | None], ...] | None:
    """The steps left for a node caught in ``(state, target)``.

    The last step is the stable final state with no target.  None when the
    pair is not part of any transition (nothing to continue).
    """
    for transitions in _TABLE.values():
        for transition in transitions.values():
            steps = transition.steps
            for i, step in enumerate(steps):
                if step == (state, target):
                    rest: list[tuple[str, str | None]] = list(steps[i + 1 :])
                    rest.append((transition.final, None))
                    return tuple(rest)
    return None


def power_result(target: str) -> str | None:
    """The power state a power request ends in, None for unknown targets."""
    return {
        POWER_ON: POWER_ON,
        POWER_OFF: POWER_OFF,
        "rebooting": POWER_ON,
        "soft power off": POWER_OFF,
        "soft rebooting": POWER_ON,
    }.get(target)


def changes_power(current: str | None, target: str) -> bool:
    """Whether a power request acts on the hardware (Ironic skips a
    request for the state the node is already in; reboots always act)."""
    if current == POWER_ON:
        return target != POWER_ON
    if current == POWER_OFF:
        return target not in (POWER_OFF, "soft power off")
    return True


def initial_state(minor: int) -> str:
    """Nodes start in enroll since 1.11, in available before that."""
    return ENROLL if minor >= 11 else AVAILABLE
