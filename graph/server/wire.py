"""The request head as `leadgreen serve` reads it off the wire: bounded, and refused as JSON.

uvicorn's httptools protocol reads a request's line and headers whole, however long (a 30 MB
header was read and answered), and refuses what httptools cannot parse (a URL over 64 KB, say)
with a plain-text 400. `BoundedHttp` is that protocol (uvicorn's internals: pinned in
pyproject.toml, tests/test_adversarial_http.py checks it against a live server) with:

- the head bounded while it is read: a URL past LEADGREEN_MAX_URL_BYTES is 414 URL_TOO_LONG, a
  header block past LEADGREEN_MAX_HEADER_BYTES or with more than LEADGREEN_MAX_HEADERS fields
  is 431 HEADERS_TOO_LARGE, at once (at most one read of the socket past the limit is held);
- every refusal of its own JSON with a code, as the app's are (400 BAD_REQUEST for a request
  that is not HTTP/1.1).

graph/server/shield.py applies the same limits to the ASGI scope, for any other server.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from graph.errors import Code
from graph.server.respond import SECURITY_HEADERS
from graph.server.shield import refusal_body
from graph.settings import Settings

# What a request line and the header block hold besides the URL and the fields' bytes.
HEAD_SLACK = 1024
# After a refusal, what the client still sends is read and dropped for this long (or this
# many bytes) before the connection is closed.
LINGER_SECONDS = 2.0
LINGER_BYTES = 1024 * 1024


class Refused(Exception):
    """Raised in a parser callback: httptools stops and uvicorn sends `send_400_response`."""


class BoundedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with the request head bounded (see the module)."""

    # (max URL bytes, max header bytes, max header fields), read once per process from the
    # environment `leadgreen serve` hands its workers.
    limits: ClassVar[tuple[int, int, int] | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if BoundedHttp.limits is None:
            settings = Settings()
            BoundedHttp.limits = (
                settings.max_url_bytes,
                settings.max_header_bytes,
                settings.max_headers,
            )
        self.max_url, self.max_header_bytes, self.max_headers = BoundedHttp.limits
        self.max_head = self.max_url + self.max_header_bytes + HEAD_SLACK
        self.refusal: tuple[int, Code, str] | None = None
        self._reading_head = True
        self._head_bytes = self._url_bytes = self._header_bytes = self._fields = 0
        self._dropped = 0

    def data_received(self, data: bytes) -> None:
        if self.refusal is not None:  # answered: what the client still sends is dropped
            self._dropped += len(data)
            if self._dropped > LINGER_BYTES:
                self.transport.close()
            return
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # as uvicorn does
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError:  # a client's doing: one line at INFO, as refusals are
            self.logger.info("refused a request it could not read: %s", self._reason())
            self.send_400_response("")
            return
        if self.refusal is None and self._reading_head:
            self._head_bytes += len(data)
            if self._head_bytes > self.max_head:
                self._refuse_head()
                self.logger.info("refused a request: %s", self._reason())
                self.send_400_response("")

    def _refuse_head(self) -> None:
        if self._url_bytes > self.max_url:
            self._refuse(
                414,
                Code.URL_TOO_LONG,
                f"The URL is longer than the limit of {self.max_url} bytes; send the request "
                "with POST, or as a persisted query.",
            )
        else:
            self._refuse(
                431,
                Code.HEADERS_TOO_LARGE,
                f"The request's header fields hold more than the limit of "
                f"{self.max_header_bytes} bytes.",
            )

    def _reason(self) -> str:
        return f"{self.refusal[0]} {self.refusal[1]}" if self.refusal else "not HTTP/1.1"

    def _refuse(self, status: int, code: Code, message: str) -> None:
        self.refusal = (status, code, message)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._head_bytes = self._url_bytes = self._header_bytes = self._fields = 0

    def on_url(self, url: bytes) -> None:
        self._url_bytes += len(url)
        if self._url_bytes > self.max_url:
            self._refuse_head()
            raise Refused
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._fields += 1
        self._header_bytes += len(name) + len(value)
        if self._fields > self.max_headers:
            self._refuse(
                431,
                Code.HEADERS_TOO_LARGE,
                f"The request has more than the limit of {self.max_headers} header fields.",
            )
            raise Refused
        if self._header_bytes > self.max_header_bytes:
            self._refuse_head()
            raise Refused
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._reading_head = False
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request it cannot read (and ours to one past the limits),
        as JSON with a code; the connection is closed after it."""
        status, code, message = self.refusal or (
            400,
            Code.BAD_REQUEST,
            "The request is not a valid HTTP/1.1 request.",
        )
        self.refusal = (status, code, message)
        body = refusal_body(message, code)
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: application/json\r\n",
            b"cache-control: no-store\r\n",
            *(b"%s: %s\r\n" % header for header in SECURITY_HEADERS),
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
            body,
        ]
        self.transport.write(b"".join(head))
        # Closing with the client's bytes unread would reset the connection, and the client
        # could lose the answer: read (and drop) for a little while first, as nginx does.
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(LINGER_SECONDS, self.transport.close)
        else:
            self.transport.close()


def uvicorn_settings(settings: Settings) -> dict[str, Any]:
    """uvicorn's settings for the HTTP edge of `leadgreen serve`: this protocol, no `server`
    banner, and X-Forwarded-For believed only from the trusted proxies (none by default)."""
    trusted = [p.strip() for p in settings.trusted_proxies.split(",") if p.strip()]
    return {
        "http": f"{BoundedHttp.__module__}:{BoundedHttp.__name__}",
        "server_header": False,
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": trusted or [],
    }
