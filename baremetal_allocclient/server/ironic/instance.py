"""What a deploy keeps in a node's ``instance_info`` (pure).

Like Ironic with fake-hardware: the ``configdrive`` of the deploy request
is kept (``logic/secrets.py`` masks it in answers), and an image gets its
``image_type``.
"""

from __future__ import annotations

from typing import Any

CONFIGDRIVE_VERBS = ("active", "deploy")
#: A config drive may be a JSON object from 1.56, with vendor_data 1.59.
CONFIGDRIVE_OBJECT = 56
CONFIGDRIVE_VENDOR_DATA = 59
CONFIGDRIVE_KEYS = ("meta_data", "network_data", "user_data", "vendor_data")


def configdrive_error(verb: str, configdrive: object, minor: int
                      ) -> str | None:
    """Why a deploy request's ``configdrive`` is refused (Ironic's
    wording), None when it is acceptable or absent."""
    if configdrive is None:
        return None
    if verb not in CONFIGDRIVE_VERBS:
        return ("Adding a config drive is only supported when setting "
                "provision state to active, rebuild")
    if isinstance(configdrive, str):
        return None
    if not isinstance(configdrive, dict):
        return f"Invalid configdrive format: {configdrive!r:.60}"
    if minor < CONFIGDRIVE_OBJECT:
        return ("Providing a JSON object for configdrive is only supported "
                "starting with API version 1.56")
    if "vendor_data" in configdrive and minor < CONFIGDRIVE_VENDOR_DATA:
        return ("Providing vendor_data in configdrive is only supported "
                "starting with API version 1.59")
    unknown = sorted(set(configdrive) - set(CONFIGDRIVE_KEYS))
    if unknown:
        return (f"Invalid configdrive format: Additional properties are "
                f"not allowed ({', '.join(repr(k) for k in unknown)} was "
                f"unexpected)")
    wrong = [k for k in ("meta_data", "network_data", "vendor_data")
             if k in configdrive and not isinstance(configdrive[k], dict)]
    if wrong:
        return f"Invalid configdrive format: {wrong[0]} must be an object"
    return None


def image_type(info: dict[str, Any]) -> str | None:
    """``partition`` for an image with its own kernel and ramdisk,
    ``whole-disk`` for any other image, None without an image."""
    if not info.get("image_source"):
        return None
    if info.get("kernel") and info.get("ramdisk"):
        return "partition"
    return "whole-disk"


def deployed(info: dict[str, Any] | None, configdrive: object
             ) -> dict[str, Any]:
    """``instance_info`` once a deploy starts."""
    result = dict(info or {})
    kind = image_type(result)
    if kind is not None:
        result.setdefault("image_type", kind)
    if configdrive is not None:
        result["configdrive"] = configdrive
    return result
