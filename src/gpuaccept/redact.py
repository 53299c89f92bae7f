"""Secrets kept out of messages and result files: URLs lose their credentials and query, and foreign processes
are named by pid, user and executable name only (never their arguments, which may carry a token)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

REDACTED = "<redacted>"

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]*[^\s'\"<>.,;:)\]]")


def url(text: str) -> str:
    """``text`` as a URL without user, password, query or fragment (each replaced by ``<redacted>``); a string
    that does not parse as a URL comes back as ``<redacted>`` whole."""
    try:
        parts = urlsplit(text)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return REDACTED
    if not parts.scheme or not parts.netloc:
        return REDACTED
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port is not None else "")
    if "@" in parts.netloc:
        netloc = f"{REDACTED}@{netloc}"
    return urlunsplit(
        (parts.scheme, netloc, parts.path, REDACTED if parts.query else "", REDACTED if parts.fragment else "")
    )


def urls_in(text: str) -> str:
    """Free text (an error message) with every URL in it passed through :func:`url`."""
    return _URL.sub(lambda m: url(m.group(0)), text)
