"""Every option of ``baremetal-alloc-server``, declared once.

Each entry is an oslo.config option (its group, name, type, default and
help) plus the command-line flag that sets it.  The config file, the
environment (``OS_<GROUP>__<OPTION>``), ``--help`` and the sample config
(``oslo-config-generator --namespace baremetal-alloc-server``) are all
made from :data:`OPTIONS`; to add an option, add an entry here.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from oslo_config import cfg

from baremetal_allocclient.server.option_types import Count, Port, Seconds

SERVE = ("serve",)
ALL = ("serve", "db upgrade", "enroll")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_LEVEL_CHOICES = [
    ("DEBUG", "everything, SQL migrations included"),
    ("INFO", "start, stop and each allocation's outcome"),
    ("WARNING", "only what an operator should look at"),
    ("ERROR", "only failures"),
]
_AUTH_CHOICES = [
    ("noauth", "no authentication; loopback addresses only unless "
               "allow_unauthenticated_remote_access is set"),
    ("http_basic", "HTTP Basic authentication against "
                   "http_basic_auth_user_file"),
    ("keystone", "Keystone tokens, validated by keystonemiddleware's "
                 "auth_token as configured in [keystone_authtoken]"),
]
_BACKEND_CHOICES = [
    ("database", "select and claim nodes in SQL"),
    ("placement", "claim through an OpenStack Placement service kept in "
                  "step with the nodes (see [placement])"),
    ("ironic", "front a real Ironic: select over a mirror of its nodes, "
               "claim each node with an Ironic allocation, pass every "
               "other route through (see [ironic])"),
]
_ORDER_CHOICES = [
    ("first_fit", "the first free matching node from a random place in "
                  "the fleet (parallel requests rarely collide)"),
    ("best_fit", "the matching node whose properties exceed the request "
                 "least, keeping big nodes free; each create scores every "
                 "matching node"),
]
_IRONIC_AUTH_CHOICES = [
    ("noauth", "Ironic's noauth strategy"),
    ("http_basic", "HTTP Basic with username and password"),
]
DEFAULT_PLACEMENT_PROJECT = "baremetal-alloc"
DEFAULT_PLACEMENT_USER = "baremetal-alloc-server"
#: Request threads at most (each is a thread of the process).
MAX_THREADS = 10_000


@dataclass(frozen=True)
class Option:
    """One option: where it lives in the file and how the CLI sets it."""

    group: str
    opt: cfg.Opt
    #: the attribute ``serve`` reads (``args.<dest>``)
    dest: str
    flag: str
    commands: tuple[str, ...] = SERVE
    #: extra argparse settings (nargs, const, metavar)
    cli: Mapping[str, Any] = field(default_factory=dict)
    #: a secret the command line refuses (``ps`` shows every argument)
    refused_on_cli: bool = False


def _option(group: str, opt: cfg.Opt, dest: str | None = None,
            flag: str | None = None, commands: tuple[str, ...] = SERVE,
            refused_on_cli: bool = False, **cli: Any) -> Option:
    dest = dest or (opt.dest if group == "DEFAULT"
                    else f"{group}_{opt.dest}")
    return Option(group, opt, dest, flag or "--" + dest.replace("_", "-"),
                  commands, cli, refused_on_cli)


def _default_group() -> list[Option]:
    return [
        _option("DEFAULT", cfg.StrOpt(
            "log_level", default="INFO", choices=_LEVEL_CHOICES,
            help="Logging threshold."), commands=ALL),
        _option("DEFAULT", cfg.BoolOpt(
            "audit_json", default=False,
            help="Write the audit line of each allocation change (logger "
                 "baremetal_allocclient.audit) as one JSON object instead "
                 "of key=value pairs.")),
        _option("DEFAULT", cfg.StrOpt(
            "auth_strategy", default="noauth", choices=_AUTH_CHOICES,
            help="How API users authenticate.")),
        _option("DEFAULT", cfg.StrOpt(
            "http_basic_auth_user_file",
            help="Apache htpasswd file with bcrypt entries (http_basic)."),
            dest="htpasswd", metavar="FILE"),
        _option("DEFAULT", cfg.StrOpt(
            "auth_projects_file",
            help="YAML/JSON file mapping users to a project and roles "
                 "(admin, member); without it every htpasswd user is an "
                 "admin."), dest="auth_projects", metavar="FILE"),
        _option("DEFAULT", cfg.StrOpt(
            "keystone_authtoken_config_file",
            help="(keystone) File with Ironic's [keystone_authtoken] "
                 "section; without it the section is read from this "
                 "server's own configuration files. The service password "
                 "may come from OS_KEYSTONE_AUTHTOKEN__PASSWORD instead."),
            dest="keystone_config", flag="--keystone-config",
            metavar="FILE"),
        _option("DEFAULT", cfg.BoolOpt(
            "allow_unauthenticated_remote_access", default=False,
            help="Allow noauth on a non-loopback address: anyone who can "
                 "reach the port controls every node.")),
        _option("DEFAULT", cfg.StrOpt(
            "backend", default="database", choices=_BACKEND_CHOICES,
            help="Where nodes are selected and claimed.")),
    ]


def _api_group() -> list[Option]:
    return [
        _option("api", cfg.HostAddressOpt(
            "host_ip", default="127.0.0.1",
            help="Address to listen on."), dest="host"),
        _option("api", cfg.Opt(
            "port", type=Port(), default=6385,
            help="TCP port to listen on."),
            dest="port"),
        _option("api", cfg.Opt(
            "threads", type=Count(1, MAX_THREADS), default=64,
            help="HTTP request threads; they see only requests received in "
                 "full; at most half of them wait for allocations to settle "
                 "('Prefer: wait')."),
            dest="threads"),
        _option("api", cfg.Opt(
            "request_timeout", type=Seconds(), default=30.0,
            help="A request's line, headers and body must have arrived "
                 "within this many seconds of the connection's opening (of "
                 "its first byte that is not white space on a kept-alive "
                 "connection), or the server answers 408 and closes it; "
                 "blank lines and empty requests do not restart it; slow "
                 "clients hold no request thread meanwhile."),
            dest="request_timeout", metavar="SECONDS"),
        _option("api", cfg.Opt(
            "idle_timeout", type=Seconds(), default=60.0,
            help="From the moment an answer is ready, its client must "
                 "take it and begin its next request within this many "
                 "seconds, or the connection is closed; blank lines do not "
                 "begin one."), dest="idle_timeout", metavar="SECONDS"),
        _option("api", cfg.Opt(
            "connection_limit", type=Count(1), default=4096,
            help="Open connections at most; beyond that new ones wait in "
                 "the listen backlog; lowered to what the open-file limit "
                 "allows."), dest="connection_limit", metavar="N"),
        _option("api", cfg.Opt(
            "max_prefer_wait", type=Seconds(zero_ok=True), default=10.0,
            help="Longest a POST /v1/allocations sent with 'Prefer: "
                 "wait=N' may wait for the allocation to settle; 0 ignores "
                 "the preference."), dest="max_prefer_wait"),
        _option("api", cfg.StrOpt(
            "tls_cert_file", help="PEM certificate (chain) to serve HTTPS."),
            dest="tls_cert", metavar="FILE"),
        _option("api", cfg.StrOpt(
            "tls_key_file", help="PEM private key of tls_cert_file."),
            dest="tls_key", metavar="FILE"),
        _option("api", cfg.StrOpt(
            "healthcheck_disable_file",
            help="While this file exists, GET /healthcheck answers 503 "
                 "DISABLED BY FILE (drain the process behind a load "
                 "balancer first)."),
            dest="healthcheck_disable_file", metavar="FILE"),
    ]


def _database_group() -> list[Option]:
    return [
        _option("database", cfg.StrOpt(
            "connection", secret=True,
            sample_default="sqlite:///$XDG_STATE_HOME/baremetal-allocclient"
                           "/server.sqlite",
            help="SQLAlchemy database URL. A URL with a password is "
                 "refused on the command line; put the password in "
                 "password_file."),
            dest="db", flag="--db", commands=ALL, metavar="URL"),
        _option("database", cfg.StrOpt(
            "password_file",
            help="File holding the database password (one line), added to "
                 "the connection URL."),
            dest="db_password_file", commands=ALL, metavar="FILE"),
        _option("database", cfg.Opt(
            "max_connections", type=Count(1),
            sample_default="16 on PostgreSQL and MariaDB, 64 on SQLite",
            help="At most this many database connections; keep the sum "
                 "over all processes below the database's connection "
                 "limit."), dest="db_connections"),
        _option("database", cfg.BoolOpt(
            "upgrade", default=False,
            help="Upgrade an out-of-date schema instead of refusing to "
                 "start."), dest="upgrade"),
    ]


def _conductor_group() -> list[Option]:
    return [
        _option("conductor", cfg.StrOpt(
            "name", default=socket.gethostname(), sample_default="<host name>",
            help="This process's name for allocation affinity; a restart "
                 "with the same name resumes its allocations."),
            dest="conductor_name", metavar="NAME"),
        _option("conductor", cfg.Opt(
            "workers", type=Count(1), default=8,
            help="Allocation worker threads."), dest="workers"),
        _option("conductor", cfg.Opt(
            "pending", type=Count(0), default=1000,
            help="Allocations that may wait for a free worker; beyond that "
                 "POST /v1/allocations answers 503 and stores nothing."),
            dest="pending"),
        _option("conductor", cfg.Opt(
            "heartbeat_interval", type=Seconds(), default=10.0,
            help="Seconds between this conductor's heartbeats."),
            dest="heartbeat_interval"),
        _option("conductor", cfg.Opt(
            "heartbeat_timeout", type=Seconds(), default=60.0,
            help="A conductor silent for longer is dead and its allocating "
                 "allocations are taken over; must be longer than "
                 "heartbeat_interval."), dest="heartbeat_timeout"),
        _option("conductor", cfg.Opt(
            "takeover_interval", type=Seconds(zero_ok=True), default=60.0,
            help="Seconds between take-over rounds; 0 disables take-over."),
            dest="takeover_interval"),
        _option("conductor", cfg.Opt(
            "expire_leases", type=Seconds(zero_ok=True), default=0.0,
            help="Release allocations whose lease ended (their lease "
                 "field, never extra) and whose "
                 "node is not deployed, checking every this many seconds; "
                 "0 disables it (the flag alone means 30). Safe with "
                 "several processes; deployed nodes are logged and left "
                 "(see expire_leases_undeploy)."),
            dest="expire_leases", nargs="?", const=30.0, metavar="INTERVAL"),
        _option("conductor", cfg.BoolOpt(
            "expire_leases_undeploy", default=False,
            help="With expire_leases: tear down the deployed nodes of "
                 "expired leases (their allocations go when that ends)."),
            dest="expire_leases_undeploy"),
        _option("conductor", cfg.Opt(
            "queue_interval", type=Seconds(), default=1.0,
            help="Seconds between rounds over the allocations waiting in "
                 "line for capacity (the queue extension); a release in "
                 "this process starts a round at once."),
            dest="queue_interval"),
        _option("conductor", cfg.Opt(
            "max_queue_wait", type=Seconds(), default=3600.0,
            help="Longest time an allocation may wait in line; also the "
                 "wait of a create that names no timeout."),
            dest="max_queue_wait"),
        _option("conductor", cfg.StrOpt(
            "default_order", default="first_fit",
            choices=_ORDER_CHOICES,
            help="Order in which matching nodes are tried when a request "
                 "names none (the constraints extension's order)."),
            dest="default_order"),
        _option("conductor", cfg.Opt(
            "allocation_delay", type=Seconds(zero_ok=True), default=0.0,
            help="Testing aid: seconds each allocation waits before a "
                 "worker processes it."), dest="allocation_delay"),
        _option("conductor", cfg.Opt(
            "step_delay", type=Seconds(zero_ok=True), default=0.05,
            help="Seconds each fake-hardware state lasts."),
            dest="step_delay"),
    ]


def _watch_group() -> list[Option]:
    return [
        _option("watch", cfg.Opt(
            "max_watchers", type=Count(0), default=2000,
            help="Watchers of the change stream (the watch extension) "
                 "this process holds at most; beyond that a watch answers "
                 "503 and the client polls. 0: the stream is not offered."),
            dest="watch_max_watchers"),
        _option("watch", cfg.Opt(
            "heartbeat", type=Seconds(), default=15.0,
            help="A watcher sent nothing for this many seconds is sent a "
                 "heartbeat line (a dead peer is noticed)."),
            dest="watch_heartbeat"),
        _option("watch", cfg.Opt(
            "buffer_limit", type=Count(4096, 1 << 30), default=1_048_576,
            help="Bytes a watcher may leave unread; past that it is "
                 "dropped (it resumes from its cursor)."),
            dest="watch_buffer_limit"),
        _option("watch", cfg.Opt(
            "retention", type=Seconds(), default=3600.0,
            help="Seconds the change log keeps a change; a watch from an "
                 "older cursor answers 410 (list again)."),
            dest="watch_retention"),
        _option("watch", cfg.Opt(
            "poll_interval", type=Seconds(), default=0.05,
            help="Seconds between reads of the change log while this "
                 "process holds watchers (changes committed by any "
                 "process reach its watchers within about this)."),
            dest="watch_poll_interval"),
    ]


def _placement_group() -> list[Option]:
    return [
        _option("placement", cfg.StrOpt(
            "url", help="Placement endpoint, e.g. http://127.0.0.1:8778 "
                        "(optional with cloud, whose catalog can provide "
                        "it)."), metavar="URL"),
        _option("placement", cfg.StrOpt(
            "token", secret=True,
            help="A fixed X-Auth-Token for Placement (default 'admin', what "
                 "Placement's noauth2 strategy accepts for an admin); "
                 "ignored with cloud. Not accepted on the command line: "
                 "set it here, in OS_PLACEMENT__TOKEN or in token_file."),
            refused_on_cli=True, metavar="TOKEN"),
        _option("placement", cfg.StrOpt(
            "token_file",
            help="File holding the Placement token (one line); used when "
                 "token is not set."), metavar="FILE"),
        _option("placement", cfg.StrOpt(
            "cloud", help="A clouds.yaml cloud whose keystoneauth "
                          "credentials are used for Placement (real "
                          "Keystone authentication)."), metavar="CLOUD"),
        _option("placement", cfg.StrOpt(
            "project", default=DEFAULT_PLACEMENT_PROJECT,
            help="project_id of claims for allocations without an owner.")),
        _option("placement", cfg.StrOpt(
            "user", default=DEFAULT_PLACEMENT_USER,
            help="user_id of claims.")),
        _option("placement", cfg.Opt(
            "sync_interval", type=Seconds(), default=1.0,
            help="Seconds between pushes of node changes.")),
        _option("placement", cfg.Opt(
            "reconcile_interval", type=Seconds(), default=60.0,
            help="Seconds between full reconciliations.")),
        _option("placement", cfg.Opt(
            "wait", type=Seconds(), default=30.0,
            help="How long an allocation waits for an unreachable "
                 "Placement before failing.")),
    ]


def _ironic_group() -> list[Option]:
    return [
        _option("ironic", cfg.StrOpt(
            "url", help="The Ironic API this server fronts (--backend "
                        "ironic), e.g. http://127.0.0.1:6385."),
            metavar="URL"),
        _option("ironic", cfg.StrOpt(
            "auth_type", default="noauth", choices=_IRONIC_AUTH_CHOICES,
            help="How the server authenticates to Ironic for the mirror "
                 "and its claims; ignored with cloud. Requests passed "
                 "through carry the caller's own credentials.")),
        _option("ironic", cfg.StrOpt(
            "username", help="(http_basic) The user the server claims "
                             "nodes as."), metavar="USER"),
        _option("ironic", cfg.StrOpt(
            "password", secret=True,
            help="(http_basic) Its password. Not accepted on the command "
                 "line: set it here or in OS_IRONIC__PASSWORD."),
            refused_on_cli=True, metavar="PASSWORD"),
        _option("ironic", cfg.StrOpt(
            "cloud", help="A clouds.yaml cloud whose keystoneauth "
                          "credentials the server uses for Ironic (real "
                          "Keystone authentication)."), metavar="CLOUD"),
        _option("ironic", cfg.Opt(
            "sync_interval", type=Seconds(), default=10.0,
            help="Seconds between full reads of Ironic's nodes: how stale "
                 "the mirror may be for changes made directly in Ironic "
                 "(changes made through this server are read back at "
                 "once).")),
        _option("ironic", cfg.Opt(
            "wait", type=Seconds(), default=30.0,
            help="How long an allocation waits for an unreachable Ironic "
                 "(or for Ironic to settle a claim) before failing.")),
    ]


#: Every option, in the order of ``--help`` and the sample config.
OPTIONS: tuple[Option, ...] = (
    *_default_group(), *_api_group(), *_database_group(),
    *_conductor_group(), *_watch_group(), *_placement_group(),
    *_ironic_group(),
)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """The options by group (the ``oslo.config.opts`` entry point)."""
    groups: dict[str, list[cfg.Opt]] = {}
    for option in OPTIONS:
        groups.setdefault(option.group, []).append(option.opt)
    return list(groups.items())
