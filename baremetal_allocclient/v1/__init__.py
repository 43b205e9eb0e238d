"""Typed SDK for the bare metal Allocation API (Ironic API v1).

Example::

    from baremetal_allocclient.v1 import AllocationRequest, Client

    client = Client.from_endpoint("http://127.0.0.1:6385")
    allocation = client.allocate("baremetal", traits=["CUSTOM_GPU"])
    print(allocation.node_uuid)
    client.delete_allocation(allocation.uuid)

    # The same request as a value, for any number of calls:
    gpu = AllocationRequest("baremetal", traits=["CUSTOM_GPU"], lease="2h")
    allocation = client.allocate(gpu, timeout=60)
"""

import importlib
from typing import TYPE_CHECKING, Any

from baremetal_allocclient.exceptions import (
    AllocationFailed,
    BadRequest,
    ClientError,
    ConfigurationError,
    Conflict,
    ConnectionFailed,
    DeadlineExceeded,
    ExtensionNotSupported,
    Forbidden,
    Gone,
    GroupFailed,
    HttpError,
    InvalidArgument,
    InvalidResponse,
    MethodNotAllowed,
    NoMatchingNodes,
    NotAcceptable,
    NotFound,
    ServerError,
    ServiceUnavailable,
    Terminated,
    Unauthorized,
    VersionNotSupported,
    WaitTimeout,
)
from baremetal_allocclient.v1.client import UNSET, Client
from baremetal_allocclient.v1.resources import Allocation, Node
from baremetal_allocclient.v1.retries import RetryPolicy
from baremetal_allocclient.v1.waiting import Progress

if TYPE_CHECKING:
    from baremetal_allocclient.v1.request import (
        AllocationRequest,
        RequestFields,
    )

#: Exported names loaded on first use: name -> module.
_LAZY = {"AllocationRequest": "baremetal_allocclient.v1.request",
         "RequestFields": "baremetal_allocclient.v1.request"}


def __getattr__(name: str) -> Any:
    """``AllocationRequest`` and ``RequestFields``, imported from
    :mod:`.request` on first use (``list`` never needs them)."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "UNSET",
    "Allocation",
    "AllocationFailed",
    "AllocationRequest",
    "BadRequest",
    "Client",
    "ClientError",
    "ConfigurationError",
    "Conflict",
    "ConnectionFailed",
    "DeadlineExceeded",
    "ExtensionNotSupported",
    "Forbidden",
    "Gone",
    "GroupFailed",
    "HttpError",
    "InvalidArgument",
    "InvalidResponse",
    "MethodNotAllowed",
    "NoMatchingNodes",
    "Node",
    "NotAcceptable",
    "NotFound",
    "Progress",
    "RequestFields",
    "RetryPolicy",
    "ServerError",
    "ServiceUnavailable",
    "Terminated",
    "Unauthorized",
    "VersionNotSupported",
    "WaitTimeout",
]
