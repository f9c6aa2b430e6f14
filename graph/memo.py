"""Bounded memos for what is derived from a parsed document, and keys to find it again."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any


class Memo:
    """A bounded LRU map (the least recently used entry goes first)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value of `key`, made by `make()` (and remembered) when there is none."""
        try:
            self._items.move_to_end(key)
            return self._items[key]
        except KeyError:
            value = make()
            self.put(key, value)
            return value

    def peek(self, key: Hashable) -> Any:
        """The value of `key`, or None."""
        try:
            self._items.move_to_end(key)
        except KeyError:
            return None
        return self._items[key]

    def put(self, key: Hashable, value: Any) -> None:
        self._items[key] = value
        if len(self._items) > self.size:
            self._items.popitem(last=False)


class Same:
    """A key that is equal only to the very same object: a parsed document hashes and compares
    by walking its whole tree, which would cost more than the walk the memo saves. The parser's
    cache hands out the same document for the same text, so a repeated query finds its entry;
    the memo holds the document, so its id is not reused while the entry lives."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.value is self.value


def frozen(value: Any) -> Hashable:
    """Variables as a hashable key; each scalar with its type, so that 1, 1.0 and True differ.
    Raises TypeError for a value that cannot be a key."""
    if isinstance(value, Mapping):
        return ("{", tuple(sorted((str(k), frozen(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return ("[", tuple(frozen(v) for v in value))
    hash(value)
    return (type(value), value)
