"""Content codings: which one a client accepts (brotli first, then gzip), and compression at two
levels, one for bodies compressed once and kept, one for bodies compressed per response.

The levels, measured on the model page (20 KB) and a task's whole table (570 KB) on the
benchmark machine (bench/compression.py prints the table):

- kept (a cached answer, a document, the GraphiQL page: compressed once, sent many times):
  gzip 6, brotli 5 — 0.23 / 0.22 of the model page, 0.13 / 0.12 of the table;
- per response (the cache off, an answer stamped per client): gzip 3, brotli 1 — 0.25 / 0.26
  of the page in 0.1 / 0.06 ms, 0.16 / 0.13 of the table in 8 / 1.4 ms, where gzip 6 and
  brotli 5 take 0.5 / 1.1 ms and 18 / 16 ms.

Every coding of a response has the same weak ETag (its content is the same; the validator says
so and no more), and a response that may be compressed says `Vary: Accept-Encoding`.
"""

from __future__ import annotations

import gzip
from typing import Final

import brotli

from graph.caches import Bounded

Coding = bytes | None  # b"br", b"gzip", or None: as is (identity)
BR: Final = b"br"
GZIP: Final = b"gzip"
KEPT_GZIP, KEPT_BROTLI = 6, 5
FRESH_GZIP, FRESH_BROTLI = 3, 1

_UNSEEN = object()
# Clients send a handful of distinct Accept-Encoding values: each is read once.
_chosen: dict[bytes, Coding] = {}
_CHOSEN_MAX = 256


def choose(accept_encoding: bytes) -> Coding:
    """The coding to send to a client whose Accept-Encoding is `accept_encoding`: brotli when
    it is accepted at least as much as gzip, else gzip when accepted, else none."""
    if not accept_encoding:
        return None
    found = _chosen.get(accept_encoding, _UNSEEN)
    if found is _UNSEEN:
        found = _choose(accept_encoding)
        if len(accept_encoding) <= 256:
            if len(_chosen) >= _CHOSEN_MAX:
                _chosen.clear()
            _chosen[accept_encoding] = found
    return found  # type: ignore[return-value]


def _choose(accept_encoding: bytes) -> Coding:
    weights: dict[bytes, float] = {}
    for part in accept_encoding.lower().split(b","):
        coding, _, params = part.partition(b";")
        weight = 1.0
        for param in params.split(b";"):
            name, _, value = param.strip().partition(b"=")
            if name == b"q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights[coding.strip()] = weight
    anything = weights.get(b"*", 0.0)
    br = weights.get(BR, anything)
    gz = weights.get(GZIP, weights.get(b"x-gzip", anything))
    if br > 0 and br >= gz:
        return BR
    return GZIP if gz > 0 else None


def compress(body: bytes, coding: bytes, *, kept: bool) -> bytes:
    """`body` in `coding`, at the level for a body kept (compressed once) or sent once."""
    if coding == BR:
        data: bytes = brotli.compress(body, quality=KEPT_BROTLI if kept else FRESH_BROTLI)
        return data
    return gzip.compress(body, compresslevel=KEPT_GZIP if kept else FRESH_GZIP, mtime=0)


class Encoded:
    """Compressed copies of bodies that do not change, by their ETag and coding, within a byte
    budget: each is compressed once."""

    def __init__(self, max_bytes: int) -> None:
        self._copies: Bounded[tuple[str, bytes], bytes] = Bounded(
            max_bytes, lambda data: len(data) + 200
        )

    def get(self, etag: str, body: bytes, coding: bytes) -> bytes:
        return self._copies.remember((etag, coding), lambda: compress(body, coding, kept=True))


def weak(etag: str) -> str:
    """The weak form of an entity tag: the same for every coding of a representation."""
    return etag if etag.startswith("W/") else "W/" + etag
