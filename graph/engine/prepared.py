"""Documents as the server runs them: parsed once, and everything derived from one kept with it.

A `Prepared` document holds its parse, its validation (per set of limits), its costs (per
operation, declared variables and page sizes), and what execution collects and plans for it;
`Documents` keeps the recently used ones within a byte budget. Evicting a document frees all of
it at once, and nothing is keyed on what a request sends but its document does not use.
"""

from __future__ import annotations

import asyncio
import bisect
import gc
import re
import sys
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, TypeVar

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
# What remembering one more text of a document holds besides its text and key.
TEXT_BYTES = 200
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
    # For a text that differs from the document's in its operations' names only (`renamed`):
    # each name the text gives an operation, to the document's name of it.
    aliases: Mapping[str, str] | None = None

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

    @property
    def valid(self) -> bool:
        """Whether the document was validated, and without errors."""
        return bool(self.validated) and not any(self.validated.values())

    def renamed(self, names: tuple[str, ...]) -> Prepared:
        """This document (the same object underneath: parse, validation, costs, plans) as a
        text that names its operations `names`, in their order."""
        own = [
            d.name.value
            for d in self.document.definitions
            if isinstance(d, OperationDefinitionNode) and d.name is not None
        ]
        return replace(self, aliases=dict(zip(names, own, strict=True)))

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
    document = _parse(text, max_tokens)
    _unchain(document)
    return Prepared(text, document)


def _unchain(document: DocumentNode) -> None:
    """Cut the lexer's tokens apart (each links to the one before and after it): the nodes
    keep the tokens they start and end at, and a document no longer forms cycles, so that
    it is freed as soon as it is let go of, without the garbage collector."""
    token = document.loc.start_token if document.loc is not None else None
    while token is not None:
        token.prev, token.next, token = None, None, token.next


# Documents up to this size are parsed and validated on the event loop (a few milliseconds at
# most); larger ones in WORKER, one at a time, so that the loop keeps answering meanwhile.
INLINE_CHARS = 512
WORKER = ThreadPoolExecutor(1, thread_name_prefix="leadgreen-documents")
# Who sends the request being answered (graph/server/handler.py sets it: the rate limiter's
# client, else the peer's address), for the bounds on new-document work.
CLIENT: ContextVar[str] = ContextVar("leadgreen_client", default="anonymous")
# New documents one client (or one address, which may be a proxy's) may have in preparation
# at once, and large ones (WORKER's) in all.
PER_CLIENT = 4
IN_WORKER = 2


class Preparing:
    """New-document work under way (parse, validation, cost, plan: what no cache answers),
    bounded per client (`per_client`) and, for documents prepared in WORKER, in all
    (`in_worker`); past a bound the request is refused at once (PREPARATION_BUSY), so that
    the worker's queue stays short and no client holds it."""

    def __init__(self, per_client: int = PER_CLIENT, in_worker: int = IN_WORKER) -> None:
        self.per_client, self.in_worker = per_client, in_worker
        self.clients: dict[str, int] = {}
        self.large = 0

    def enter(self, client: str, size: int) -> bool:
        """Whether `client` may prepare a new document of `size` characters now (then it
        must `leave` once done)."""
        large = size > INLINE_CHARS
        if self.clients.get(client, 0) >= self.per_client or (
            large and self.large >= self.in_worker
        ):
            return False
        self.clients[client] = self.clients.get(client, 0) + 1
        self.large += large
        return True

    def leave(self, client: str, size: int) -> None:
        left = self.clients[client] - 1
        if left:
            self.clients[client] = left
        else:
            del self.clients[client]
        self.large -= size > INLINE_CHARS


PREPARING = Preparing()


# The interpreter's switch interval (5 ms by default): how long the loop may wait for the
# interpreter while WORKER holds it, each time the loop gave it up (every read and write).
# Measured with bench.hostile --default: the simple query's p99 247 ms at 0.5 ms, 400 at 5.
SWITCH_SECONDS = 0.0005


async def off_the_loop(size: int, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)`: on the loop for a small document (`size` characters), else in WORKER,
    with the collector paused (`uncollected`)."""
    if size <= INLINE_CHARS:
        return work(*args)
    if sys.getswitchinterval() > SWITCH_SECONDS:
        sys.setswitchinterval(SWITCH_SECONDS)
    return await asyncio.get_running_loop().run_in_executor(WORKER, uncollected, work, *args)


def uncollected(work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` with the garbage collector paused. Preparing a large document allocates
    tens of thousands of objects that all live until it is done (a parse, its validation, its
    plan: no cycles, the lexer's tokens unchained), so every young collection meanwhile scans
    them, finds nothing, and moves them on to older generations, until a full collection of
    the whole heap follows; each holds the interpreter, and so the event loop. Measured with
    `python -m bench.hostile --quick --default` (bench/HOSTILE.md). What the loop meanwhile
    leaves for the collector is collected once the preparation ends."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return work(*args)
    finally:
        if collecting:
            gc.enable()


def _more_tokens_than(text: str, limit: int) -> bool:
    lexer = Lexer(Source(text))
    try:
        for _ in range(limit + 1):
            if lexer.advance().kind is TokenKind.EOF:
                return False
    except GraphQLSyntaxError:
        return False
    return True


# What the lexer skips between tokens (GraphQL's ignored characters: spaces, tabs, line
# breaks, commas, a byte order mark, comments), and its strings, kept verbatim.
_IGNORED = re.compile(r"(?:[\t \n\r,\ufeff]|#[^\n\r]*)+")
_STRING_OR_COMMENT = re.compile(r'("""(?:\\"""|(?!""")[\s\S])*"""|"(?:[^"\\\n\r]|\\.)*")|#[^\n\r]*')
_CHUNK = re.compile(
    r'"""(?:\\"""|(?!""")[\s\S])*"""|"(?:[^"\\\n\r]|\\.)*"|#[^\n\r]*|[{}()\[\]:$!@=|&]'
    r'|[^\t \n\r,\ufeff"#{}()\[\]:$!@=|&]+'
)
# A punctuator (but the spread's dots, which a number may hold) and the space around it.
_AROUND = re.compile(r" ?([{}()\[\]:$!@=|&]) ?")


def significant(text: str) -> str:
    """The document's significant tokens: `text` without its comments, each run of ignored
    characters between tokens one space (none next to a punctuator), its strings as written.
    Two texts with the same significant tokens are one document (they differ only where the
    lexer does not look), so they share one preparation; a text this cannot read for sure (a
    quote outside a string: not a document) is its own key."""
    if '"' not in text:
        return _AROUND.sub(r"\1", _IGNORED.sub(" ", text)).strip(" ")
    out, between = [], []
    for i, piece in enumerate(_STRING_OR_COMMENT.split(text)):
        if i % 2 == 0:  # between strings and comments
            if '"' in piece:
                return text
            between.append(piece)
        elif piece is None:  # a comment
            between.append(" ")
        else:  # a string
            out.append(_AROUND.sub(r"\1", _IGNORED.sub(" ", "".join(between))))
            out.append(piece)
            between = []
    out.append(_AROUND.sub(r"\1", _IGNORED.sub(" ", "".join(between))))
    return "".join(out).strip(" ")


def _unnamed(chunks: list[tuple[int, str]]) -> list[str]:
    """The chunks' texts, its operations' names blanked."""
    texts = [c for _, c in chunks]
    for i in _named(chunks) or ():
        texts[i] = ""
    return texts


def _chunks(text: str) -> list[tuple[int, str]]:
    """The offsets and texts of `text`'s runs of significant characters (its strings whole)."""
    return [(m.start(), m.group()) for m in _CHUNK.finditer(text) if m.group()[0] != "#"]


_OPERATION_TYPES = frozenset({"query", "mutation", "subscription"})
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]*")
_OPENING = frozenset("{([")
_CLOSING = {"}": "{", ")": "(", "]": "["}


def _named(chunks: list[tuple[int, str]]) -> list[int] | None:
    """The indexes in `chunks` (a text's, `_chunks`) of its operations' names, in their order;
    None when the text is not, as far as its brackets and first words tell, a list of
    operations and fragments (then nothing of it is renamed)."""
    names: list[int] = []
    opened: list[str] = []
    start = True  # at the start of a definition
    for i, (_, chunk) in enumerate(chunks):
        if start:
            if chunk[0] == '"':  # (a description)
                continue
            if chunk in _OPERATION_TYPES:
                if i + 1 < len(chunks) and _NAME.fullmatch(chunks[i + 1][1]):
                    names.append(i + 1)
            elif chunk != "fragment" and chunk != "{":
                return None
            start = False
        if chunk in _OPENING:
            opened.append(chunk)
        elif chunk in _CLOSING:
            if not opened or opened.pop() != _CLOSING[chunk]:
                return None
            start = not opened and chunk == "}"
    return names if start and not opened else None


class Spelling(NamedTuple):
    """What a text is, as the documents kept are found by: its significant tokens, and (for a
    text whose operations are named, each differently) those tokens with the names cut out
    and where they were, and the names, in their order."""

    key: str
    form: tuple[str, tuple[int, ...]] | None
    names: tuple[str, ...]


def spelling(text: str) -> Spelling:
    """`text`'s significant tokens (`significant`) and their form without operation names:
    texts of the same form are one document but for its operations' names."""
    key = significant(text)
    chunks = _chunks(key)
    at = _named(chunks)
    if not at:
        return Spelling(key, None, ())
    names = tuple(chunks[i][1] for i in at)
    if len(set(names)) < len(names):  # (not a document: its operations must differ)
        return Spelling(key, None, ())
    cut: list[str] = []
    places: list[int] = []
    end = removed = 0
    for i in at:
        start, name = chunks[i]
        cut.append(key[end:start])
        places.append(start - removed)
        end, removed = start + len(name), removed + len(name)
    cut.append(key[end:])
    return Spelling(key, ("".join(cut), tuple(places)), names)


def translate(position: int, source: str, target: str) -> int | None:
    """`position` in `source` at the same place of `target`, a text with the same significant
    tokens but perhaps its operations' names; None when it cannot be placed."""
    here, there = _chunks(source), _chunks(target)
    if _unnamed(here) != _unnamed(there):
        return None
    at = bisect.bisect_right([start for start, _ in here], position) - 1
    if at < 0:
        return min(position, there[0][0]) if there else position
    start, chunk = here[at]
    return there[at][0] + min(position - start, len(chunk))


class Documents:
    """The documents a schema has run lately, within `max_bytes`: each kept once by its
    significant tokens (`significant`), and every text it was sent as remembered briefly. A
    valid document is also found by a text that differs from it in its operations' names."""

    def __init__(self, max_bytes: int) -> None:
        self._kept: Bounded[tuple[str, int], Prepared] = Bounded(
            max_bytes - max_bytes // 8, lambda prepared: prepared.size
        )
        # A text's spelling, when its significant tokens are not the text itself; and the
        # significant tokens of the document kept for a form without operation names.
        self._texts: Bounded[tuple[str, int], Spelling] = Bounded(
            max_bytes // 16, lambda spelled: 3 * len(spelled.key) + TEXT_BYTES
        )
        self._forms: Bounded[tuple[tuple[str, tuple[int, ...]], int], str] = Bounded(
            max_bytes // 16, lambda key: 2 * len(key) + TEXT_BYTES
        )

    def prepare(self, text: str, max_tokens: int) -> Prepared:
        """The document of `text`, parsed within `max_tokens` (a GraphQLError if it is not a
        document, or past the limit)."""
        prepared = self.get(text, max_tokens)
        if prepared is None:
            prepared = self.keep(parsed(text, max_tokens), max_tokens)
        return prepared

    def get(self, text: str, max_tokens: int) -> Prepared | None:
        """The document of `text` when it is prepared already: sent as `text`, as another text
        with the same significant tokens, or (when valid) as one that names its operations
        otherwise (`Prepared.renamed`)."""
        kept = self._kept.get((text, max_tokens))
        if kept is not None:
            return kept
        spelled = self._texts.get((text, max_tokens))
        if spelled is None:
            spelled = spelling(text)
            if spelled.key != text:
                self._texts[(text, max_tokens)] = spelled
        kept = self._kept.get((spelled.key, max_tokens))
        if kept is not None or spelled.form is None:
            return kept
        key = self._forms.get((spelled.form, max_tokens))
        kept = None if key is None else self._kept.get((key, max_tokens))
        if kept is None or not kept.valid:
            return None
        return kept.renamed(spelled.names)

    def keep(self, prepared: Prepared, max_tokens: int) -> Prepared:
        """Remember a document parsed within `max_tokens` (the one kept already, if another
        request parsed it meanwhile)."""
        spelled = spelling(prepared.text)
        kept = self._kept.setdefault((spelled.key, max_tokens), prepared)
        if spelled.form is not None:
            first = self._forms.get((spelled.form, max_tokens))
            other = None if first is None else self._kept.get((first, max_tokens))
            if other is None or not other.valid:
                self._forms[(spelled.form, max_tokens)] = spelled.key
        return kept

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def bytes(self) -> float:
        return self._kept.bytes + self._texts.bytes + self._forms.bytes
