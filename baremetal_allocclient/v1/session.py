"""What every client holds: :class:`ApiSession`, the implementation of
:class:`~baremetal_allocclient.v1.protocol.Session`.

:class:`ApiSession` holds the transport, the time and jitter sources and
the ``GET /v1`` document once read.
:class:`~baremetal_allocclient.v1.client.Client` derives from it, as
openstacksdk's proxies derive from keystoneauth1's adapter.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from baremetal_allocclient import extension_names
from baremetal_allocclient.v1 import budget, transport, versions

if TYPE_CHECKING:
    from keystoneauth1 import adapter as ks_adapter

    from baremetal_allocclient.v1 import retries

VersionArg = str | tuple[int, int] | None


class ApiSession:
    """Requests, discovery and time sources shared by every feature."""

    def __init__(
        self,
        adapter: ks_adapter.Adapter,
        *,
        api_version: VersionArg = None,
        retry_policy: retries.RetryPolicy | None = None,
        _clock: budget.Clock = time.monotonic,
        _sleep: Callable[[float], None] = time.sleep,
        _rng: random.Random | None = None,
    ) -> None:
        # _clock, _sleep and _rng: time and jitter sources for tests, not
        # part of the API.
        self._transport = transport.Transport(
            adapter,
            api_version=api_version,
            retry_policy=retry_policy,
            sleep=_sleep,
        )
        self._clock = _clock
        self._sleep = _sleep
        self._v1_doc: Any = None
        #: Whether a create asked the server for a place in line (then
        #: allocation reads ask it for the position too).
        self._queue_used = False
        #: Whether a create's answer said the server offers the change
        #: stream (waits then watch instead of polling).
        self._watch_offered = False
        #: Jitter of the pauses between attempts to find capacity.
        self._rng: random.Random = _rng or random.SystemRandom()

    def sleep(self, seconds: float) -> None:
        """Pause on this client's sleep (injected by tests)."""
        self._sleep(seconds)

    def deadline(self, timeout: float | None) -> budget.Deadline:
        """A time budget on this client's clock (``None``: no limit)."""
        return budget.Deadline(timeout, clock=self._clock)

    def _v1_document(self) -> Any:
        """``GET /v1`` (where extensions are advertised), read once."""
        if self._v1_doc is None:
            response = self._transport.request(
                "GET", "/v1", feature=versions.NODES)
            self._v1_doc = self._transport.json(response)
        return self._v1_doc

    def _known_extensions(self) -> list[str]:
        """Extensions to opt into on every allocation request: the
        constraints extension once ``GET /v1`` was read (for a constrained,
        grouped or queued call) and advertised it, so that ``last_error``
        of a failure carries the selection funnel.  Never a request of
        its own: a client that did not discover reads Ironic's text."""
        if self._v1_doc is None:
            return []
        # Imported here: a plain list or show never reads GET /v1.
        from baremetal_allocclient.v1 import selecting

        if selecting.extension_advertised(self._v1_doc):
            return [extension_names.CONSTRAINTS]
        return []
