"""OpenStackClient plugin hooks for ``openstack baremetal allocation``.

python-openstackclient imports every installed plugin module on each
``openstack`` invocation, so this module imports nothing beyond the standard
library at import time: the SDK, keystoneauth and the command modules are
imported only when an allocation command actually runs.

The commands themselves are registered once each, in the
``openstack.extension`` entry-point group (see ``setup.cfg``), which
OpenStackClient loads after the per-API groups such as python-ironicclient's
``openstack.baremetal.v1``. cliff keeps the last registration of a command
name, so our ``baremetal allocation ...`` commands replace
python-ironicclient's whatever the installation order (unless
:mod:`baremetal_allocclient.osc.commands` is told to keep ironicclient's).
cliff logs a warning for every such replacement; the filter installed below
drops exactly those warnings (ours replacing another implementation of one
of our own command names) and nothing else.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baremetal_allocclient.v1 import Client

API_NAME = "baremetal_allocation"
# The version option is shared with python-ironicclient: both read the
# ``--os-baremetal-api-version`` option, ``OS_BAREMETAL_API_VERSION`` and the
# ``baremetal_api_version`` key of clouds.yaml.
API_VERSION_OPTION = "os_baremetal_api_version"
DEFAULT_API_VERSION = "latest"
# A tuple tells OpenStackClient not to check versions against a table: the
# server negotiates, and check_api_version() validates the syntax.
API_VERSIONS: tuple[str, ...] = ("1",)

#: Command names this plugin serves (as cliff spells them, with spaces).
COMMAND_NAMES = frozenset(
    "baremetal allocation " + verb
    for verb in ("create", "list", "get", "show", "delete", "set", "unset",
                 "capacity", "renew", "expire")
)
_OUR_MODULE_PREFIX = "baremetal_allocclient.osc."
_IRONICCLIENT_PLUGIN = "ironicclient.osc.plugin"

LOG = logging.getLogger(__name__)


def check_api_version(check_version: str) -> bool:
    """Accept "latest", "1" or "1.N"; tell OSC to skip its own table check."""
    from baremetal_allocclient.osc import versioning

    versioning.parse_api_version(check_version)
    return True


def make_client(instance: Any) -> Client:
    """Build the SDK client from OpenStackClient's authenticated session.

    Called lazily by OSC's ClientManager the first time a command uses
    ``client_manager.baremetal_allocation``.
    """
    from baremetal_allocclient.osc import versioning
    from baremetal_allocclient.v1 import Client

    requested = instance._api_version.get(API_NAME, DEFAULT_API_VERSION)
    if _ironicclient_means_latest():
        requested = DEFAULT_API_VERSION
    return Client.from_client_manager(
        instance, api_version=versioning.parse_api_version(requested)
    )


def _ironicclient_means_latest() -> bool:
    """Whether python-ironicclient's version option stands for "latest".

    When python-ironicclient is installed it owns the version option and
    rewrites "latest" (its default) into its own newest known version,
    remembering the fact in a module flag. Pinning that number would fail
    against servers older than python-ironicclient, so honour the flag.
    """
    module = sys.modules.get(_IRONICCLIENT_PLUGIN)
    return bool(getattr(module, "OS_BAREMETAL_API_LATEST", False))


def build_option_parser(
    parser: argparse.ArgumentParser,
) -> argparse.ArgumentParser:
    """Add ``--os-baremetal-api-version`` unless another plugin adds it.

    python-ironicclient registers the same option; registering it twice
    would make argparse refuse to start, whichever plugin comes first.
    """
    if not _other_plugin_adds_version_option(parser):
        parser.add_argument(
            "--os-baremetal-api-version",
            metavar="<baremetal-api-version>",
            default=os.environ.get(
                "OS_BAREMETAL_API_VERSION", DEFAULT_API_VERSION
            ),
            help=(
                "Bare Metal API microversion to request, 1.N or 'latest' "
                "(default: the newest both sides support). "
                "(Env: OS_BAREMETAL_API_VERSION)"
            ),
        )
    return parser


def _other_plugin_adds_version_option(parser: argparse.ArgumentParser) -> bool:
    if "--os-baremetal-api-version" in parser._option_string_actions:
        return True
    clientmanager = sys.modules.get("openstackclient.common.clientmanager")
    modules = getattr(clientmanager, "PLUGIN_MODULES", ())
    return any(
        getattr(mod, "API_VERSION_OPTION", None) == API_VERSION_OPTION
        and getattr(mod, "__name__", None) != __name__
        for mod in modules
    )


class _OverrideWarningFilter(logging.Filter):
    """Drop cliff's duplicate-command warning for our command names.

    Our commands are in ``openstack.extension``, which loads last, so they
    replace python-ironicclient's of the same names (and OpenStackClient's
    ``command list``, see :mod:`baremetal_allocclient.osc.command_list`)
    on purpose.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if not isinstance(args, dict) or "name" not in args:
            return True
        modules = str(args.get("modules", ""))
        return not (
            args["name"] in COMMAND_NAMES | {"command list"}
            and _OUR_MODULE_PREFIX in modules
        )


def _install_override_warning_filter() -> None:
    logger = logging.getLogger("cliff.commandmanager")
    if not any(isinstance(f, _OverrideWarningFilter) for f in logger.filters):
        logger.addFilter(_OverrideWarningFilter())


_install_override_warning_filter()
