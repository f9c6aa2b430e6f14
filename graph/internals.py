"""The one module that uses libraries' private names, each behind a small function or class of
its own (tests/test_internals.py fails on a private name used anywhere else); a leaf that
imports only libraries. pyproject.toml bounds each library's version to the releases checked.
"""

from __future__ import annotations

from collections.abc import Sequence

import httptools
from prometheus_client import Histogram
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

# --- uvicorn: its httptools protocol, as graph/server/edge.py's BoundedHttp extends it --------


class HttpToolsReader(HttpToolsProtocol):
    """uvicorn's httptools protocol, with the two steps of its `data_received` that a subclass
    reading the request head itself needs: feeding the parser, and the raw status line."""

    def feed(self, data: bytes) -> bool:
        """Hand `data` to the parser as uvicorn's `data_received` does (the keep-alive timer
        stopped, an upgrade handled); False when httptools cannot read it (a callback's
        exception included): the caller answers then, and closes."""
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError:
            return False
        return True

    @staticmethod
    def status_line(status: int) -> bytes:
        """`HTTP/1.1 <status> <reason>\\r\\n`, as uvicorn writes it."""
        return STATUS_LINE[status]


# --- prometheus-client: a histogram's buckets, added to at once ------------------------------


def add_to_histogram(child: Histogram, buckets: Sequence[float], seconds: float) -> None:
    """Add counts per bucket (not cumulative, as `observe` keeps them) and their sum to a
    histogram at once. prometheus-client has no public call for it; tests/test_metrics.py
    checks that this agrees with `observe`."""
    for value, count in zip(child._buckets, buckets, strict=True):
        if count:
            value.inc(count)
    child._sum.inc(seconds)
