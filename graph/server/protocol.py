"""GraphQL over HTTP (https://graphql.github.io/graphql-over-http/draft/): a request read from a
POST body or a GET query string, or a batch; the media type an answer is sent as, and the status
that goes with it; and every refusal, as JSON with its code, before any GraphQL work.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import orjson
from graphql import GraphQLError
from graphql.language import Lexer, Source, TokenKind
from starlette.types import Message, Receive, Send

from graph.caches import Bounded, fixed
from graph.engine.cost import report
from graph.errors import Code

log = logging.getLogger("leadgreen")
T = TypeVar("T")
K = TypeVar("K", bytes, str)

# --- Media types and statuses ----------------------------------------------------------------

_UNSEEN: Any = object()
# What a remembered entry costs besides its key.
_ENTRY_BYTES = 200


def remembered(entries: int, max_key: int = 256) -> Callable[[Callable[[K], T]], Callable[[K], T]]:
    """A memo of a function of one header's value (or a client's address): clients send a
    handful of distinct values, each read once. Values up to `max_key` long are remembered,
    about `entries` of them, in a `Bounded` cache."""
    size = max_key + _ENTRY_BYTES

    def remembering(read: Callable[[K], T]) -> Callable[[K], T]:
        memo: Bounded[K, T] = Bounded(entries * size, fixed(size))

        @functools.wraps(read)
        def reading(value: K) -> T:
            found: T = memo.get(value, _UNSEEN)
            if found is _UNSEEN:
                found = read(value)
                if len(value) <= max_key:
                    memo[value] = found
            return found

        return reading

    return remembering


JSON = b"application/json"
GRAPHQL_RESPONSE = b"application/graphql-response+json"
EVENT_STREAM = b"text/event-stream"


@dataclass(frozen=True, slots=True)
class Media:
    """How answers are sent to a client: `application/graphql-response+json` when it asks for
    it (request errors are then 400 and carry no `data`), else `application/json` (200)."""

    content_type: tuple[bytes, bytes]
    graphql_response: bool
    html: bool  # the client takes HTML: a browser, which gets GraphiQL
    # The client prefers text/event-stream to JSON: GraphQL over SSE answers it.
    event_stream: bool = False


AS_JSON = Media((b"content-type", JSON), graphql_response=False, html=False)
AS_GRAPHQL_RESPONSE = Media((b"content-type", GRAPHQL_RESPONSE), graphql_response=True, html=False)
# A stream's refusals (before it begins) are JSON.
AS_EVENT_STREAM = Media(AS_JSON.content_type, graphql_response=False, html=False, event_stream=True)


def combined(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    """A list-valued request header (Accept, Accept-Encoding) as one value: sent more than
    once, its fields joined with commas, as HTTP combines them (RFC 9110, 5.3); None when it
    was not sent."""
    found = None
    for each, value in headers:
        if each == name:
            found = value if found is None else joined(found, value)
    return found


def joined(before: bytes, value: bytes) -> bytes:
    """A list-valued header's fields so far, and one more."""
    return b"%s, %s" % (before, value) if before else value


def media_of(headers: Sequence[tuple[bytes, bytes]]) -> Media:
    """The media type of answers for a request's headers (`negotiate`; JSON without Accept)."""
    accept = combined(headers, b"accept")
    return negotiate(accept) if accept else AS_JSON


@remembered(entries=256)
def negotiate(accept: bytes) -> Media:
    """The media type of answers for this Accept header.

    application/graphql-response+json when the client lists it at least as high as
    application/json; application/json otherwise, also for `*/*`, no Accept, or none of ours
    (the spec's legacy clients). An event stream (GraphQL over SSE) when the client ranks
    text/event-stream above both, or as high and before them: `text/event-stream` alone (the
    graphql-sse client's) is a stream, urql's `application/graphql-response+json, ...,
    application/json, text/event-stream, multipart/mixed` is not.
    """
    json_q = response_q = stream_q = -1.0
    html = stream_first = False
    for part in accept.lower().split(b","):
        media, _, params = part.partition(b";")
        media, q = media.strip(), _quality(params)
        if media == GRAPHQL_RESPONSE:
            response_q = max(response_q, q)
        elif media in (JSON, b"application/*", b"*/*"):
            json_q = max(json_q, q if media == JSON else q - 0.0001)  # the exact type first
        elif media == EVENT_STREAM:
            stream_first = stream_first or max(json_q, response_q) < 0
            stream_q = max(stream_q, q)
        elif media == b"text/html" and q > 0:
            html = True
    ours = max(json_q, response_q)
    if stream_q > 0 and (stream_q > ours or (stream_q == ours and stream_first)):
        return AS_EVENT_STREAM
    if response_q > 0 and response_q >= json_q:
        return AS_GRAPHQL_RESPONSE
    return Media(AS_JSON.content_type, False, html) if html else AS_JSON


def _quality(params: bytes) -> float:
    for param in params.split(b";"):
        name, _, value = param.partition(b"=")
        if name.strip() == b"q":
            try:
                return float(value.strip())
            except ValueError:
                return 0.0
    return 1.0


def body_type_refusal(content_type: bytes) -> tuple[int, str, Code] | None:
    """Why a POST with this Content-Type is refused (status, message, code), or None.

    Only JSON in UTF-8 is a GraphQL request: a form or text/plain body (what a page on another
    site can send without a CORS preflight) never runs.
    """
    return None if content_type == JSON else _body_type_refusal(content_type)


@remembered(entries=64)
def _body_type_refusal(content_type: bytes) -> tuple[int, str, Code] | None:
    media, _, params = content_type.partition(b";")
    if media.strip().lower() != JSON:
        shown = media.strip().decode("latin-1") or "none"
        return (
            415,
            f"Send the request as application/json (the Content-Type was {shown}).",
            Code.UNSUPPORTED_MEDIA_TYPE,
        )
    for param in params.split(b";"):
        name, _, value = param.partition(b"=")
        if name.strip().lower() == b"charset" and value.strip(b' "').lower() not in (
            b"utf-8",
            b"utf8",
        ):
            return 415, "Send the request body in UTF-8.", Code.UNSUPPORTED_MEDIA_TYPE
    return None


def request_error(errors: list[dict[str, object]]) -> bool:
    """Errors from before execution (parsing, validation, limits, variables): none has a path."""
    return all("path" not in error for error in errors)


# The codes that say more than "the request failed", with their status whatever the media type.
FAULT_STATUS = {
    str(Code.THROTTLED): 429,
    str(Code.DATABASE_UNAVAILABLE): 503,
    str(Code.PREPARATION_BUSY): 503,
    str(Code.REQUEST_TIMEOUT): 504,
}


# --- Requests and refusals ------------------------------------------------------------------


Headers = tuple[tuple[bytes, bytes], ...]


class Refusal(Exception):
    """A request refused instead of executed: its status, JSON body and extra headers. Status
    200 marks a GraphQL request error (the document cannot be run as asked: no operation can be
    chosen, a persisted query not held), answered as a document that fails validation is."""

    def __init__(
        self, status: int, message: str, code: Code | str, headers: Headers = (), **extensions: Any
    ) -> None:
        super().__init__(status, message)
        self.status, self.code, self.headers = status, str(code), headers
        self.body = error_body(message, code, **extensions)

    @classmethod
    def malformed(cls, message: str) -> Refusal:
        return cls(400, message, Code.BAD_REQUEST)

    @classmethod
    def answered(cls, status: int, body: bytes, code: Code, headers: Headers = ()) -> Refusal:
        """A refusal whose JSON body is made already."""
        refusal = cls(status, "", code, headers)
        refusal.body = body
        return refusal

    def answer(self, media: Media) -> tuple[int, bytes]:
        """The status and body it is sent with: a request error is 400 without `data` in
        application/graphql-response+json, 200 with `data: null` in application/json (what
        clients written before the GraphQL-over-HTTP spec expect)."""
        if self.status != 200:
            return self.status, self.body
        if media.graphql_response:
            return 400, self.body
        return 200, b'{"data":null,' + self.body.removeprefix(b"{")


def error_body(message: str, code: Code | str, **extensions: Any) -> bytes:
    """A refusal's body as /graphql answers one: one error with its code, and the cost report
    of a request refused before any cost was known (nothing estimated, nothing run)."""
    return refusal_body([{"message": message, "extensions": {"code": str(code), **extensions}}])


def refusal_body(
    errors: Sequence[Mapping[str, Any]],
    requested: int | None = None,
    throttle: dict[str, Any] | None = None,
    data: bool = False,
) -> bytes:
    """The body of a refusal with these errors (formatted), its cost report saying what was
    estimated and the bucket that was charged; with `data: null` first when `data`."""
    body: dict[str, Any] = {"data": None} if data else {}
    body["errors"] = errors
    body["extensions"] = report(requested, None, throttle)
    return orjson.dumps(body)


def document_hash(query: str) -> str:
    """The Apollo persisted-query id of a document: the SHA-256 of its text, in hex."""
    return hashlib.sha256(query.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class GraphQLRequest:
    """A GraphQL request; `document` names its document (the SHA-256 of its text, or the hash
    a persisted query is sent by) and `identity` digests what its cache key holds besides the
    release, both made once, when it is read (a request read again is remembered: `Reader`)."""

    query: str | None
    variables: dict[str, Any] | None
    operation_name: str | None
    persisted_hash: str | None = None
    document: str = field(init=False, compare=False, repr=False)
    identity: bytes = field(init=False, compare=False, repr=False)
    first: str | None = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        document = self.persisted_hash or document_hash(self.query or "")
        first = None
        if self.query is not None and self.operation_name is None:
            # (a text sent with a hash is checked against it later: not remembered by it)
            first = (
                first_operation(self.query)
                if self.persisted_hash
                else operation_of(document, self.query)
            )
        name = b"\x00" if self.operation_name is None else b"\x01" + self.operation_name.encode()
        identity = hashlib.blake2b(digest_size=16)
        identity.update(b"%s\x00%s\x00" % (document.encode(), name))
        if self.variables:
            identity.update(orjson.dumps(self.variables, option=orjson.OPT_SORT_KEYS))
        object.__setattr__(self, "document", document)
        object.__setattr__(self, "identity", identity.digest())
        object.__setattr__(self, "first", first)

    def label(self, query: str | None) -> str:
        """The name of the operation the request runs, for logs and metrics: its
        `operationName`, else the name of its document's first operation ("": anonymous, or
        none found). `query` is its document's text (a persisted query's, when sent by hash)."""
        if self.operation_name is not None:
            return self.operation_name
        if self.query is None and query is not None:
            return operation_of(self.document, query) or ""
        return self.first or ""

    def key(self, release: bytes) -> bytes:
        """Hex digest of (release, document, operation name, variables with sorted keys)."""
        return (
            hashlib.blake2b(b"%s\x00%s" % (release, self.identity), digest_size=16)
            .hexdigest()
            .encode()
        )


# Where a document's first operation is looked for: among its first tokens (fragments may come
# first; a document is read whole only when it runs).
NAME_TOKENS = 256
_OPERATION_TYPES = frozenset({"query", "mutation", "subscription"})
# Documents' first operations, by document id (what is kept: the id and a name).
_OPERATIONS: Bounded[str, str | None] = Bounded(1024 * 300, fixed(300))


def operation_of(document: str, query: str) -> str | None:
    """`first_operation(query)`, remembered by the document's id."""
    return _OPERATIONS.remember(document, lambda: first_operation(query))


def first_operation(query: str) -> str | None:
    """The name of the document's first operation, as GraphQL's lexer reads it (a comment or a
    string is no name); None when it is anonymous, or when none is found in `NAME_TOKENS`."""
    lexer = Lexer(Source(query))
    depth, fragment = 0, False
    try:
        for _ in range(NAME_TOKENS):
            token = lexer.advance()
            if token.kind is TokenKind.EOF:
                return None
            if token.kind is TokenKind.BRACE_L:
                if depth == 0 and not fragment:
                    return None  # `{ ... }`: an anonymous query
                depth += 1
            elif token.kind is TokenKind.BRACE_R:
                depth -= 1
                fragment = fragment and depth > 0
            elif depth == 0 and token.kind is TokenKind.NAME:
                if token.value == "fragment":
                    fragment = True
                elif not fragment and token.value in _OPERATION_TYPES:
                    name = lexer.advance()
                    return name.value if name.kind is TokenKind.NAME else None
    except GraphQLError:  # not GraphQL: the engine says so
        return None
    return None


# A batch: the items of a JSON array body, read one by one once batching is known to be on.
Batch = tuple[object, ...]


def from_fields(
    query: object, variables: object, operation_name: object, extensions: object
) -> GraphQLRequest:
    """The request these parameters make, as the GraphQL-over-HTTP spec reads them."""
    for name, value, kind in (
        ("query", query, str),
        ("variables", variables, dict),
        ("operationName", operation_name, str),
        ("extensions", extensions, dict),
    ):
        if not isinstance(value, kind | None):
            article = "an object" if kind is dict else "a string"
            raise Refusal.malformed(f"`{name}` must be {article} or null.")
    persisted = extensions.get("persistedQuery") if isinstance(extensions, dict) else None
    if query == "":
        raise Refusal.malformed("The request's `query` is empty.")
    if persisted is None:
        if query is None:
            raise Refusal.malformed("The request has no `query`.")
        return GraphQLRequest(query, variables, operation_name)  # type: ignore[arg-type]
    sha = persisted.get("sha256Hash") if isinstance(persisted, dict) else None
    if not isinstance(persisted, dict) or persisted.get("version") != 1:
        raise Refusal(400, "Unsupported persisted query version", Code.BAD_USER_INPUT)
    if not isinstance(sha, str):
        raise Refusal(400, "persistedQuery.sha256Hash must be a string", Code.BAD_USER_INPUT)
    return GraphQLRequest(query, variables, operation_name, sha.lower())  # type: ignore[arg-type]


def from_item(item: object) -> GraphQLRequest:
    """One request of a batch, or of a JSON body."""
    if not isinstance(item, dict):
        raise Refusal.malformed("The body must be a JSON object (a GraphQL request).")
    return from_fields(
        item.get("query"), item.get("variables"), item.get("operationName"), item.get("extensions")
    )


def from_json_body(body: bytes) -> GraphQLRequest | Batch:
    """The request in a JSON body, or the items of a batch (a JSON array)."""
    if not body:
        raise Refusal.malformed("The body is empty; send a JSON object with a `query`.")
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        try:
            body.decode()
        except UnicodeDecodeError:
            raise Refusal.malformed("The body is not valid UTF-8.") from None
        raise Refusal.malformed(f"The body is not valid JSON: {exc.msg}.") from None
    if isinstance(data, list):
        return tuple(data)
    return from_item(data)


def from_query_string(query_string: bytes) -> GraphQLRequest | None:
    """The request in a GET query string; None when it names neither a query nor a persisted
    query (a browser opening GraphiQL, say)."""
    try:
        params = dict(parse_qsl(query_string.decode(), keep_blank_values=True, errors="strict"))
    except UnicodeDecodeError:
        raise Refusal.malformed("The query string is not valid UTF-8.") from None
    if "query" not in params and "extensions" not in params:
        return None
    variables = _json_param(params, "variables")
    extensions = _json_param(params, "extensions")
    return from_fields(params.get("query"), variables, params.get("operationName"), extensions)


def _json_param(params: dict[str, str], name: str) -> object:
    if not params.get(name):
        return None
    try:
        return orjson.loads(params[name])
    except orjson.JSONDecodeError:
        raise Refusal.malformed(f"`{name}` is not valid JSON.") from None


# Requests repeat (that is what makes them cacheable), and reading one (unquoting a URL,
# decoding JSON, hashing the document) costs more than the rest of a cache hit: the last few
# small ones are remembered, within a byte budget. Nobody changes a request once read.
MEMO_MAX_BYTES = 16 * 1024
# What a remembered request holds per byte of its text, as Python objects.
_BYTES_PER_BYTE = 6


class Reader:
    """Reads requests, remembering small ones within `max_bytes`."""

    def __init__(self, max_bytes: int) -> None:
        self._read: Bounded[tuple[str, bytes], tuple[Any, int]] = Bounded(
            max_bytes, lambda entry: entry[1]
        )

    def _remember(self, kind: str, raw: bytes, read: Callable[[bytes], T]) -> T:
        if len(raw) > MEMO_MAX_BYTES:
            return read(raw)
        key = (kind, raw)
        found = self._read.get(key)
        if found is None:
            found = self._read[key] = (read(raw), _BYTES_PER_BYTE * len(raw) + 200)
        value: T = found[0]
        return value

    def json_body(self, body: bytes) -> GraphQLRequest | Batch:
        return self._remember("json", body, from_json_body)

    def query_string(self, query_string: bytes) -> GraphQLRequest | None:
        return self._remember("get", query_string, from_query_string)


# --- A POST's body --------------------------------------------------------------------------


class BodyTooLarge(Exception):
    pass


async def read_body(receive: Receive, limit: int) -> bytes:
    message = await receive()
    body: bytes = message.get("body", b"")
    if not message.get("more_body"):
        if len(body) > limit:
            raise BodyTooLarge
        return body
    chunks = [body]
    size = len(body)
    while message.get("more_body"):
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json_body(
    receive: Receive, content_type: bytes, length: bytes | None, limit: int
) -> bytes:
    """The body of a POST, once its type and size are known to be acceptable."""
    refused = body_type_refusal(content_type)
    if refused is not None:
        raise Refusal(*refused)
    if length is not None and (not length.isdigit() or int(length) > limit):
        raise _too_large(limit) if length.isdigit() else Refusal.malformed("Bad Content-Length.")
    try:
        return await read_body(receive, limit)
    except BodyTooLarge:
        raise _too_large(limit) from None


def _too_large(limit: int) -> Refusal:
    message = f"The request body is larger than the limit of {limit} bytes."
    return Refusal(413, message, Code.BODY_TOO_LARGE)


# --- Batches --------------------------------------------------------------------------------


class Collect:
    """A `send` that keeps the response, for the items of a batch."""

    def __init__(self) -> None:
        self.body = b""

    async def __call__(self, message: Message) -> None:
        self.body += message.get("body", b"")


async def answer_batch(
    items: Batch,
    limit: int,
    media: Media,
    answer: Callable[[GraphQLRequest, Send], Awaitable[None]],
) -> bytes:
    """The answers of the batch's requests, each as `answer` sends it (a refusal as its body),
    as a JSON array; refused as a whole when batching is off or the batch is too large."""
    if limit == 0:
        raise Refusal(
            400,
            "Batching is off: send one operation (a JSON object) per request.",
            Code.BATCHING_DISABLED,
        )
    if not 1 <= len(items) <= limit:
        raise Refusal(
            400,
            f"A batch holds 1 to {limit} operations; this one has {len(items)}.",
            Code.BATCH_TOO_LARGE,
        )
    requests = [from_item(item) for item in items]
    bodies = []
    for request in requests:
        collect = Collect()
        try:
            await answer(request, collect)
        except Refusal as refusal:
            collect.body = refusal.answer(media)[1]
        bodies.append(collect.body)
    return b"[%s]" % b",".join(bodies)
