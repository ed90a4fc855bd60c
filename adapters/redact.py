"""Credentials out of URLs before they are shown: config files, call records, logs, errors.

A user may put credentials in a base URL (``https://user:pass@host/v1`` for a proxy with basic
auth, ``?api_key=...`` for some hosted gateways). The request needs them; nothing we write or
print does. :func:`redact_url` masks them in one URL, :func:`redact_text` in every URL inside
a free text (an exception's message names the URL it failed on), and :func:`split_userinfo`
gives the request side the URL without userinfo plus the basic-auth header that replaces it,
so no client object, log line or exception of the HTTP stack ever holds the password.
"""

from __future__ import annotations

import base64
import logging
import re
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"

# Query (or fragment) parameter names whose values are secrets: api_key, key, token,
# access_token, X-Amz-Signature, password, client_secret, auth, session id, ... Matching on a
# part of the name masks a few harmless ones too (``monkey=``); showing a secret costs more.
_SECRET_NAME = re.compile(r"key|token|secret|pass|pwd|auth|sig|credential|session|cookie", re.IGNORECASE)
# A URL inside free text: scheme://, then anything up to whitespace, a quote or a bracket.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]{}]+")


def redact_url(url: str) -> str:
    """``url`` with its userinfo (user and password) and the values of secret-looking query or
    fragment parameters replaced by ``***``; any other URL comes back unchanged (same text).
    Never raises: a URL that does not parse still has its userinfo masked."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced IPv6 bracket: mask what sits before an '@'
        return re.sub(r"(//)[^/?#@]*@", rf"\1{MASK}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        netloc = f"{MASK}:{MASK}@{hostport}" if ":" in userinfo else f"{MASK}@{hostport}"
    query, fragment = _mask_params(parts.query), _mask_params(parts.fragment)
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url  # nothing secret: the caller's exact text (no re-encoding, same slashes)
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _mask_params(params: str) -> str:
    """``a=1&api_key=s`` -> ``a=1&api_key=***``; text that is not name=value pairs is kept."""
    if "=" not in params:
        return params
    out = []
    for pair in params.split("&"):
        name, eq, value = pair.partition("=")
        secret = eq and value and _SECRET_NAME.search(unquote(name))
        out.append(f"{name}={MASK}" if secret else pair)
    return "&".join(out)


def redact_text(text: str, secrets: tuple[str, ...] | list[str] = ()) -> str:
    """``text`` with every URL in it redacted (:func:`redact_url`) and each of ``secrets``
    (API keys, passwords; strings shorter than 4 characters are ignored, they would mask
    ordinary words) replaced by ``***``."""
    text = _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, MASK)
    return text


def url_secrets(url: str) -> list[str]:
    """The secret strings ``url`` carries (its password, user, and secret parameter values,
    raw and percent-decoded), for :func:`redact_text` to mask wherever they turn up alone."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [parts.password or "", parts.username or ""]
    for params in (parts.query, parts.fragment):
        for pair in params.split("&"):
            name, _, value = pair.partition("=")
            if value and _SECRET_NAME.search(unquote(name)):
                found.append(value)
    return sorted({s for f in found if f for s in (f, unquote(f))}, key=len, reverse=True)


def split_userinfo(url: str) -> tuple[str, str | None]:
    """(``url`` without its userinfo, the ``Authorization`` header value it stood for or None).

    HTTP clients turn ``user:pass@`` into basic auth, but keep it in the URL they log and put
    in their exceptions; sending the header ourselves to the bare URL is the same request."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    _, _, hostport = parts.netloc.rpartition("@")
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment)), f"Basic {token}"


class RedactingFilter(logging.Filter):
    """Redacts URLs (and the given secrets) in the records of the logger it is attached to.

    For the HTTP stack's own loggers (``httpx`` logs ``HTTP Request: POST <full URL>`` at INFO),
    which we cannot ask to leave query-string secrets out."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is logging's to report, not ours
            return True
        clean = redact_text(message, sorted(self.secrets, key=len, reverse=True))
        if clean != message:
            record.msg, record.args = clean, None
        return True


_FILTER = RedactingFilter()
# The HTTP stack's loggers that print request URLs (httpx and the httpx2 fork openai may use).
_HTTP_LOGGERS = ("httpx", "httpx2", "openai._base_client", "openai")


def protect_http_logs(secrets: list[str] | tuple[str, ...] = ()) -> None:
    """Attach the redacting filter to the HTTP stack's loggers (once) and add ``secrets`` to
    what it masks. A logger's filter sees only the records logged on that very logger, hence
    the list of names rather than one parent."""
    _FILTER.secrets.update(s for s in secrets if s and len(s) >= 4)
    for name in _HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
