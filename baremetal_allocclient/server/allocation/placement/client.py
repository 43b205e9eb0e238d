"""A thin, typed HTTP client for the OpenStack Placement API.

Every request carries one pinned microversion (:data:`MICROVERSION`):

* 1.26 lets an inventory have ``reserved == total`` (a node that exists
  but cannot be allocated keeps its inventory);
* 1.28 adds consumer generations (a new consumer is claimed with
  ``consumer_generation: null``, so two claims for one allocation cannot
  both succeed);
* 1.31 adds ``in_tree`` to ``GET /allocation_candidates`` (candidate
  nodes).

1.31 therefore covers everything used here; later versions (1.38 makes
``consumer_type`` mandatory) are not needed.  :meth:`check_version`
refuses a Placement whose maximum is older, at start.

Authentication goes through a keystoneauth1 session: for a local
Placement with ``auth_strategy = noauth2`` an ``admin`` token (the
``X-Auth-Token: admin`` header Placement's noauth2 middleware maps to the
admin role), otherwise any keystoneauth plugin (clouds.yaml).
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from baremetal_allocclient.server.allocation.backends import remote

LOG = logging.getLogger(__name__)

MICROVERSION: Final = (1, 31)
SERVICE_TYPE: Final = "placement"
DEFAULT_TIMEOUT: Final = 10.0

#: Error codes Placement puts in ``errors[].code`` (since 1.23).
CONCURRENT_UPDATE: Final = "placement.concurrent_update"
INVENTORY_IN_USE: Final = "placement.inventory.inuse"
DUPLICATE_NAME: Final = "placement.duplicate_name"
PROVIDER_IN_USE: Final = "placement.resource_provider.inuse"
UNDEFINED: Final = "placement.undefined_code"


class PlacementError(Exception):
    """Placement answered with an error status."""

    def __init__(self, method: str, path: str, status: int, code: str,
                 detail: str) -> None:
        super().__init__(
            f"Placement {method} {path} failed with {status} ({code}): "
            f"{detail}"
        )
        self.status = status
        self.code = code
        self.detail = detail

    @property
    def concurrent_update(self) -> bool:
        """A generation moved under us: reread and retry."""
        return self.status == 409 and self.code == CONCURRENT_UPDATE


class PlacementUnavailable(Exception):
    """Placement could not be reached (connection refused, timeout)."""


@dataclass(frozen=True)
class Provider:
    """A resource provider as listed by Placement."""

    uuid: str
    name: str
    generation: int


def microversion_text(version: tuple[int, int] = MICROVERSION) -> str:
    """``1.31`` style text of a microversion tuple."""
    return f"{version[0]}.{version[1]}"


def parse_version(text: str) -> tuple[int, int]:
    """``"1.39"`` -> (1, 39); ValueError for anything else."""
    major, _, minor = text.partition(".")
    return int(major), int(minor)


def error_code(body: Any) -> tuple[str, str]:
    """The (code, detail) of a Placement error document, tolerant of any
    shape (a proxy's HTML page gives the undefined code)."""
    if isinstance(body, Mapping):
        errors = body.get("errors")
        if isinstance(errors, list) and errors and isinstance(
            errors[0], Mapping
        ):
            first = errors[0]
            return (
                str(first.get("code") or UNDEFINED),
                str(first.get("detail") or first.get("title") or ""),
            )
    return UNDEFINED, ""


NOAUTH_ADMIN_TOKEN: Final = "admin"  # noqa: S105 - noauth2's admin user


def noauth_session(token: str = NOAUTH_ADMIN_TOKEN) -> ks_session.Session:
    """A session sending a fixed ``X-Auth-Token`` (Placement noauth2)."""
    # The endpoint is always passed per request (endpoint_override).
    auth = token_endpoint.Token("http://placement.invalid", token)
    return ks_session.Session(auth=auth)


class PlacementClient:
    """Placement calls used by the sync and the placement backend."""

    def __init__(
        self,
        session: ks_session.Session,
        endpoint: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        region_name: str | None = None,
        interface: str | None = None,
    ) -> None:
        self._session = session
        self.endpoint = endpoint.rstrip("/") if endpoint else None
        self._service = remote.Service(
            "Placement", SERVICE_TYPE, PlacementUnavailable, self.endpoint,
            interface=interface or "public", region_name=region_name,
            timeout=timeout, headers={
                "OpenStack-API-Version": f"placement {microversion_text()}"})

    # -- transport ------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        json: object = None,
        params: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
        ok: Sequence[int] = (200, 201, 204),
    ) -> Any:
        """One call; the decoded body (None when empty) or an exception."""
        answer = remote.call(self._session, self._service, method, path,
                             json, params)
        if answer.status not in ok:
            code, detail = error_code(answer.body)
            raise PlacementError(method, path, answer.status, code,
                                 detail or answer.text)
        return answer.body

    # -- versions -------------------------------------------------------
    def check_version(self) -> tuple[int, int]:
        """Placement's maximum microversion; refuses an older one."""
        body = self.request("GET", "/")
        try:
            top = body["versions"][0]
            maximum = parse_version(str(top["max_version"]))
        except (TypeError, KeyError, IndexError, ValueError) as exc:
            raise PlacementError(
                "GET", "/", 200, UNDEFINED,
                f"unexpected version document: {body!r}",
            ) from exc
        if maximum < MICROVERSION:
            raise PlacementError(
                "GET", "/", 200, UNDEFINED,
                f"Placement supports up to microversion "
                f"{microversion_text(maximum)}, this server needs "
                f"{microversion_text()}",
            )
        return maximum

    # -- catalogue ------------------------------------------------------
    def ensure_resource_class(self, name: str) -> None:
        """Create a CUSTOM_ resource class (idempotent)."""
        self.request("PUT", f"/resource_classes/{_q(name)}")

    def ensure_trait(self, name: str) -> None:
        """Create a CUSTOM_ trait (idempotent)."""
        self.request("PUT", f"/traits/{_q(name)}")

    # -- providers ------------------------------------------------------
    def providers(self, required: Sequence[str] = ()) -> list[Provider]:
        """Providers having all ``required`` traits."""
        params = {"required": ",".join(required)} if required else None
        body = self.request("GET", "/resource_providers", params=params)
        return [
            Provider(p["uuid"], p["name"], int(p["generation"]))
            for p in body["resource_providers"]
        ]

    def provider(self, uuid: str) -> Provider | None:
        """One provider, None when it does not exist."""
        try:
            p = self.request("GET", f"/resource_providers/{_q(uuid)}")
        except PlacementError as exc:
            if exc.status == 404:
                return None
            raise
        return Provider(p["uuid"], p["name"], int(p["generation"]))

    def create_provider(self, uuid: str, name: str) -> Provider:
        """POST /resource_providers."""
        p = self.request(
            "POST", "/resource_providers", json={"uuid": uuid, "name": name}
        )
        return Provider(p["uuid"], p["name"], int(p["generation"]))

    def rename_provider(self, uuid: str, name: str) -> None:
        """PUT /resource_providers/{uuid} with a new name."""
        self.request(
            "PUT", f"/resource_providers/{_q(uuid)}", json={"name": name}
        )

    def delete_provider(self, uuid: str) -> None:
        """DELETE a provider; a missing one is fine."""
        self.request(
            "DELETE", f"/resource_providers/{_q(uuid)}", ok=(204, 404)
        )

    def inventories(self, uuid: str) -> tuple[int, dict[str, dict[str, Any]]]:
        """(generation, {resource class: inventory}) of a provider."""
        body = self.request(
            "GET", f"/resource_providers/{_q(uuid)}/inventories"
        )
        return (
            int(body["resource_provider_generation"]),
            dict(body["inventories"]),
        )

    def set_inventories(
        self, uuid: str, generation: int,
        inventories: Mapping[str, Mapping[str, Any]],
    ) -> int:
        """Replace a provider's inventories; the new generation."""
        body = self.request(
            "PUT", f"/resource_providers/{_q(uuid)}/inventories",
            json={"resource_provider_generation": generation,
                  "inventories": dict(inventories)},
        )
        return int(body["resource_provider_generation"])

    def traits(self, uuid: str) -> tuple[int, set[str]]:
        """(generation, traits) of a provider."""
        body = self.request("GET", f"/resource_providers/{_q(uuid)}/traits")
        return int(body["resource_provider_generation"]), set(body["traits"])

    def set_traits(
        self, uuid: str, generation: int, traits: Sequence[str]
    ) -> int:
        """Replace a provider's traits; the new generation."""
        body = self.request(
            "PUT", f"/resource_providers/{_q(uuid)}/traits",
            json={"resource_provider_generation": generation,
                  "traits": sorted(traits)},
        )
        return int(body["resource_provider_generation"])

    def usages(self, uuid: str) -> dict[str, int]:
        """Resource class -> amount consumed on a provider."""
        body = self.request("GET", f"/resource_providers/{_q(uuid)}/usages")
        return {k: int(v) for k, v in body["usages"].items()}

    def provider_consumers(self, uuid: str) -> set[str]:
        """UUIDs of the consumers holding allocations on a provider."""
        body = self.request(
            "GET", f"/resource_providers/{_q(uuid)}/allocations"
        )
        return set(body["allocations"])

    # -- allocations ----------------------------------------------------
    def allocation_candidates(
        self,
        resource_class: str,
        required: Sequence[str] = (),
        in_tree: str | None = None,
    ) -> list[str]:
        """Provider UUIDs able to give one unit of ``resource_class``."""
        params: list[tuple[str, str]] = [("resources", f"{resource_class}:1")]
        if required:
            params.append(("required", ",".join(sorted(set(required)))))
        if in_tree:
            params.append(("in_tree", in_tree))
        body = self.request("GET", "/allocation_candidates", params=params)
        result: list[str] = []
        for request in body["allocation_requests"]:
            for rp_uuid in request["allocations"]:
                if rp_uuid not in result:
                    result.append(rp_uuid)
        return result

    def consumer_allocations(self, consumer: str) -> dict[str, dict[str, int]]:
        """Provider -> resources held by a consumer (empty if none)."""
        body = self.request("GET", f"/allocations/{_q(consumer)}")
        return {
            rp: {k: int(v) for k, v in alloc["resources"].items()}
            for rp, alloc in body["allocations"].items()
        }

    def consumer_user(self, consumer: str) -> str | None:
        """The user_id a consumer's allocations were made by (None when
        it holds none)."""
        body = self.request("GET", f"/allocations/{_q(consumer)}")
        user = body.get("user_id") if body.get("allocations") else None
        return str(user) if user is not None else None

    def claim(
        self, consumer: str, provider: str, resource_class: str,
        project_id: str, user_id: str,
    ) -> None:
        """Claim one unit for a *new* consumer (consumer_generation null)."""
        self.request(
            "PUT", f"/allocations/{_q(consumer)}",
            json={
                "allocations": {
                    provider: {"resources": {resource_class: 1}}
                },
                "project_id": project_id,
                "user_id": user_id,
                "consumer_generation": None,
            },
        )

    def delete_consumer(self, consumer: str) -> None:
        """Remove every allocation of a consumer; missing is fine."""
        self.request("DELETE", f"/allocations/{_q(consumer)}", ok=(204, 404))


def _q(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")
