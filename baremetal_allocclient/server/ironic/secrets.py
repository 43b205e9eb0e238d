"""Which parts of a node Ironic masks in every answer (pure).

Ironic's ``show_password`` and ``show_instance_secrets`` policies default
to nobody, so every client sees ``******`` in place of a secret: any key
that oslo.utils considers secret (``ipmi_password``, ``*_token``, ...) in
``driver_info``, ``driver_internal_info`` and ``instance_info``, the SNMP
keys of ``driver_info``, and ``configdrive`` and ``image_url`` of
``instance_info``.
"""

from __future__ import annotations

from typing import Any

from oslo_utils import strutils

MASK = "******"
_DRIVER_INFO_KEYS = ("snmp_auth_key", "snmp_priv_key")
_INSTANCE_INFO_KEYS = ("configdrive", "image_url")


def _masked(document: dict[str, Any] | None,
            keys: tuple[str, ...] = ()) -> dict[str, Any]:
    result = strutils.mask_dict_password(document or {}, MASK)
    for key in keys:
        if result.get(key):
            result[key] = MASK
    return result


def driver_info(document: dict[str, Any] | None) -> dict[str, Any]:
    """``driver_info`` as clients see it."""
    return _masked(document, _DRIVER_INFO_KEYS)


def driver_internal_info(document: dict[str, Any] | None) -> dict[str, Any]:
    """``driver_internal_info`` as clients see it."""
    return _masked(document)


def instance_info(document: dict[str, Any] | None) -> dict[str, Any]:
    """``instance_info`` as clients see it (the config drive masked)."""
    return _masked(document, _INSTANCE_INFO_KEYS)
