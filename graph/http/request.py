"""A GraphQL request read from a POST body or a GET query string, and its cache key."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl

import orjson


class BadRequest(Exception):
    """A request refused before execution, with the response to send."""

    def __init__(self, status: int, body: bytes, content_type: bytes = b"application/json"):
        super().__init__(status, body)
        self.status, self.body, self.content_type = status, body, content_type

    @classmethod
    def graphql(cls, status: int, message: str, code: str) -> BadRequest:
        error = {"message": message, "extensions": {"code": code}}
        return cls(status, orjson.dumps({"errors": [error]}))

    @classmethod
    def text(cls, status: int, reason: str) -> BadRequest:
        """As strawberry words it (plain text), for the cases strawberry's view also refuses."""
        return cls(status, reason.encode(), b"text/plain; charset=utf-8")


def document_hash(query: str) -> str:
    """The Apollo persisted-query id of a document: the SHA-256 of its text, in hex."""
    return _memo_hash(query) if len(query) <= MEMO_MAX_BYTES else _sha256(query)


def _sha256(query: str) -> str:
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


def _from_fields(
    query: object, variables: object, operation_name: object, extensions: object
) -> GraphQLRequest | None:
    if not (
        isinstance(query, str | None)
        and isinstance(variables, dict | None)
        and isinstance(operation_name, str | None)
        and isinstance(extensions, dict | None)
    ):
        return None
    persisted = extensions.get("persistedQuery") if extensions else None
    if persisted is None:
        return None if query is None else GraphQLRequest(query, variables, operation_name)
    sha = persisted.get("sha256Hash") if isinstance(persisted, dict) else None
    if not isinstance(persisted, dict) or persisted.get("version") != 1:
        raise BadRequest.graphql(400, "Unsupported persisted query version", "BAD_USER_INPUT")
    if not isinstance(sha, str):
        raise BadRequest.graphql(
            400, "persistedQuery.sha256Hash must be a string", "BAD_USER_INPUT"
        )
    return GraphQLRequest(query, variables, operation_name, sha.lower())


def from_json_body(body: bytes) -> GraphQLRequest | None:
    """The request in a JSON body; None when it is not one plain GraphQL request.

    None hands the request to strawberry's view, which answers the odd cases (bad JSON, a
    batch, no query) as it always has.
    """
    return _memo_json(body) if len(body) <= MEMO_MAX_BYTES else _from_json(body)


def _from_json(body: bytes) -> GraphQLRequest | None:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    return _from_fields(
        data.get("query"), data.get("variables"), data.get("operationName"), data.get("extensions")
    )


def from_query_string(query_string: bytes) -> GraphQLRequest | None:
    """The request in a GET query string; None when there is none (e.g. GraphiQL) or it is odd."""
    if len(query_string) <= MEMO_MAX_BYTES:
        return _memo_query_string(query_string)
    return _from_query_string(query_string)


def _from_query_string(query_string: bytes) -> GraphQLRequest | None:
    params = dict(parse_qsl(query_string.decode("latin-1"), keep_blank_values=True))
    try:
        variables = orjson.loads(params["variables"]) if params.get("variables") else None
        extensions = orjson.loads(params["extensions"]) if params.get("extensions") else None
    except orjson.JSONDecodeError:
        return None
    return _from_fields(params.get("query"), variables, params.get("operationName"), extensions)


# Requests repeat (that is what makes them cacheable), and reading one (unquoting a URL,
# decoding JSON, hashing the document) costs more than the rest of a cache hit: the last few
# thousand small ones are remembered. Nobody changes a request once read.
MEMO_MAX_BYTES = 16 * 1024
_memo_json = lru_cache(maxsize=1024)(_from_json)
_memo_query_string = lru_cache(maxsize=1024)(_from_query_string)
_memo_hash = lru_cache(maxsize=1024)(_sha256)
