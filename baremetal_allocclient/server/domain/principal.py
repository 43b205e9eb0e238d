"""Who sends a request: the value every service is given."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    """Who sends a request: an admin, or a member of one project.

    ``read_only`` principals (Keystone's ``reader`` role) may only read.
    ``refused`` is a role refusal of a request that names a node, given
    once the node is found (a node the caller cannot see is a 404, as in
    Ironic, not a 403 telling that it exists).
    """

    user: str | None
    project: str | None
    admin: bool
    read_only: bool = False
    refused: str | None = None


#: Every request under ``noauth``.
NOAUTH_ADMIN = Principal(user=None, project=None, admin=True)
