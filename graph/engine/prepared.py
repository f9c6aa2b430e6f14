"""Documents as the server runs them: parsed once, and everything derived from one kept with it.

A `Prepared` document holds its parse, its validation (per set of limits), its costs (per
operation, declared variables and page sizes), and what execution collects and plans for it;
`Documents` keeps the recently used ones within a byte budget. Evicting a document frees all of
it at once, and nothing is keyed on what a request sends but its document does not use.
"""

from __future__ import annotations

import asyncio
import bisect
import re
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from graphql import (
    DocumentNode,
    GraphQLError,
    GraphQLSyntaxError,
    Lexer,
    OperationDefinitionNode,
    Source,
    SourceLocation,
    TokenKind,
    parse,
)

from graph.caches import Bounded
from graph.errors import Code, refusal

T = TypeVar("T")

# Bytes a parsed document holds per character of its text (measured: 78 to 87 with
# graphql-core 3.3), and what its memos may add to it.
PARSED_BYTES_PER_CHAR = 100
MEMO_BYTES = 64 * 1024
# The most variable combinations one document's costs and collected selections are kept for.
MEMO_ENTRIES = 64


def frozen(value: Any) -> Hashable:
    """Variables as a hashable key; each scalar with its type, so that 1, 1.0 and True differ.
    Raises TypeError for a value that cannot be a key."""
    return _frozen(value, None)


# A memo key made of what a client sent is kept only when it is this small (its scalars' text).
SMALL_KEY_CHARS = 1024


def small_key(value: Any) -> Hashable | None:
    """`frozen(value)` when its scalars (and its mappings' keys) hold at most SMALL_KEY_CHARS
    characters, a number or a container counting 8 (so nesting stays shallow); else None (a
    client's large values are not worth keeping as keys, nor safe to)."""
    try:
        return _frozen(value, [SMALL_KEY_CHARS])
    except (_Large, TypeError):
        return None


class _Large(Exception):
    """More than a small key's characters."""


_NUMBERS = frozenset({int, float, bool, type(None)})


def _charge(room: list[int] | None, value: Any) -> None:
    if room is not None:
        room[0] -= len(value) if isinstance(value, str | bytes) else 8
        if room[0] < 0:
            raise _Large


def _frozen(value: Any, room: list[int] | None) -> Hashable:
    """`frozen`, counting what its scalars hold against `room` (None: no limit)."""
    kind = value.__class__
    if kind is str or kind in _NUMBERS:  # the common case first
        _charge(room, value)
        return (kind, value)
    if isinstance(value, Mapping):
        _charge(room, None)
        for key in value:
            _charge(room, key)
        return ("{", tuple(sorted((str(k), _frozen(v, room)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        _charge(room, None)
        return ("[", tuple(_frozen(v, room) for v in value))
    _charge(room, value)
    hash(value)
    return (type(value), value)


class Few(Bounded[Hashable, Any]):
    """A per-document memo: at most MEMO_ENTRIES entries."""

    def __init__(self) -> None:
        super().__init__(MEMO_ENTRIES, lambda _value: 1)


@dataclass(eq=False)
class Prepared:
    """A parsed document and what is derived from it, for as long as it is remembered."""

    text: str
    document: DocumentNode
    # Validation errors per (rules, limits): a few combinations at most.
    validated: dict[Hashable, tuple[GraphQLError, ...]] = field(default_factory=dict)
    # Estimated costs per (operation name, declared variables' values, page sizes).
    costs: Few = field(default_factory=Few)
    # What execution derives per set of variables (coerced variables, plans where directives
    # read them, the answer's shape), each under a key of its own.
    memos: Few = field(default_factory=Few)
    # What depends on the document only (its fragments, plans): a few keys per operation.
    derived: dict[Hashable, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return PARSED_BYTES_PER_CHAR * len(self.text) + MEMO_BYTES

    def operation(self, name: str | None) -> OperationDefinitionNode | None:
        """The operation `name` selects (the only one when no name is given)."""
        operations = [
            d for d in self.document.definitions if isinstance(d, OperationDefinitionNode)
        ]
        if name is None:
            return operations[0] if len(operations) == 1 else None
        return next((o for o in operations if o.name and o.name.value == name), None)

    def once(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """A value that depends on the document only (a fixed number of keys per document)."""
        try:
            return self.derived[key]
        except KeyError:
            value = self.derived[key] = make()
            return value


_TOKENS = re.compile(r"Document contains more than \d+ tokens")
_NESTED = "Document is nested too deeply"


class Lines(Source):
    """A document's text that finds the line of a position by bisection: graphql-core's
    Source scans the text from its start for every error's location, and a document can ask
    for a hundred errors."""

    _breaks: tuple[list[int], list[int]] | None = None

    def get_location(self, position: int) -> SourceLocation:
        if self._breaks is None:
            found = list(_NEWLINE.finditer(self.body))
            self._breaks = [m.start() for m in found], [m.end() for m in found]
        starts, ends = self._breaks
        before = bisect.bisect_left(starts, position)  # line breaks before the position
        return SourceLocation(before + 1, position + 1 - (ends[before - 1] if before else 0))


_NEWLINE = re.compile(r"\r\n|[\n\r]")


def _parse(text: str, max_tokens: int) -> DocumentNode:
    """Parse, with errors that say which limit a document went past."""
    try:
        return parse(Lines(text), max_tokens=max_tokens)
    except GraphQLSyntaxError as error:
        # graphql-core stops at its nesting limit before it has counted every token.
        if _TOKENS.search(error.message) or (
            _NESTED in error.message and _more_tokens_than(text, max_tokens)
        ):
            raise refusal(
                f"The document has more than {max_tokens} tokens, the limit.",
                Code.TOO_MANY_TOKENS,
            ) from None
        error.extensions = {
            "code": str(
                Code.QUERY_TOO_DEEP if _NESTED in error.message else Code.GRAPHQL_PARSE_FAILED
            )
        }
        raise


def parsed(text: str, max_tokens: int) -> Prepared:
    """`text` parsed within `max_tokens`, not yet kept (it touches nothing shared: a worker
    thread may run it, see `off_the_loop`)."""
    return Prepared(text, _parse(text, max_tokens))


# Documents up to this size are parsed and validated on the event loop (a few milliseconds at
# most); larger ones in WORKER, one at a time, so that the loop keeps answering meanwhile.
INLINE_CHARS = 512
WORKER = ThreadPoolExecutor(1, thread_name_prefix="leadgreen-documents")


async def off_the_loop(size: int, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)`: on the loop for a small document (`size` characters), else in WORKER."""
    if size <= INLINE_CHARS:
        return work(*args)
    return await asyncio.get_running_loop().run_in_executor(WORKER, work, *args)


def _more_tokens_than(text: str, limit: int) -> bool:
    lexer = Lexer(Source(text))
    try:
        for _ in range(limit + 1):
            if lexer.advance().kind is TokenKind.EOF:
                return False
    except GraphQLSyntaxError:
        return False
    return True


class Documents:
    """The documents a schema has run lately, within `max_bytes`."""

    def __init__(self, max_bytes: int) -> None:
        self._kept: Bounded[tuple[str, int], Prepared] = Bounded(
            max_bytes, lambda prepared: prepared.size
        )

    def prepare(self, text: str, max_tokens: int) -> Prepared:
        """The document of `text`, parsed within `max_tokens` (a GraphQLError if it is not a
        document, or past the limit)."""
        prepared = self.get(text, max_tokens)
        if prepared is None:
            prepared = self.keep(parsed(text, max_tokens), max_tokens)
        return prepared

    def get(self, text: str, max_tokens: int) -> Prepared | None:
        """The document of `text` when it is prepared already."""
        return self._kept.get((text, max_tokens))

    def keep(self, prepared: Prepared, max_tokens: int) -> Prepared:
        """Remember a document parsed within `max_tokens` (the one kept already, if another
        request parsed it meanwhile)."""
        key = (prepared.text, max_tokens)
        return self._kept.setdefault(key, prepared)

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def bytes(self) -> float:
        return self._kept.bytes
