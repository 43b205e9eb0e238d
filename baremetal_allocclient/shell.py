"""``baremetal-alloc``: the standalone allocation command, built to start fast.

It runs the same cliff command classes as ``openstack baremetal allocation``
but skips what makes ``openstack`` slow: there is no scan of installed
plugins (the command table below is fixed and each command module is
imported only when its command runs), and openstacksdk's config loader is
imported only when a cloud from clouds.yaml is used (``--os-cloud`` or
``OS_CLOUD``). With ``--os-endpoint`` and no authentication (or HTTP basic
authentication) a command costs one HTTP request.

Exit codes: 0 success, 1 failure, 2 usage error.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cliff import app as cliff_app
from cliff import command as cliff_command
from cliff import commandmanager

from baremetal_allocclient.osc.v1 import parsing

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import Client
    from baremetal_allocclient.v1.clouds import ResolvedCloud

_ALLOCATION = "baremetal_allocclient.osc.v1.allocation"
#: The fixed command table: command name -> "module:class".
COMMANDS: Mapping[str, str] = {
    "create": f"{_ALLOCATION}:CreateAllocation",
    "list": f"{_ALLOCATION}:ListAllocations",
    "get": f"{_ALLOCATION}:ShowAllocation",
    "show": f"{_ALLOCATION}:ShowAllocation",
    "delete": f"{_ALLOCATION}:DeleteAllocation",
    "set": f"{_ALLOCATION}:SetAllocation",
    "unset": f"{_ALLOCATION}:UnsetAllocation",
    "capacity": "baremetal_allocclient.osc.v1.capacity:AllocationCapacity",
    "explain": "baremetal_allocclient.osc.v1.explain:ExplainAllocation",
    "renew": "baremetal_allocclient.osc.v1.leases:RenewLease",
    "expire": "baremetal_allocclient.osc.v1.leases:ExpireLeases",
    "watch": "baremetal_allocclient.osc.v1.watch:WatchAllocations",
}

#: cliff's output formatters, as cliff's entry points register them (and
#: in their order, which is the order of their options in ``--help``).
#: ``baremetal-alloc`` offers these without looking formatters up among
#: every installed package's entry points.
FORMATTERS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "cliff.formatter.list": (
        ("csv", "cliff.formatters.commaseparated:CSVLister"),
        ("json", "cliff.formatters.json_format:JSONFormatter"),
        ("table", "cliff.formatters.table:TableFormatter"),
        ("value", "cliff.formatters.value:ValueFormatter"),
        ("yaml", "cliff.formatters.yaml_format:YAMLFormatter"),
    ),
    "cliff.formatter.show": (
        ("json", "cliff.formatters.json_format:JSONFormatter"),
        ("shell", "cliff.formatters.shell:ShellFormatter"),
        ("table", "cliff.formatters.table:TableFormatter"),
        ("value", "cliff.formatters.value:ValueFormatter"),
        ("yaml", "cliff.formatters.yaml_format:YAMLFormatter"),
    ),
}

#: Auth types handled without keystone.
NO_AUTH = "none"
HTTP_BASIC = "http_basic"


class UsageError(Exception):
    """The connection options cannot work as given."""


class _LazyCommand:
    """Stands in for an entry point: imports its class on first use."""

    def __init__(self, name: str, target: str) -> None:
        self.name = name
        self.value = target

    def load(self) -> type[cliff_command.Command]:
        module_name, _, class_name = self.value.partition(":")
        cls: type[cliff_command.Command] = getattr(
            importlib.import_module(module_name), class_name
        )
        return cls


class FixedCommandManager(commandmanager.CommandManager):
    """A command manager over :data:`COMMANDS`; it never scans plugins."""

    def __init__(self, table: Mapping[str, str] = COMMANDS) -> None:
        super().__init__(namespace=None)
        for name, target in table.items():
            self.commands[name] = _LazyCommand(name, target)  # type: ignore[assignment]


def formatter_manager(namespace: str) -> Any:
    """A stevedore manager of the :data:`FORMATTERS` of ``namespace``, each
    loaded and instantiated, as cliff's own lookup would give them."""
    from importlib.metadata import EntryPoint

    from stevedore import extension

    if namespace not in FORMATTERS:
        return extension.ExtensionManager(namespace, invoke_on_load=True)
    found = []
    for name, target in FORMATTERS[namespace]:
        entry_point = EntryPoint(name, target, namespace)
        plugin = entry_point.load()
        found.append(extension.Extension(name, entry_point, plugin, plugin()))
    return extension.ExtensionManager.make_test_instance(
        found, namespace=namespace)


def _env(*names: str, default: str | None = None) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return default


def _given_auth(argv: Sequence[str]) -> argparse.Namespace:
    """``--os-auth-type``, ``--os-auth-url`` and ``--os-cloud`` as given on
    the command line or in the environment (pure but for the environment).
    """
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--os-auth-type", "--os-auth-plugin", dest="auth_type",
                     default=_env("OS_AUTH_TYPE", "OS_AUTH_PLUGIN"))
    pre.add_argument("--os-auth-url", dest="auth_url",
                     default=_env("OS_AUTH_URL"))
    pre.add_argument("--os-cloud", dest="cloud", default=_env("OS_CLOUD"))
    given, _rest = pre.parse_known_args(list(argv))
    return given


#: What this command line reads itself, besides the auth plugin's
#: options: flags, and OS_* variables (with openstacksdk's own).
_OWN_FLAGS = frozenset((
    "--os-cloud", "--os-endpoint", "--os-region-name", "--os-interface",
    "--os-baremetal-api-version", "--os-cacert", "--os-cert", "--os-key",
))
_OWN_VARIABLES = frozenset((
    "OS_CLOUD", "OS_ENDPOINT", "OS_BAREMETAL_ENDPOINT", "OS_REGION_NAME",
    "OS_INTERFACE", "OS_BAREMETAL_API_VERSION", "OS_CACERT", "OS_CERT",
    "OS_KEY", "OS_CLIENT_CONFIG_FILE", "OS_CLIENT_SECURE_FILE",
))


def _may_override_a_cloud(argv: Sequence[str]) -> bool:
    """Whether ``argv`` or the environment may hold an auth plugin's
    option (a flag or ``OS_*`` variable this command line does not read
    itself), or asks for help (pure but for the environment)."""
    for arg in argv:
        flag = arg.split("=", 1)[0]
        if flag in ("-h", "--help") or (
                flag.startswith("--os-") and flag not in _OWN_FLAGS):
            return True
    return any(name.startswith("OS_") and name not in _OWN_VARIABLES
               for name in os.environ)


def add_connection_options(
    parser: argparse.ArgumentParser, argv: Sequence[str] = ()
) -> None:
    """The OpenStackClient-compatible options that say where and as whom.

    The authentication options are those of the keystoneauth plugin that
    ``--os-auth-type`` (or ``OS_AUTH_TYPE``) names in ``argv``, registered
    by keystoneauth itself: ``--os-auth-type X --help`` lists X's options.
    Without a type, a keystone URL or a cloud means "password" and a bare
    endpoint no authentication, like OpenStackClient.
    """
    given = _given_auth(argv)
    implied = given.auth_type or (
        "password" if given.auth_url or given.cloud else NO_AUTH)
    if (implied == "password" and not given.auth_type
            and not given.auth_url and not _may_override_a_cloud(argv)):
        # A cloud alone: clouds.yaml says how to authenticate, and
        # nothing on the command line or in OS_* could override it, so
        # keystoneauth's loader (the password plugin's options) is not
        # imported for nothing.
        implied = NO_AUTH
    parser.set_defaults(auth_type_given=given.auth_type)
    group = parser.add_argument_group("connection and authentication")
    group.add_argument(
        "--os-cloud",
        dest="cloud",
        metavar="<cloud>",
        default=_env("OS_CLOUD"),
        help="Cloud from clouds.yaml to use (Env: OS_CLOUD).",
    )
    _add_auth_plugin_options(parser, implied)
    if "--os-endpoint" not in parser._option_string_actions:
        group.add_argument(
            "--os-endpoint",
            dest="os_endpoint",
            metavar="<url>",
            default=_env("OS_ENDPOINT", "OS_BAREMETAL_ENDPOINT"),
            help="Bare Metal API endpoint, e.g. http://127.0.0.1:6385; "
            "overrides the service catalog (Env: OS_ENDPOINT).",
        )
    group.add_argument(
        "--os-region-name",
        dest="region_name",
        metavar="<region>",
        default=_env("OS_REGION_NAME"),
        help="Region of the service catalog (Env: OS_REGION_NAME).",
    )
    group.add_argument(
        "--os-interface",
        dest="interface",
        metavar="<interface>",
        choices=("public", "internal", "admin"),
        default=_env("OS_INTERFACE"),
        help="Catalog interface: public, internal or admin "
        "(Env: OS_INTERFACE).",
    )
    group.add_argument(
        "--os-baremetal-api-version",
        dest="os_baremetal_api_version",
        metavar="<version>",
        default=_env("OS_BAREMETAL_API_VERSION", default="latest"),
        help="Bare Metal API microversion, 1.N or 'latest' (default: the "
        "newest both sides support) (Env: OS_BAREMETAL_API_VERSION).",
    )
    group.add_argument(
        "--os-cacert",
        dest="cacert",
        metavar="<ca-bundle-file>",
        default=_env("OS_CACERT"),
        help="CA certificate bundle file (Env: OS_CACERT).",
    )
    group.add_argument(
        "--os-cert",
        dest="cert",
        metavar="<certificate-file>",
        default=_env("OS_CERT"),
        help="Client certificate file (Env: OS_CERT).",
    )
    group.add_argument(
        "--os-key",
        dest="key",
        metavar="<key-file>",
        default=_env("OS_KEY"),
        help="Client certificate key file (Env: OS_KEY).",
    )
    verify = group.add_mutually_exclusive_group()
    verify.add_argument(
        "--verify",
        dest="insecure",
        action="store_false",
        default=None,
        help="Verify the server's TLS certificate (default).",
    )
    verify.add_argument(
        "--insecure",
        dest="insecure",
        action="store_true",
        help="Do not verify the server's TLS certificate.",
    )
    group.add_argument(
        "--timeout",
        type=parsing.positive_seconds,
        metavar="<seconds>",
        default=None,
        help="Timeout of each HTTP request in seconds.",
    )


def _add_auth_plugin_options(
    parser: argparse.ArgumentParser, auth_type: str
) -> None:
    """keystoneauth's own registration of ``auth_type``'s options."""
    help_text = (
        "Authentication: none, http_basic, or any keystoneauth plugin "
        "such as password, token, v3applicationcredential, v3totp, "
        "v3oidcpassword (default: password with --os-auth-url or "
        "--os-cloud, else none) (Env: OS_AUTH_TYPE).")
    dests: list[str] = []
    if auth_type != NO_AUTH:
        from keystoneauth1 import exceptions as ks_exceptions
        from keystoneauth1 import loading

        try:
            loader: Any = loading.register_auth_argparse_arguments(
                parser, ["--os-auth-type", auth_type], default=auth_type)
        except ks_exceptions.NoMatchingPlugin:
            # Parse as "password" would, to report the type, not an option.
            parser.set_defaults(auth_type_unknown=True)
            for opt in loading.get_plugin_loader("password").get_options():
                parser.add_argument(
                    *opt.argparse_args, default=opt.argparse_default,
                    metavar=opt.metavar, help=opt.help, dest="os_" + opt.dest)
        else:
            parser._option_string_actions["--os-auth-type"].help = help_text
            dests = [opt.dest for opt in loader.get_options()]
            _hyphenate(parser)
    parser.set_defaults(auth_option_dests=dests)
    if "--os-auth-type" not in parser._option_string_actions:
        parser.add_argument(
            "--os-auth-type", "--os-auth-plugin",
            dest="os_auth_type",
            metavar="<name>",
            default=auth_type,
            help=help_text,
        )


def _hyphenate(parser: argparse.ArgumentParser) -> None:
    """Add ``--os-a-b`` for keystoneauth's ``--os-a_b`` spellings (some
    plugins name options with underscores; OpenStackClient hyphenates)."""
    for flag, action in list(parser._option_string_actions.items()):
        alias = flag.replace("_", "-")
        if alias != flag and alias not in parser._option_string_actions:
            action.option_strings = [alias, *action.option_strings]
            parser._option_string_actions[alias] = action


def verify_setting(options: argparse.Namespace) -> bool | str:
    """requests' ``verify``: False, a CA bundle path or True (pure)."""
    if options.insecure:
        return False
    if options.cacert:
        return str(options.cacert)
    return True


def effective_auth_type(options: argparse.Namespace) -> str:
    """The auth type in use without a cloud (pure).

    An explicit choice wins; otherwise a keystone URL means "password" and
    a bare endpoint means no authentication, like OpenStackClient with
    ``--os-endpoint``.
    """
    return str(getattr(options, "os_auth_type", None) or NO_AUTH)


def connection_problem(options: argparse.Namespace) -> str | None:
    """Why no client can be built from these options (pure), or None."""
    auth_type = effective_auth_type(options)
    if getattr(options, "auth_type_unknown", False):
        return f"unknown auth type {auth_type!r}"
    if options.cloud:
        return None
    if auth_type in (NO_AUTH, HTTP_BASIC) and not options.os_endpoint:
        return (
            "no endpoint: give --os-endpoint (or OS_ENDPOINT), or "
            "--os-cloud (or OS_CLOUD)"
        )
    auth = auth_settings(options)
    if auth_type == HTTP_BASIC and not (
            auth.get("username") and auth.get("password")):
        return "http_basic needs --os-username and --os-password"
    if "auth_url" in options.auth_option_dests and not auth.get("auth_url"):
        return f"auth type {auth_type} needs --os-auth-url (or OS_AUTH_URL)"
    return None


def auth_settings(options: argparse.Namespace) -> dict[str, str]:
    """The auth options given on the command line or in OS_* (pure)."""
    return {
        dest: getattr(options, "os_" + dest)
        for dest in getattr(options, "auth_option_dests", ())
        if getattr(options, "os_" + dest, None)
    }


def cloud_overrides(options: argparse.Namespace) -> dict[str, Any]:
    """openstacksdk config overrides for ``Client.from_cloud`` (pure).

    Only what the user gave explicitly overrides clouds.yaml.
    """
    overrides: dict[str, Any] = {}
    if options.auth_type_given:
        overrides["auth_type"] = options.auth_type_given
    auth = auth_settings(options)
    if options.os_endpoint:
        overrides["baremetal_endpoint_override"] = options.os_endpoint
        if (options.auth_type_given or "") in (NO_AUTH, HTTP_BASIC):
            auth.setdefault("endpoint", options.os_endpoint)
    if auth:
        overrides["auth"] = auth
    for name in ("region_name", "interface", "cacert", "cert", "key"):
        value = getattr(options, name)
        if value:
            overrides[name] = value
    if options.insecure is not None:
        overrides["verify"] = not options.insecure
    return overrides


class ClientManager:
    """Builds the SDK client on first use, like OSC's ClientManager."""

    def __init__(self, options: argparse.Namespace) -> None:
        self._options = options
        self._client: Client | None = None

    @property
    def baremetal_allocation(self) -> Client:
        if self._client is None:
            self._client = build_client(self._options)
            _start_up_over()
        return self._client


def build_client(options: argparse.Namespace) -> Client:
    """Create the SDK client for the connection options (lazy imports)."""
    from baremetal_allocclient.osc import versioning
    from baremetal_allocclient.v1 import Client

    api_version = versioning.parse_api_version(
        options.os_baremetal_api_version
    )
    if options.cloud:
        return Client.from_resolved_cloud(
            resolve_cloud(options.cloud, cloud_overrides(options)),
            api_version=api_version)
    problem = connection_problem(options)
    if problem:
        raise UsageError(problem)
    auth_type = effective_auth_type(options)
    verify = verify_setting(options)
    if auth_type == NO_AUTH:
        return Client.from_endpoint(
            options.os_endpoint,
            api_version=api_version,
            verify=verify,
            timeout=options.timeout,
        )
    session = _keystone_session(options, auth_type, verify)
    return Client.from_session(
        session,
        endpoint_override=options.os_endpoint,
        interface=options.interface,
        region_name=options.region_name,
        api_version=api_version,
    )


def resolve_cloud(cloud: str, overrides: dict[str, Any]) -> ResolvedCloud:
    """``cloud`` of clouds.yaml with ``overrides``: from the cache of
    resolved clouds when it holds, else through openstacksdk's loader
    (then cached)."""
    from baremetal_allocclient.v1 import cloud_cache, clouds

    cached = cloud_cache.enabled()
    resolved = cloud_cache.load(cloud, overrides) if cached else None
    if resolved is None:
        resolved = clouds.ResolvedCloud.from_region(
            clouds.resolve(cloud, **overrides))
        if cached:
            cloud_cache.store(cloud, overrides, resolved)
    return resolved


def _keystone_session(
    options: argparse.Namespace, auth_type: str, verify: bool | str
) -> Any:
    from keystoneauth1 import exceptions as ks_exceptions
    from keystoneauth1 import loading
    from keystoneauth1 import session as ks_session

    try:
        plugin: Any = loading.load_auth_from_argparse_arguments(options)
    except ks_exceptions.MissingRequiredOptions as exc:
        missing = ", ".join(
            "--os-" + opt.dest.replace("_", "-") for opt in exc.options)
        raise UsageError(f"auth type {auth_type} needs {missing}") from None
    cert: Any = options.cert
    if options.cert and options.key:
        cert = (options.cert, options.key)
    return ks_session.Session(
        auth=plugin, verify=verify, cert=cert, timeout=options.timeout
    )


class AllocationApp(cliff_app.App):
    """The ``baremetal-alloc`` application."""

    NAME = "baremetal-alloc"
    LOG = logging.getLogger(NAME)

    def __init__(self, argv: Sequence[str] = ()) -> None:
        # The auth plugin's options depend on --os-auth-type in argv.
        self._argv = list(argv)
        super().__init__(
            description="Reserve bare metal nodes with the Ironic "
            "Allocation API.",
            version=None,  # looked up only for --version
            command_manager=FixedCommandManager(),
            deferred_help=True,
        )
        # cliff's "complete", which also completes allocation names and
        # states (osc/v1/completion.py).
        self.command_manager.commands["complete"] = _LazyCommand(  # type: ignore[assignment]
            "complete", "baremetal_allocclient.osc.v1.completion:"
            "CompleteCommand")

    def build_option_parser(
        self,
        description: str | None,
        version: str | None,
        argparse_kwargs: dict[str, Any] | None = None,
    ) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = super().build_option_parser(
            description, version, argparse_kwargs
        )
        add_connection_options(parser, self._argv)
        version_action = parser._option_string_actions["--version"]
        version_action.__class__ = _VersionAction
        return parser

    def formatters(self, namespace: str) -> Any:
        """The output formatters of a command (see
        :class:`baremetal_allocclient.osc.v1.base.AllocationCommand`)."""
        return formatter_manager(namespace)

    def configure_logging(self) -> None:
        """Warnings and errors only, unless -v/--debug ask for more."""
        root = logging.getLogger("")
        root.setLevel(logging.DEBUG)
        if self.options.log_file:
            handler = logging.FileHandler(self.options.log_file)
            handler.setFormatter(logging.Formatter(self.LOG_FILE_MESSAGE_FORMAT))
            root.addHandler(handler)
        console = logging.StreamHandler(self.stderr)
        if self.options.debug:
            level = logging.DEBUG
        else:
            levels = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO}
            level = levels.get(self.options.verbose_level, logging.DEBUG)
        console.setLevel(level)
        if level > logging.INFO:
            # keystoneauth warns about version discovery before the
            # one-line error that says what went wrong.
            logging.getLogger("keystoneauth").setLevel(logging.ERROR)
        console.setFormatter(logging.Formatter(self.CONSOLE_MESSAGE_FORMAT))
        root.addHandler(console)

    def initialize_app(self, argv: list[str]) -> None:
        self.client_manager = ClientManager(self.options)

    def interact(self) -> None:
        """No interactive shell: without a command, show usage (exit 2)."""
        self.parser.print_usage(self.stderr)
        self.stderr.write(
            f"{self.NAME}: a command is required: "
            + ", ".join(sorted(COMMANDS))
            + f" (see {self.NAME} --help)\n"
        )
        raise SystemExit(2)

    def run_subcommand(self, argv: list[str]) -> int:
        """Refuse, as a usage error, to run a command with nowhere to go."""
        wants_help = any(arg in ("-h", "--help") for arg in argv)
        if argv and argv[0] in COMMANDS and not wants_help:
            problem = connection_problem(self.options)
            if problem:
                self.stderr.write(f"{self.NAME}: error: {problem}\n")
                return 2
        result: int = super().run_subcommand(argv)
        return result


class _VersionAction(argparse._VersionAction):
    """``--version`` as cliff words it, the installed version looked up
    only when asked: reading package metadata on every run would cost
    each command a share of its start-up."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        self.version = f"{cliff_app.App.NAME} {_version()}"
        super().__call__(parser, namespace, values, option_string)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("baremetal-allocclient")
    except Exception:  # a version string is best effort
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    args = list(sys.argv[1:] if argv is None else argv)
    # Start-up (parsing, the command's and the SDK's imports) allocates
    # much and frees little: the collector would scan it all in vain,
    # several times. It runs again once the client exists.
    gc.disable()
    app = AllocationApp(args)
    try:
        return app.run(args)
    finally:
        _quick_exit()


def _start_up_over() -> None:
    """Collect garbage again, leaving out what start-up made (it lives
    until exit): a command that waits for hours is collected as usual."""
    gc.freeze()
    gc.enable()


def _quick_exit() -> None:
    """Make interpreter shutdown cheap: a command is over, and freeing
    every object one by one at exit took 0.3-0.4 s on a loaded machine,
    time a ``--wait N`` budget promises not to spend."""
    gc.freeze()
    gc.disable()


if __name__ == "__main__":
    sys.exit(main())
