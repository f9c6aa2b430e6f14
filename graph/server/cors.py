"""CORS for a public, read-only API without credentials: any origin by default, or the origins
LEADGREEN_CORS_ORIGINS lists (none: no CORS header at all).

With any origin every response carries the same two headers, made once (no `Vary: Origin`, so
a cache may share them); with a list, a listed origin is echoed and every response says
`Vary: Origin`. Preflights are answered here, before any routing, and browsers may keep them
for a day (Access-Control-Max-Age).
"""

from __future__ import annotations

import re

from graph.server.observe import Header

ALLOW_ORIGIN = b"access-control-allow-origin"
# What a script may read besides the safelisted headers: the validators and the cache's word,
# how long to wait when throttled (graph/server/ratelimit.py sends Retry-After), the request id.
EXPOSED = (
    b"access-control-expose-headers",
    b"ETag, Retry-After, X-Request-Id, X-Cache, Content-Encoding",
)
METHODS = (b"access-control-allow-methods", b"GET, HEAD, POST")
VARY_ORIGIN = (b"vary", b"origin")
MAX_AGE_SECONDS = 86_400
# Header names a preflight may ask for (tokens, commas and spaces), echoed when they are sane.
_HEADER_LIST = re.compile(rb"[A-Za-z0-9!#$%&'*+.^_`|~, -]{1,1024}")


def normalize(origin: str) -> str:
    """An origin as browsers send it: lower-case scheme and host, no trailing slash."""
    return origin.strip().rstrip("/").lower()


class Cors:
    """The CORS headers of a response, by the request's Origin; and preflight answers."""

    def __init__(self, origins: list[str]) -> None:
        self.any = "*" in origins
        self.off = not origins
        self.allowed = frozenset(normalize(o).encode() for o in origins if o != "*")
        # With any origin, these are the same for every response.
        self.simple: tuple[Header, ...] = ((ALLOW_ORIGIN, b"*"), EXPOSED) if self.any else ()
        self.max_age = (b"access-control-max-age", b"%d" % MAX_AGE_SECONDS)

    def headers(self, origin: bytes | None) -> tuple[Header, ...]:
        """The headers every response to a request from `origin` carries."""
        if self.any or self.off:
            return self.simple
        if origin is not None and origin.lower() in self.allowed:
            return ((ALLOW_ORIGIN, origin), EXPOSED, VARY_ORIGIN)
        return (VARY_ORIGIN,)

    def preflight(self, origin: bytes, request: dict[bytes, bytes]) -> list[Header]:
        """The headers of the answer (204) to a preflight from `origin` asking `request` (its
        Access-Control-Request-* headers); without grants for an origin not allowed."""
        vary = b"access-control-request-headers"
        if not self.any:
            vary = b"origin, " + vary
            if self.off or origin.lower() not in self.allowed:
                return [(b"vary", vary)]
        headers = [(ALLOW_ORIGIN, b"*" if self.any else origin), METHODS, self.max_age]
        asked = request.get(b"access-control-request-headers")
        if asked and _HEADER_LIST.fullmatch(asked):
            headers.append((b"access-control-allow-headers", asked))
        if request.get(b"access-control-request-private-network") == b"true":
            headers.append((b"access-control-allow-private-network", b"true"))
        headers.append((b"vary", vary))
        return headers
