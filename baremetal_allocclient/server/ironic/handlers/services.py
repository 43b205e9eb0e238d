"""What the Ironic wing reads of the long-lived objects behind a
request (``Context.services``), typed.

The shared plumbing knows only their database
(``api.context.SharedServices``); the object itself is built by the
wiring (``server/services.py``, where type checking proves it is an
:class:`IronicServices`).  Not the service layer: that is
``ironic/service/``.
"""

from __future__ import annotations

from typing import Protocol, cast

from baremetal_allocclient.server.api.context import Context
from baremetal_allocclient.server.db.engine import Database
from baremetal_allocclient.server.domain.recording import Recorder
from baremetal_allocclient.server.ironic.fake_hardware import FakeHardware


class IronicServices(Protocol):
    """The Ironic wing's view of ``Context.services``."""

    @property
    def db(self) -> Database: ...
    @property
    def hardware(self) -> FakeHardware: ...
    @property
    def conductor(self) -> str:
        """This process's conductor name (a node's ``conductor``)."""
    @property
    def recorder(self) -> Recorder:
        """Where the services count what they did."""


def ironic_services(ctx: Context) -> IronicServices:
    """``ctx.services`` as the Ironic wing reads it."""
    return cast(IronicServices, ctx.services)
