"""API microversions: the advertised range, parsing and feature gates.

Pure functions only; the WSGI layer turns :class:`VersionError` into a 406.
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple

from baremetal_allocclient.server.api import numbers

HEADER = "X-OpenStack-Ironic-API-Version"
MIN_HEADER = "X-OpenStack-Ironic-API-Minimum-Version"
MAX_HEADER = "X-OpenStack-Ironic-API-Maximum-Version"


class Version(NamedTuple):
    """A microversion; tuple ordering gives version ordering."""

    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


MIN_VERSION = Version(1, 1)
# Ironic 39's maximum, so clients negotiate the same version with both.
# The versions after 1.73 that change the endpoints served here are gated
# below; the others change endpoints this server does not serve (BIOS,
# node history, runbooks, virtual media, portgroups, ...).
MAX_VERSION = Version(1, 115)

# Feature gates (minor versions), named after what they introduce.
NODE_NAME = 5
FIELDS_SELECTOR = 8
ENROLL_STATE = 11
MANAGE_VERBS = 4
RESOURCE_CLASS = 21
#: A node's ``chassis_uuid`` may be removed.
REMOVE_CHASSIS = 25
TRAITS = 37
DETAIL_QUERY = 43
OWNER_FILTER = 50
#: A path's ``.json`` suffix is no longer dropped (it is part of the
#: last segment).
JSON_SUFFIX_KEPT = 91
ALLOCATIONS = 52
ALLOCATION_UPDATE = 57
ALLOCATION_BACKFILL = 58
ALLOCATION_OWNER = 60
LESSEE = 65
DEPLOY_STEPS = 69
DEPLOY_VERBS = 73
BOOT_MODE = 75
#: From 1.2 an available node shows ``available`` (before: null).
AVAILABLE_STATE = 2
#: From 1.12 nodes and their states show their RAID configuration.
RAID_CONFIG = 12
ALLOCATION_NODE_NAME = 79
SHARDS = 82
PARENT_NODE = 83
FIRMWARE_INTERFACE = 86
SERVICE_STEP = 87
DISABLE_POWER_OFF = 95
INSTANCE_NAME = 104
HEALTH = 109

#: Collections listed in /v1, with the version that introduced them
#: (those this server serves).
COLLECTIONS: tuple[tuple[str, int], ...] = (
    ("chassis", 1), ("nodes", 1), ("ports", 1),
    ("allocations", ALLOCATIONS),
    ("shards", SHARDS),
)
#: Where ``version`` stands in Ironic's ``GET /v1``: after the
#: collections of API 1.1, before those added later.
_BEFORE_VERSION = 1
#: The link Ironic's ``GET /v1`` gives to the API's description.
DESCRIBED_BY = {
    "href": "https://docs.openstack.org//ironic/latest/contributor//"
            "webapi.html",
    "rel": "describedby", "type": "text/html",
}

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)$")
_SUPPORTED = (
    f"The supported version range is: [{MIN_VERSION}, {MAX_VERSION}]."
)


class VersionError(Exception):
    """A version header Ironic would answer with 406."""


@functools.lru_cache(maxsize=64)
def parse(header: str | None) -> Version:
    """Turn the request header into the version the request is served at
    (worked out once for each of the few values clients send).

    No header means the minimum version, ``latest`` the maximum, like Ironic.
    """
    if header is None or not header.strip():
        return MIN_VERSION
    value = header.strip()
    if value.lower() == "latest":
        return MAX_VERSION
    match = _VERSION_RE.match(value)
    if match is None:
        raise VersionError(f"Invalid value for {HEADER} header")
    try:
        version = Version(
            numbers.integer(match.group(1), HEADER, minimum=0),
            numbers.integer(match.group(2), HEADER, minimum=0))
    except numbers.NumberError as exc:  # Ironic: 406 for any bad value
        raise VersionError(
            f"Invalid value for {HEADER} header: {exc.reason}. "
            f"{_SUPPORTED}") from None
    if version.major != MAX_VERSION.major:
        raise VersionError(
            f"Mutually exclusive versions requested. Version {version} "
            f"requested but not supported by this service. {_SUPPORTED}"
        )
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise VersionError(
            f"Version {version} was requested but the minor version is not "
            f"supported by this service. {_SUPPORTED}"
        )
    return version


def version_document(base_url: str) -> dict[str, Any]:
    """The ``v1`` entry of the root document (also embedded in /v1)."""
    return {
        "id": "v1",
        "links": [{"href": f"{base_url}/v1/", "rel": "self"}],
        "status": "CURRENT",
        "min_version": str(MIN_VERSION),
        "version": str(MAX_VERSION),
    }


def root_document(base_url: str) -> dict[str, Any]:
    """``GET /``: what clients read to discover the version range."""
    v1 = version_document(base_url)
    return {
        "name": "Bare metal allocation reference server",
        "description": (
            "An Ironic-compatible API for nodes and allocations, for "
            "development and testing."
        ),
        "default_version": v1,
        "versions": [v1],
    }


def v1_document(base_url: str, minor: int) -> dict[str, Any]:
    """``GET /v1``: the resources this server serves at ``minor``."""

    def links(resource: str) -> list[dict[str, str]]:
        return [
            {"href": f"{base_url}/v1/{resource}/", "rel": "self"},
            {"href": f"{base_url}/{resource}/", "rel": "bookmark"},
        ]

    document: dict[str, Any] = {
        "id": "v1",
        "links": [{"href": f"{base_url}/v1/", "rel": "self"},
                  dict(DESCRIBED_BY)],
        "media_types": {
            "base": "application/json",
            "type": "application/vnd.openstack.ironic.v1+json",
        },
    }
    for resource, since in COLLECTIONS:
        if since > _BEFORE_VERSION and "version" not in document:
            document["version"] = version_document(base_url)
        if minor >= since:
            document[resource] = links(resource)
    document.setdefault("version", version_document(base_url))
    return document
