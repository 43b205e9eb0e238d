"""Typed SDK for the bare metal Allocation API (Ironic API v1).

Example::

    from baremetal_allocclient.v1 import Client

    client = Client.from_endpoint("http://127.0.0.1:6385")
    allocation = client.allocate("baremetal", traits=["CUSTOM_GPU"])
    print(allocation.node_uuid)
    client.delete_allocation(allocation.uuid)
"""

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

__all__ = [
    "UNSET",
    "Allocation",
    "AllocationFailed",
    "BadRequest",
    "Client",
    "ClientError",
    "ConfigurationError",
    "Conflict",
    "ConnectionFailed",
    "DeadlineExceeded",
    "ExtensionNotSupported",
    "Forbidden",
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
    "RetryPolicy",
    "ServerError",
    "ServiceUnavailable",
    "Terminated",
    "Unauthorized",
    "VersionNotSupported",
    "WaitTimeout",
]
