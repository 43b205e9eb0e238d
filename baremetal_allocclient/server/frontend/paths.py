"""``PATH_INFO`` keeps an encoded slash (``%2F``) encoded.

waitress decodes the whole path, so ``GET /v1/nodes/%2F`` would reach
the application as ``/v1/nodes//``, another route.  cheroot, which
served the API before, and the URI rules (RFC 3986, section 2.4:
separate the components before decoding them) keep it: the raw path
(``REQUEST_URI``) is split at each ``%2F``, every piece is decoded, and
the pieces are joined with ``%2F`` again, as cheroot does.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

_QUOTED_SLASH = re.compile("%2F", re.IGNORECASE)

Wsgi = Callable[[dict[str, Any], Any], Iterable[bytes]]


def path_info(request_uri: str) -> str | None:
    """The ``PATH_INFO`` cheroot would give, or None when the raw path
    has no encoded slash (waitress's is the same then)."""
    if request_uri.startswith("/"):
        path = request_uri.partition("?")[0]
    else:  # absolute form, "http://host/path?query"
        path = urllib.parse.urlsplit(request_uri).path
    if not _QUOTED_SLASH.search(path):
        return None
    return "%2F".join(
        urllib.parse.unquote_to_bytes(piece).decode("latin-1")
        for piece in _QUOTED_SLASH.split(path))


def keep_encoded_slashes(app: Wsgi) -> Wsgi:
    """``app`` seeing ``%2F`` in ``PATH_INFO`` as sent."""

    def wrapped(environ: dict[str, Any], start_response: Any
                ) -> Iterable[bytes]:
        kept = path_info(environ.get("REQUEST_URI", ""))
        if kept is not None:
            environ["PATH_INFO"] = kept
        return app(environ, start_response)

    return wrapped
