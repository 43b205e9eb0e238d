"""API microversions: the advertised range, parsing and feature gates.

Pure functions only; the WSGI layer turns :class:`VersionError` into a 406.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

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
# 1.73 is the highest version whose every change applies to the endpoints
# served here: 1.66 network_data, 1.69 deploy_steps, 1.73 deploy/undeploy.
MAX_VERSION = Version(1, 73)

# Feature gates (minor versions), named after what they introduce.
NODE_NAME = 5
FIELDS_SELECTOR = 8
ENROLL_STATE = 11
MANAGE_VERBS = 4
RESOURCE_CLASS = 21
TRAITS = 37
DETAIL_QUERY = 43
OWNER_FILTER = 50
ALLOCATIONS = 52
ALLOCATION_UPDATE = 57
ALLOCATION_BACKFILL = 58
ALLOCATION_OWNER = 60
LESSEE = 65
DEPLOY_STEPS = 69
DEPLOY_VERBS = 73

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)$")


class VersionError(Exception):
    """A version header Ironic would answer with 406."""


def parse(header: str | None) -> Version:
    """Turn the request header into the version the request is served at.

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
    version = Version(int(match.group(1)), int(match.group(2)))
    supported = (
        f"The supported version range is: [{MIN_VERSION}, {MAX_VERSION}]."
    )
    if version.major != MAX_VERSION.major:
        raise VersionError(
            f"Mutually exclusive versions requested. Version {version} "
            f"requested but not supported by this service. {supported}"
        )
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise VersionError(
            f"Version {version} was requested but the minor version is not "
            f"supported by this service. {supported}"
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


def v1_document(base_url: str) -> dict[str, Any]:
    """``GET /v1``: the resources this server serves."""

    def links(resource: str) -> list[dict[str, str]]:
        return [
            {"href": f"{base_url}/v1/{resource}/", "rel": "self"},
            {"href": f"{base_url}/{resource}/", "rel": "bookmark"},
        ]

    return {
        "id": "v1",
        "links": [{"href": f"{base_url}/v1/", "rel": "self"}],
        "media_types": {
            "base": "application/json",
            "type": "application/vnd.openstack.ironic.v1+json",
        },
        "nodes": links("nodes"),
        "allocations": links("allocations"),
        "ports": links("ports"),
        "version": version_document(base_url),
    }
