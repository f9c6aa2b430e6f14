"""A GraphQL request read from a POST body or a GET query string, and its cache key.

Anything that is not a well-formed GraphQL-over-HTTP request is refused here with a JSON error
and its code (a Refusal), before any GraphQL work.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import orjson

from graph.caches import Bounded
from graph.errors import Code

T = TypeVar("T")

Headers = tuple[tuple[bytes, bytes], ...]


class Refusal(Exception):
    """A request refused instead of executed: its status, JSON body and extra headers."""

    def __init__(
        self, status: int, message: str, code: Code | str, headers: Headers = (), **extensions: Any
    ) -> None:
        super().__init__(status, message)
        self.status, self.code, self.headers = status, str(code), headers
        error = {"message": message, "extensions": {"code": str(code), **extensions}}
        self.body = orjson.dumps({"errors": [error]})

    @classmethod
    def malformed(cls, message: str) -> Refusal:
        return cls(400, message, Code.BAD_REQUEST)

    @classmethod
    def answered(cls, status: int, body: bytes, code: Code, headers: Headers = ()) -> Refusal:
        """A refusal whose JSON body is made already."""
        refusal = cls(status, "", code, headers)
        refusal.body = body
        return refusal


def document_hash(query: str) -> str:
    """The Apollo persisted-query id of a document: the SHA-256 of its text, in hex."""
    return hashlib.sha256(query.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class GraphQLRequest:
    query: str | None
    variables: dict[str, Any] | None
    operation_name: str | None
    persisted_hash: str | None = None

    def key(self, release: bytes, document: str) -> bytes:
        """Hex digest of (release, document hash, operation name, variables with sorted keys)."""
        name = b"\x00" if self.operation_name is None else b"\x01" + self.operation_name.encode()
        key = hashlib.blake2b(digest_size=16)
        key.update(b"%s\x00%s\x00%s\x00" % (release, document.encode(), name))
        if self.variables:
            key.update(orjson.dumps(self.variables, option=orjson.OPT_SORT_KEYS))
        return key.hexdigest().encode()


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

    def document_hash(self, query: str) -> str:
        return self._remember("hash", query.encode(), lambda raw: hashlib.sha256(raw).hexdigest())
