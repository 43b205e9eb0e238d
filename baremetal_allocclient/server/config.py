"""Where ``baremetal-alloc-server`` takes each option's value from.

The command line wins over the environment (``OS_<GROUP>__<OPTION>``),
which wins over the config files (read by oslo.config, later files over
earlier ones), which win over the default.  Secrets (the Placement token,
a database password) are refused on the command line and may come from a
file named in the configuration instead.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from oslo_config import cfg, types

from baremetal_allocclient.server.option_types import Count, Seconds
from baremetal_allocclient.server.options import OPTIONS, Option

DEFAULT_CONFIG_FILE = "/etc/baremetal-alloc/server.conf"
PROJECT = "baremetal-alloc"


_METAVARS = {Seconds: "SECONDS", Count: "N", types.Port: "PORT",
             types.HostAddress: "ADDRESS"}


class ConfigError(Exception):
    """The configuration cannot be used (a one-line message)."""


def sample_default(opt: cfg.Opt) -> str:
    """The default as the sample config shows it."""
    if opt.sample_default is not None:
        return str(opt.sample_default)
    if opt.default is None:
        return "<None>"
    if isinstance(opt.default, bool):
        return str(opt.default).lower()
    return str(opt.default)


def add_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """``--config-file`` and a flag for each option ``command`` reads."""
    parser.add_argument(
        "--config-file", action="append", metavar="PATH",
        default=argparse.SUPPRESS,
        help=f"oslo.config file to read (repeatable; later files win; "
             f"default {DEFAULT_CONFIG_FILE} when it exists)",
    )
    groups: dict[str, Any] = {}
    for option in OPTIONS:
        if command not in option.commands:
            continue
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(
                f"[{option.group}] options")
        groups[option.group].add_argument(option.flag,
                                          **_flag_settings(option))


def _flag_settings(option: Option) -> dict[str, Any]:
    opt = option.opt
    name = "DEFAULT" if option.group == "DEFAULT" else option.group
    text = (f"{opt.help}{_choices_text(opt)} (default: "
            f"{sample_default(opt)}; config: [{name}] {opt.name})"
            ).replace("%", "%%")
    settings: dict[str, Any] = {
        "dest": option.dest, "default": argparse.SUPPRESS, "help": text,
    }
    if isinstance(opt, cfg.BoolOpt):
        settings["action"] = "store_true"
    elif choices := getattr(opt.type, "choices", None):
        settings["choices"] = list(choices)
    elif not option.refused_on_cli:
        settings["type"] = _converter(opt)
        settings["metavar"] = _METAVARS.get(type(opt.type), "VALUE")
    settings.update(option.cli)
    return settings


def _choices_text(opt: cfg.Opt) -> str:
    choices = getattr(opt.type, "choices", None) or {}
    described = [f"{value}: {text}" for value, text in choices.items()
                 if text]
    return " Values: " + "; ".join(described) + "." if described else ""


def _converter(opt: cfg.Opt) -> Callable[[str], Any]:
    def convert(value: str) -> Any:
        try:
            return opt.type(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return convert


def _refuse_secrets_on_cli(args: argparse.Namespace,
                           options: list[Option]) -> None:
    for option in options:
        if option.refused_on_cli and hasattr(args, option.dest):
            raise ConfigError(
                f"{option.flag} is refused: every local user can read the "
                f"command line (ps); set [{option.group}] "
                f"{option.opt.name}_file or {option.opt.name} in a "
                f"--config-file, or the environment variable "
                f"{_env_name(option)}")


def _env_name(option: Option) -> str:
    return f"OS_{option.group.upper()}__{option.opt.name.upper()}"


def load(args: argparse.Namespace, command: str) -> argparse.Namespace:
    """Every option of ``command`` resolved, secrets read, as
    attributes named by :attr:`Option.dest`."""
    options = [o for o in OPTIONS if command in o.commands]
    _refuse_secrets_on_cli(args, options)
    _refuse_password_in_cli_url(args)
    conf = _read(options, getattr(args, "config_file", None))
    resolved = argparse.Namespace(command=args.command)
    for option in options:
        group = None if option.group == "DEFAULT" else option.group
        if hasattr(args, option.dest):
            conf.set_override(option.opt.dest, getattr(args, option.dest),
                              group)
        setattr(resolved, option.dest, _value(conf, option, group))
    for name, value in vars(args).items():
        if not hasattr(resolved, name) and name != "config_file":
            setattr(resolved, name, value)
    _read_secrets(resolved)
    _check(resolved, command)
    # The loaded files, for libraries that read their own groups from them
    # (keystonemiddleware's [keystone_authtoken] takes oslo_config_config).
    resolved.oslo_conf = conf
    return resolved


def _read(options: list[Option], files: list[str] | None) -> cfg.ConfigOpts:
    if files is None:
        files = ([DEFAULT_CONFIG_FILE]
                 if os.path.exists(DEFAULT_CONFIG_FILE) else [])
    conf = cfg.ConfigOpts()
    for option in options:
        group = None if option.group == "DEFAULT" else option.group
        conf.register_opt(option.opt, group)
    for path in files:
        if not os.access(path, os.R_OK):
            raise ConfigError(f"cannot read config file {path}")
    try:
        conf(args=[], project=PROJECT, default_config_files=files,
             use_env=True)
    except cfg.Error as exc:
        raise ConfigError(_one_line(str(exc))) from exc
    return conf


def _value(conf: cfg.ConfigOpts, option: Option, group: str | None) -> Any:
    try:
        if group is None:
            return conf[option.opt.dest]
        return conf[group][option.opt.dest]
    except (ValueError, cfg.Error) as exc:
        env = _env_name(option)
        where = (f"environment variable {env}" if env in os.environ
                 else "config file")
        raise ConfigError(
            f"invalid value for [{option.group}] {option.opt.name} "
            f"({where}): {invalid_value_reason(exc)}") from exc


def invalid_value_reason(exc: Exception) -> str:
    """Why oslo.config refused a value, in one line (pure)."""
    reason = str(exc).rsplit("is not valid: ", 1)[-1]
    if "invalid literal for int()" in reason:  # oslo.config's Integer
        reason = "must be an integer"
    return _one_line(reason)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _refuse_password_in_cli_url(args: argparse.Namespace) -> None:
    url = getattr(args, "db", None)
    try:
        password = urlsplit(url).password if url else None
    except ValueError:
        password = None
    if password:
        raise ConfigError(
            "--db with a password is refused, as every local user can "
            "read the command line (ps); give the URL without it and put "
            "the password in [database] password_file (--db-password-file),"
            " or set [database] connection in a --config-file or the "
            "environment variable OS_DATABASE__CONNECTION")


def _read_secret(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as stream:
            secret = stream.read().strip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc}") from exc
    if not secret or "\n" in secret:
        raise ConfigError(f"{what} {path} must hold one non-empty line")
    return secret


def _read_secrets(ns: argparse.Namespace) -> None:
    password_file = getattr(ns, "db_password_file", None)
    if password_file:
        if not ns.db:
            raise ConfigError("[database] password_file needs [database] "
                              "connection (--db)")
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        password = _read_secret(password_file, "[database] password_file")
        try:
            url = make_url(ns.db).set(password=password)
        except ArgumentError as exc:
            raise ConfigError(f"invalid [database] connection: {exc}") \
                from exc
        ns.db = url.render_as_string(hide_password=False)
    token_file = getattr(ns, "placement_token_file", None)
    if token_file and not getattr(ns, "placement_token", None):
        ns.placement_token = _read_secret(token_file,
                                          "[placement] token_file")


def _check(ns: argparse.Namespace, command: str) -> None:
    if command != "serve":
        return
    if ns.heartbeat_timeout <= ns.heartbeat_interval:
        raise ConfigError(
            "--heartbeat-timeout must be longer than --heartbeat-interval "
            "([conductor] heartbeat_timeout, heartbeat_interval)")
    if ns.expire_leases_undeploy and not ns.expire_leases:
        raise ConfigError(
            "--expire-leases-undeploy needs --expire-leases ([conductor] "
            "expire_leases_undeploy needs expire_leases)")
