"""An in-memory Placement with Placement's generation and capacity rules,
for unit tests of the sync and the backend (the functional tests use the
real service)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from baremetal_allocclient.server.allocation.placement import client as pc


@dataclass
class _Provider:
    name: str
    generation: int = 0
    inventories: dict[str, dict[str, Any]] = field(default_factory=dict)
    traits: set[str] = field(default_factory=set)


class FakePlacement(pc.PlacementClient):
    """Implements the calls PlacementClient offers, in memory."""

    def __init__(self) -> None:
        self.providers_: dict[str, _Provider] = {}
        self.consumers: dict[str, dict[str, dict[str, int]]] = {}
        #: user_id per consumer; consumers a test adds to ``consumers``
        #: directly belong to ``default_user`` (the sync tests' own user).
        self.users: dict[str, str] = {}
        self.default_user = "user"
        self.down = False
        self.calls: list[tuple[str, Any]] = []
        #: Errors to raise on the next claims, in order (None: succeed).
        self.claim_errors: list[pc.PlacementError | None] = []
        self.endpoint = "fake"

    def _call(self, name: str, arg: Any = None) -> None:
        if self.down:
            raise pc.PlacementUnavailable("connection refused")
        self.calls.append((name, arg))

    @staticmethod
    def _conflict(code: str = pc.CONCURRENT_UPDATE) -> pc.PlacementError:
        return pc.PlacementError("PUT", "/x", 409, code, "conflict")

    def _get(self, uuid: str) -> _Provider:
        if uuid not in self.providers_:
            raise pc.PlacementError("GET", uuid, 404, pc.UNDEFINED, "missing")
        return self.providers_[uuid]

    def used(self, uuid: str, rc: str) -> int:
        return sum(
            alloc.get(uuid, {}).get(rc, 0)
            for alloc in self.consumers.values()
        )

    # -- the client interface -------------------------------------------
    def check_version(self) -> tuple[int, int]:
        self._call("version")
        return (1, 39)

    def ensure_resource_class(self, name: str) -> None:
        self._call("rc", name)

    def ensure_trait(self, name: str) -> None:
        self._call("trait", name)

    def providers(self, required: Sequence[str] = ()) -> list[pc.Provider]:
        self._call("providers")
        return [
            pc.Provider(u, p.name, p.generation)
            for u, p in self.providers_.items()
            if set(required) <= p.traits
        ]

    def provider(self, uuid: str) -> pc.Provider | None:
        self._call("provider", uuid)
        p = self.providers_.get(uuid)
        return None if p is None else pc.Provider(uuid, p.name, p.generation)

    def create_provider(self, uuid: str, name: str) -> pc.Provider:
        self._call("create", uuid)
        self.providers_[uuid] = _Provider(name)
        return pc.Provider(uuid, name, 0)

    def rename_provider(self, uuid: str, name: str) -> None:
        self._call("rename", uuid)
        self._get(uuid).name = name

    def delete_provider(self, uuid: str) -> None:
        self._call("delete_provider", uuid)
        if any(uuid in a for a in self.consumers.values()):
            raise pc.PlacementError("DELETE", uuid, 409,
                                    pc.PROVIDER_IN_USE, "in use")
        self.providers_.pop(uuid, None)

    def inventories(self, uuid: str) -> tuple[int, dict[str, dict[str, Any]]]:
        self._call("inventories", uuid)
        p = self._get(uuid)
        return p.generation, {k: dict(v) for k, v in p.inventories.items()}

    def set_inventories(self, uuid: str, generation: int,
                        inventories: Mapping[str, Mapping[str, Any]]) -> int:
        self._call("set_inventories", uuid)
        p = self._get(uuid)
        if generation != p.generation:
            raise self._conflict()
        p.inventories = {k: dict(v) for k, v in inventories.items()}
        p.generation += 1
        return p.generation

    def traits(self, uuid: str) -> tuple[int, set[str]]:
        self._call("traits", uuid)
        p = self._get(uuid)
        return p.generation, set(p.traits)

    def set_traits(self, uuid: str, generation: int,
                   traits: Sequence[str]) -> int:
        self._call("set_traits", uuid)
        p = self._get(uuid)
        if generation != p.generation:
            raise self._conflict()
        p.traits = set(traits)
        p.generation += 1
        return p.generation

    def usages(self, uuid: str) -> dict[str, int]:
        self._call("usages", uuid)
        return {rc: self.used(uuid, rc) for rc in self._get(uuid).inventories}

    def provider_consumers(self, uuid: str) -> set[str]:
        self._call("provider_consumers", uuid)
        return {c for c, a in self.consumers.items() if uuid in a}

    def allocation_candidates(self, resource_class: str,
                              required: Sequence[str] = (),
                              in_tree: str | None = None) -> list[str]:
        self._call("candidates", (resource_class, tuple(required), in_tree))
        result = []
        for uuid, p in self.providers_.items():
            inv = p.inventories.get(resource_class)
            if inv is None or not set(required) <= p.traits:
                continue
            if in_tree is not None and uuid != in_tree:
                continue
            if inv["total"] - inv["reserved"] - self.used(
                uuid, resource_class
            ) >= 1:
                result.append(uuid)
        return result

    def consumer_allocations(self, consumer: str) -> dict[str, dict[str, int]]:
        self._call("consumer", consumer)
        held = self.consumers.get(consumer, {})
        return {k: dict(v) for k, v in held.items()}

    def consumer_user(self, consumer: str) -> str | None:
        self._call("consumer_user", consumer)
        if not self.consumers.get(consumer):
            return None
        return self.users.get(consumer, self.default_user)

    def claim(self, consumer: str, provider: str, resource_class: str,
              project_id: str, user_id: str) -> None:
        self._call("claim", (consumer, provider, project_id))
        if self.claim_errors:
            error = self.claim_errors.pop(0)
            if error is not None:
                raise error
        if consumer in self.consumers:
            raise self._conflict()
        p = self._get(provider)
        inv = p.inventories.get(resource_class)
        if inv is None or inv["total"] - inv["reserved"] - self.used(
            provider, resource_class
        ) < 1:
            raise self._conflict(pc.UNDEFINED)
        self.consumers[consumer] = {provider: {resource_class: 1}}
        self.users[consumer] = user_id
        p.generation += 1

    def delete_consumer(self, consumer: str) -> None:
        self._call("delete_consumer", consumer)
        self.consumers.pop(consumer, None)
        self.users.pop(consumer, None)
