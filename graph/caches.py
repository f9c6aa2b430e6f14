"""Byte-bounded caches: the one cache utility of a LeadGreen process (on cachetools).

Every cache and memo of the server (answers, persisted queries, parsed requests and documents,
validation results, plans and costs, release catalogs) is a `Bounded` cache: least recently used
out first, and bounded by an estimate of the bytes it holds, so that nothing a client sends can
grow the process past the budget the operator sets (LEADGREEN_CACHE_MAX_BYTES, shared out by
`Budget`). An entry larger than its whole cache is not kept.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

import cachetools

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Bounded(cachetools.LRUCache[K, V], Generic[K, V]):
    """An LRU map bounded by bytes: `sizeof(value)` estimates what an entry holds (its key
    included); the entries together never exceed `max_bytes`."""

    def __init__(self, max_bytes: int, sizeof: Callable[[V], float]) -> None:
        super().__init__(maxsize=max(0, max_bytes), getsizeof=sizeof)

    def __setitem__(self, key: K, value: V) -> None:
        try:
            super().__setitem__(key, value)
        except ValueError:  # larger than the whole cache: not kept
            self.pop(key, None)

    def remember(self, key: K, make: Callable[[], V]) -> V:
        """The value of `key`, made by `make()` and kept when there is none."""
        try:
            return self[key]
        except KeyError:
            value = self[key] = make()
            return value

    @property
    def bytes(self) -> float:
        return self.currsize


def fixed(size: int) -> Callable[[object], int]:
    """`sizeof` for entries of about the same size."""
    return lambda _value: size


@dataclass(frozen=True)
class Budget:
    """The process's cache budget, shared out among its caches (fractions of `total`)."""

    total: int

    @property
    def answers(self) -> int:
        """Finished answers (the response cache's bytes in this process)."""
        return self.total * 50 // 100

    @property
    def replays(self) -> int:
        """Requests answered from the response cache, sent again (graph/server/replay.py)."""
        return self.total * 5 // 100

    @property
    def documents(self) -> int:
        """Parsed and validated documents, their plans, collected selections and costs."""
        return self.total * 20 // 100

    @property
    def requests(self) -> int:
        """Parsed request bodies and query strings, and document hashes."""
        return self.total * 5 // 100

    @property
    def persisted(self) -> int:
        """Automatic persisted queries (their text)."""
        return self.total * 5 // 100

    @property
    def catalogs(self) -> int:
        """Catalogs of releases other than the one served by default."""
        return self.total * 15 // 100
