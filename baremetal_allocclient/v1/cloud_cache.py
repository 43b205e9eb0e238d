"""The command line's cache of resolved clouds, which holds no secret.

Scripts run ``baremetal-alloc`` with ``OS_CLOUD`` hundreds of times;
importing openstacksdk's config loader costs each run about 0.3 s, more
than the request.  The first run resolves the cloud with openstacksdk
and writes the :class:`~.clouds.ResolvedCloud` here, its secrets left
out and, for each secret, where it was read instead: the cloud's entry
in the secure.yaml or clouds.yaml it came from, an ``OS_*`` variable, or
the command line.  A later run reads the secrets from there again.

An entry is used only while everything the loader read is as it was:
it is named by a hash of the cloud, the overrides (secret values left
out), the working directory, the ``OS_*`` variables (secret ones by name
only) and the variables that place the config files; it records the
status (size, modification time, inode) of every file the loader looks
for, present or not, and of openstacksdk itself.  Any difference, or a
secret no longer where it was, and the run resolves the cloud again.

Entries are in ``$XDG_CACHE_HOME/baremetal-allocclient/clouds/`` (mode
0600, the directory 0700), the newest 100 kept.
``BAREMETAL_ALLOC_CLOUD_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from baremetal_allocclient.v1 import clouds
from baremetal_allocclient.v1.clouds import ResolvedCloud

FORMAT = 1
KEPT = 100  # entries
SWITCH = "BAREMETAL_ALLOC_CLOUD_CACHE"
#: Variables that move the config files (besides OS_*).
_PLACES = ("HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS")
_FILE_VARIABLES = ("OS_CLIENT_CONFIG_FILE", "OS_CLIENT_SECURE_FILE")


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the cache is on (it is unless switched off)."""
    return environ.get(SWITCH, "1") not in ("0", "false", "no", "off")


def directory(environ: Mapping[str, str] = os.environ) -> str:
    base = environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "baremetal-allocclient", "clouds")


def entry_name(cloud: str, overrides: Mapping[str, Any],
               environ: Mapping[str, str] = os.environ) -> str:
    """The entry of ``cloud`` resolved with ``overrides`` here, now."""
    auth = overrides.get("auth") or {}
    given = {**overrides, "auth": {
        key: "<secret>" if clouds.is_secret_name(key) else value
        for key, value in auth.items()}}
    names = {
        "format": FORMAT, "cloud": cloud, "overrides": given,
        "cwd": os.getcwd(),
        "environ": {name: ("<secret>" if clouds.is_secret_name(name)
                           else value)
                    for name, value in sorted(environ.items())
                    if name.startswith("OS_") or name in _PLACES},
    }
    text = json.dumps(names, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32] + ".json"


def _status(path: str) -> list[int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return [status.st_size, status.st_mtime_ns, status.st_ino]


def _config_files(environ: Mapping[str, str]) -> dict[str, list[str]]:
    """The files openstacksdk's loader looks for, by kind, in its order
    (read from the loader, which is imported when this is called)."""
    from openstack.config import loader

    def first(variable: str) -> list[str]:
        return [environ[variable]] if environ.get(variable) else []

    return {
        "secure": first("OS_CLIENT_SECURE_FILE") + list(loader.SECURE_FILES),
        "config": first("OS_CLIENT_CONFIG_FILE") + list(loader.CONFIG_FILES),
        "vendor": list(loader.VENDOR_FILES),
    }


def _openstacksdk_files() -> list[str]:
    spec = importlib.util.find_spec("openstack")
    origin = spec.origin if spec is not None else None
    return [origin] if origin else []


def _read(path: str) -> Any:
    """A config file's document (ValueError when it is not one)."""
    with open(path, encoding="utf-8") as stream:
        if path.endswith(".json"):
            return json.load(stream)
        import yaml

        try:
            return yaml.safe_load(stream)
        except yaml.YAMLError as exc:
            raise ValueError(str(exc)) from None


def _from_file(path: str, cloud: str, option: str) -> Any:
    """The value ``path`` gives ``option`` of ``cloud``'s auth (None)."""
    try:
        return _read(path)["clouds"][cloud]["auth"][option]
    except (OSError, ValueError, LookupError, TypeError):
        return None


def _source(option: str, value: Any, cloud: str,
            overrides: Mapping[str, Any], files: dict[str, list[str]],
            environ: Mapping[str, str]) -> list[str] | None:
    """Where the secret ``option`` (``value``) was read, or None when
    it cannot be told."""
    if (overrides.get("auth") or {}).get(option) == value:
        return ["given"]
    for kind in ("secure", "config"):
        path = next((path for path in files[kind] if os.path.isfile(path)),
                    None)
        if path is not None and _from_file(path, cloud, option) == value:
            return ["file", path]
    variable = "OS_" + option.upper()
    if environ.get(variable) == value:
        return ["env", variable]
    return None


def store(cloud: str, overrides: Mapping[str, Any],
          resolved: ResolvedCloud,
          environ: Mapping[str, str] = os.environ) -> bool:
    """Write ``resolved`` without its secrets, if the source of each can
    be told; whether it was written (a failure to write is no error)."""
    files = _config_files(environ)
    secret = {option for option in clouds.secret_options(
        resolved.auth_type, resolved.auth)
        if resolved.auth[option] is not None}
    sources = {}
    for option in secret:
        source = _source(option, resolved.auth[option], cloud, overrides,
                         files, environ)
        if source is None:
            return False
        sources[option] = source
    looked_at = [*files["secure"], *files["config"], *files["vendor"],
                 *_openstacksdk_files()]
    entry = {
        "format": FORMAT,
        "cloud": {**dataclasses.asdict(resolved),
                  "auth": {key: value for key, value in resolved.auth.items()
                           if key not in secret}},
        "secrets": sources,
        "files": [[path, _status(path)] for path in looked_at],
    }
    folder = directory(environ)
    written = _write(os.path.join(folder, entry_name(
        cloud, overrides, environ)), entry)
    if written:
        _prune(folder)
    return written


def _prune(folder: str) -> None:
    """Keep the :data:`KEPT` newest entries (one is written for each
    working directory a cloud is used from)."""
    try:
        entries = [entry for entry in os.scandir(folder)
                   if entry.name.endswith(".json")]
        entries.sort(key=lambda entry: entry.stat().st_mtime_ns)
        for entry in entries[:-KEPT]:
            os.unlink(entry.path)
    except OSError:
        pass


def _write(path: str, entry: dict[str, Any]) -> bool:
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(entry, stream)
        os.replace(temporary, path)  # mkstemp made it 0600
    except OSError:
        return False
    return True


def load(cloud: str, overrides: Mapping[str, Any],
         environ: Mapping[str, str] = os.environ) -> ResolvedCloud | None:
    """The cached resolution of ``cloud`` with ``overrides``, its secrets
    read again from where they were, or None when there is none that
    still holds."""
    path = os.path.join(directory(environ),
                        entry_name(cloud, overrides, environ))
    try:
        with open(path, encoding="utf-8") as stream:
            entry = json.load(stream)
        if entry.get("format") != FORMAT or any(
                _status(looked) != status
                for looked, status in entry["files"]):
            return None
        auth = dict(entry["cloud"]["auth"])
        for option, source in entry["secrets"].items():
            value = _secret(option, source, cloud, overrides, environ)
            if value is None:
                return None
            auth[option] = value
        fields = {**entry["cloud"], "auth": auth}
        if isinstance(fields.get("cert"), list):
            fields["cert"] = tuple(fields["cert"])
        return ResolvedCloud(**fields)
    except (OSError, ValueError, LookupError, TypeError):
        return None


def _secret(option: str, source: list[str], cloud: str,
            overrides: Mapping[str, Any],
            environ: Mapping[str, str]) -> Any:
    kind = source[0]
    if kind == "given":
        return (overrides.get("auth") or {}).get(option)
    if kind == "env":
        return environ.get(source[1])
    if kind == "file":
        return _from_file(source[1], cloud, option)
    return None
