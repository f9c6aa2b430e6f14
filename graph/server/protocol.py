"""GraphQL over HTTP: which media type an answer is sent as, which bodies are accepted, and the
status that goes with an answer (https://graphql.github.io/graphql-over-http/draft/)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from graph.errors import Code

JSON = b"application/json"
GRAPHQL_RESPONSE = b"application/graphql-response+json"


@dataclass(frozen=True, slots=True)
class Media:
    """How answers are sent to a client: `application/graphql-response+json` when it asks for
    it (request errors are then 400 and carry no `data`), else `application/json` (200)."""

    content_type: tuple[bytes, bytes]
    graphql_response: bool
    html: bool  # the client takes HTML: a browser, which gets GraphiQL


AS_JSON = Media((b"content-type", JSON), graphql_response=False, html=False)
AS_GRAPHQL_RESPONSE = Media((b"content-type", GRAPHQL_RESPONSE), graphql_response=True, html=False)


@lru_cache(maxsize=256)
def negotiate(accept: bytes) -> Media:
    """The media type of answers for this Accept header.

    application/graphql-response+json when the client lists it at least as high as
    application/json; application/json otherwise, also for `*/*`, no Accept, or none of ours
    (the spec's legacy clients).
    """
    json_q = response_q = -1.0
    html = False
    for part in accept.lower().split(b","):
        media, _, params = part.partition(b";")
        media, q = media.strip(), _quality(params)
        if media == GRAPHQL_RESPONSE:
            response_q = max(response_q, q)
        elif media in (JSON, b"application/*", b"*/*"):
            json_q = max(json_q, q if media == JSON else q - 0.0001)  # the exact type first
        elif media == b"text/html" and q > 0:
            html = True
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


@lru_cache(maxsize=64)
def body_type_refusal(content_type: bytes) -> tuple[int, str, Code] | None:
    """Why a POST with this Content-Type is refused (status, message, code), or None.

    Only JSON in UTF-8 is a GraphQL request: a form or text/plain body (what a page on another
    site can send without a CORS preflight) never runs.
    """
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
    str(Code.REQUEST_TIMEOUT): 504,
}
