"""The secrets of a URL (its password, secret query parameters), found leniently, and
text without them: what every error line, log and repr that shows a URL goes through.

Its own module, below `settings` and `storage.services`: both show URLs.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

_SECRET_PARAMS = {"password", "passwd", "sslpassword"}
# `password=...` in a URL's query or a libpq "key=value" string, quoted or not; a value
# already *** is left alone, and an unquoted one ends before punctuation that encloses it.
_SECRET_ASSIGNMENT = re.compile(
    r"(?<![\w%])(password|passwd|sslpassword)(\s*=\s*)(?!\*\*\*)"
    r"('(?:[^'\\]|\\.)*'?|[^\s&#'\"()]*)", re.I
)
_QUERY_PARAM = re.compile(r"[?&;]([^=&#]*)=([^&#]*)")
# Drivers split a malformed URL at these: any piece of a password may be quoted alone.
_URL_DELIMITERS = re.compile(r"[@/:?#&=]")
_SHORT_SECRET = 4  # shorter pieces are scrubbed only as whole words: "e" is in every message


def _userinfo(url: str) -> str | None:
    """The text before the '@' that ends the authority, read leniently.

    People paste passwords unencoded, so '@', '/' and '?' may be in it: the
    userinfo runs to the LAST '@' before the path, else before the query,
    else to the last '@' at all unless a query parameter is before it.
    """
    rest = url.partition("://")[2]
    for stop in ("/", "?"):
        head = rest.split(stop, 1)[0]
        if "@" in head:
            return head.rpartition("@")[0]
    userinfo = rest.rpartition("@")[0]
    return userinfo if userinfo and "=" not in userinfo else None


def url_secrets(url: str) -> list[str]:
    """Every secret of the URL as a driver might quote it, longest first: the password
    (as written, percent-decoded, and its pieces between URL delimiters) and the values
    of secret query parameters."""
    whole: set[str] = set()
    userinfo = _userinfo(url)
    if userinfo is not None and ":" in userinfo:
        whole.add(userinfo.partition(":")[2])
    whole.update(m[2] for m in _QUERY_PARAM.finditer(url)
                 if unquote(m[1]).strip().lower() in _SECRET_PARAMS)
    whole.update(m[3].strip("'") for m in _SECRET_ASSIGNMENT.finditer(url))
    whole |= {unquote(s) for s in whole}
    pieces = whole | {p for s in whole for p in _URL_DELIMITERS.split(s)}
    return sorted((p for p in pieces if p), key=lambda p: (-len(p), p))


def scrub(text: str, url: str) -> str:
    """`text` without any secret of `url` (each replaced by ***)."""
    for secret in url_secrets(url):
        if len(secret) >= _SHORT_SECRET:
            text = text.replace(secret, "***")
        else:
            text = re.sub(rf"(?<![^\W_]){re.escape(secret)}(?![^\W_])", "***", text)
    return _SECRET_ASSIGNMENT.sub(lambda m: f"{m[1]}{m[2]}***", text)


def redact_url(url: str) -> str:
    """The URL with any password (in the authority or the query) replaced by ***."""
    shown = url
    userinfo = _userinfo(url)
    if userinfo is not None and ":" in userinfo:
        scheme, _, rest = url.partition("://")
        user = userinfo.partition(":")[0]
        shown = f"{scheme}://{user}:***@{rest[len(userinfo) + 1:]}"
    return scrub(shown, url)
