"""A cloud of clouds.yaml, resolved into what a client is built from.

openstacksdk's config loader (:func:`resolve`) reads clouds.yaml,
secure.yaml, the vendor profiles, the ``OS_*`` variables and the
caller's overrides into a ``CloudRegion``; :class:`ResolvedCloud` keeps
of it only what the bare metal client needs (the auth plugin's name and
options, TLS, the timeout and the endpoint settings) and builds the
keystoneauth1 session from that, so a command line can cache it
(:mod:`.cloud_cache`) and skip the loader, whose import alone costs
about 0.3 s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from baremetal_allocclient import exceptions

if TYPE_CHECKING:
    from keystoneauth1 import session as ks_session

SERVICE_TYPE = "baremetal"


@dataclass(frozen=True)
class ResolvedCloud:
    """What a client of one cloud is built from."""

    auth_type: str
    #: The auth plugin's options, as keystoneauth1's loader takes them.
    auth: dict[str, Any]
    verify: bool | str = True
    cert: str | tuple[str, str] | None = None
    timeout: float | None = None
    endpoint: str | None = None
    interface: str | None = None
    region_name: str | None = None
    #: ``baremetal_api_version`` when it names a minor version.
    api_version: str | None = None

    @classmethod
    def from_region(cls, region: Any) -> ResolvedCloud:
        """From openstacksdk's ``CloudRegion``."""
        auth_type = str(region.config.get("auth_type") or "password")
        verify, cert = region.get_requests_verify_args()
        interface = region.get_interface(SERVICE_TYPE)
        if isinstance(interface, list):  # openstacksdk may give several
            interface = interface[0] if interface else None
        version = region.get_api_version(SERVICE_TYPE)
        timeout = region.config.get("api_timeout")
        auth = dict(region.get_auth_args())
        return cls(
            auth_type=auth_type, auth=auth,
            verify=True if verify is None else verify,
            cert=tuple(cert) if isinstance(cert, list | tuple) else cert,
            timeout=float(timeout) if timeout else None,
            endpoint=region.get_endpoint(SERVICE_TYPE) or None,
            interface=interface or None,
            region_name=region.get_region_name(SERVICE_TYPE) or None,
            api_version=(str(version) if version and "." in str(version)
                         else None))

    def session(self) -> ks_session.Session:
        """A keystoneauth1 session with this cloud's auth plugin."""
        from keystoneauth1 import session as ks_session

        return ks_session.Session(auth=self._plugin(), verify=self.verify,
                                  cert=self.cert, timeout=self.timeout)

    def _plugin(self) -> Any:
        # The two plugins of standalone Ironic (bifrost) directly; the
        # others through keystoneauth1's loader, as openstacksdk does.
        if self.auth_type == "none":
            from keystoneauth1 import noauth

            return noauth.NoAuth(endpoint=self.auth.get("endpoint"))
        if self.auth_type == "http_basic":
            from keystoneauth1 import http_basic

            return http_basic.HTTPBasicAuth(
                endpoint=self.auth.get("endpoint"),
                username=self.auth.get("username"),
                password=self.auth.get("password"))
        from keystoneauth1 import exceptions as ks_exc
        from keystoneauth1 import loading

        try:
            loader: Any = loading.get_plugin_loader(self.auth_type)
            return loader.load_from_options(**self.auth)
        except ks_exc.ClientException as exc:
            raise exceptions.ConfigurationError(
                f"Invalid cloud configuration: {exc}") from exc


#: Words that make an option or variable a secret whatever its plugin.
SECRET_WORDS = ("password", "secret", "token", "passcode", "totp")


def is_secret_name(name: str) -> bool:
    """Whether an option or ``OS_*`` variable named ``name`` holds a
    secret (by its name: used where the auth plugin is not known)."""
    lowered = name.lower()
    return any(word in lowered for word in SECRET_WORDS)


def secret_options(auth_type: str, auth: dict[str, Any]) -> frozenset[str]:
    """The options of ``auth`` that are secrets: those keystoneauth1's
    loader marks secret for ``auth_type``, and any named like one."""
    secret = {key for key in auth if is_secret_name(key)}
    from keystoneauth1 import exceptions as ks_exc
    from keystoneauth1 import loading

    try:
        options = loading.get_plugin_loader(auth_type).get_options()
    except ks_exc.ClientException:
        return frozenset(secret)
    secret.update(option.dest for option in options
                  if option.secret and option.dest in auth)
    return frozenset(secret)


def resolve(cloud: str | None, **overrides: Any) -> Any:
    """openstacksdk's ``CloudRegion`` of ``cloud`` with ``overrides``
    (:class:`ConfigurationError` when it cannot be resolved)."""
    import openstack.config
    import openstack.exceptions
    from keystoneauth1 import exceptions as ks_exc

    try:
        return openstack.config.OpenStackConfig().get_one(
            cloud=cloud, **overrides)
    except (openstack.exceptions.SDKException,
            ks_exc.ClientException) as exc:
        raise exceptions.ConfigurationError(
            f"Invalid cloud configuration: {exc}") from exc
