"""HTTP caching of /graphql: ETag and 304 on GET, Cache-Control, automatic persisted queries,
gzip, and the requests handed on to strawberry's view."""

from __future__ import annotations

import gzip
import hashlib
import uuid

import brotli
import orjson
import pytest

from graph.server.documents import MODEL_PAGE
from tests.conftest import app_client
from tests.reports import UNCOSTED
from tests.test_cache import ANSWER, QUERY, ingest_newer, needs_redis, seen

pytestmark = pytest.mark.anyio

NOT_FOUND = {
    "data": None,
    "errors": [
        {"message": "PersistedQueryNotFound", "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}
    ],
    "extensions": UNCOSTED,
}


def sha(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()


def persisted(query: str) -> dict[str, object]:
    return {"persistedQuery": {"version": 1, "sha256Hash": sha(query)}}


def get_params(query: str | None, extensions: dict[str, object] | None = None) -> dict[str, str]:
    params = {} if query is None else {"query": query}
    if extensions is not None:
        params["extensions"] = orjson.dumps(extensions).decode()
    return params


async def test_get_is_cacheable_with_an_etag_and_304(synthetic_db, settings) -> None:
    async with app_client(settings, http_max_age=300) as (_, client):
        first = await client.get("/graphql", params={"query": QUERY})
        etag = first.headers["etag"]
        revalidated = await client.get(
            "/graphql", params={"query": QUERY}, headers={"if-none-match": etag}
        )
        other = await client.get(
            "/graphql", params={"query": QUERY}, headers={"if-none-match": 'W/"other"'}
        )
    assert seen(first) == (200, "MISS", ANSWER)
    assert etag.startswith('W/"') and len(etag) == 36
    assert first.headers["cache-control"] == "public, max-age=300"
    assert (revalidated.status_code, revalidated.content) == (304, b"")
    assert (revalidated.headers["etag"], revalidated.headers["cache-control"]) == (
        etag,
        "public, max-age=300",
    )
    assert (seen(other), other.headers["etag"]) == ((200, "HIT", ANSWER), etag)


async def test_a_new_release_changes_the_etag(synthetic_db, settings, tmp_path) -> None:
    async with app_client(settings, release_poll_seconds=0) as (_, client):
        before = await client.get("/graphql", params={"query": QUERY})
        await ingest_newer(synthetic_db, tmp_path)
        after = await client.get(
            "/graphql", params={"query": QUERY}, headers={"if-none-match": before.headers["etag"]}
        )
    assert after.status_code == 200
    assert after.headers["etag"] != before.headers["etag"]
    assert after.json()["data"]["model"]["configurations"][0] == {"energyPerTokenJoules": 0.25}


async def test_post_answers_carry_no_http_caching(synthetic_db, settings) -> None:
    async with app_client(settings) as (_, client):
        response = await client.post("/graphql", json={"query": QUERY})
    assert "etag" not in response.headers and "cache-control" not in response.headers


async def test_errors_are_not_cacheable(synthetic_db, settings) -> None:
    async with app_client(settings) as (_, client):
        response = await client.get("/graphql", params={"query": "{ model { name } }"})
    assert response.headers["cache-control"] == "no-store"
    assert "etag" not in response.headers
    assert response.json()["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT"}


async def test_persisted_query_not_found_register_and_hit(synthetic_db, settings) -> None:
    query = f"# {uuid.uuid4()}\n{QUERY}"
    async with app_client(settings) as (_, client):
        unknown = await client.get("/graphql", params=get_params(None, persisted(query)))
        registered = await client.post(
            "/graphql", json={"query": query, "extensions": persisted(query)}
        )
        by_hash = await client.get("/graphql", params=get_params(None, persisted(query)))
        by_post = await client.post("/graphql", json={"extensions": persisted(query)})
    assert (unknown.status_code, unknown.json()) == (200, NOT_FOUND)
    assert unknown.headers["cache-control"] == "no-store"
    assert seen(registered) == (200, "MISS", ANSWER)
    assert seen(by_hash) == (200, "HIT", ANSWER)
    assert by_hash.headers["cache-control"] == "public, max-age=60"
    assert seen(by_post) == (200, "HIT", ANSWER)


async def test_persisted_query_refusals(synthetic_db, settings) -> None:
    wrong = {"persistedQuery": {"version": 1, "sha256Hash": sha("{ gpus { name } }")}}
    version_2 = {"persistedQuery": {"version": 2, "sha256Hash": sha(QUERY)}}
    async with app_client(settings) as (_, client):
        mismatch = await client.post("/graphql", json={"query": QUERY, "extensions": wrong})
        version = await client.post("/graphql", json={"query": QUERY, "extensions": version_2})
    async with app_client(settings, persisted_queries=0) as (_, client):
        off = await client.post("/graphql", json={"query": QUERY, "extensions": persisted(QUERY)})

    assert (mismatch.status_code, mismatch.json()) == (
        400,
        refusal("provided sha does not match query", "BAD_USER_INPUT"),
    )
    assert (version.status_code, version.json()) == (
        400,
        refusal("Unsupported persisted query version", "BAD_USER_INPUT"),
    )
    assert (off.status_code, off.json()) == (
        200,
        {"data": None, **refusal("PersistedQueryNotSupported", "PERSISTED_QUERY_NOT_SUPPORTED")},
    )


@needs_redis
async def test_persisted_queries_are_shared_through_redis(synthetic_db, settings) -> None:
    query = f"# {uuid.uuid4()}\n{QUERY}"
    async with app_client(settings, cache="redis") as (_, first):
        await first.post("/graphql", json={"query": query, "extensions": persisted(query)})
    async with app_client(settings, cache="redis") as (_, second):
        by_hash = await second.get("/graphql", params=get_params(None, persisted(query)))
    assert seen(by_hash) == (200, "HIT", ANSWER)


async def test_large_answers_are_gzipped_when_accepted(synthetic_db, settings) -> None:
    body = {"query": MODEL_PAGE, "variables": {"slug": "tiny-1b"}}
    async with app_client(settings, compress_min_bytes=1024) as (_, client):
        plain = await client.post("/graphql", json=body, headers={"accept-encoding": "identity"})
        for _ in range(2):  # the miss compresses on the fly, the hit sends the stored gzip
            zipped = await client.post("/graphql", json=body, headers={"accept-encoding": "gzip"})
            assert zipped.headers["content-encoding"] == "gzip"
            assert zipped.headers["vary"] == "accept-encoding"
            assert int(zipped.headers["content-length"]) < len(plain.content)
            assert zipped.content == plain.content  # httpx decodes it
        refused = await client.post(
            "/graphql", json=body, headers={"accept-encoding": "gzip;q=0, identity"}
        )
        small = await client.post(
            "/graphql", json={"query": QUERY}, headers={"accept-encoding": "gzip"}
        )
    assert len(plain.content) >= 1024 and "content-encoding" not in plain.headers
    assert "content-encoding" not in refused.headers
    assert "content-encoding" not in small.headers and "vary" not in small.headers


async def test_stored_answers_keep_their_compressed_copies(synthetic_db, settings) -> None:
    """Each coding of a stored answer is made once, by the first client that accepts it."""
    body = {"query": MODEL_PAGE, "variables": {"slug": "tiny-1b"}}
    async with app_client(settings, compress_min_bytes=1024) as (app, client):
        plain = await client.post("/graphql", json=body, headers={"accept-encoding": "identity"})
        [stored] = app.state.graphql.cache._entries.values()
        assert (stored.body, stored.gzipped, stored.brotli) == (plain.content, None, None)
        for coding in ("br", "gzip", "br"):
            sent = await client.post("/graphql", json=body, headers={"accept-encoding": coding})
            assert (sent.headers["content-encoding"], sent.content) == (coding, plain.content)
    assert gzip.decompress(stored.gzipped) == brotli.decompress(stored.brotli) == plain.content


def refusal(message: str, code: str) -> dict[str, object]:
    return {"errors": [{"message": message, "extensions": {"code": code}}], "extensions": UNCOSTED}


@pytest.mark.parametrize(
    ("content", "headers", "status", "body"),
    [
        (
            b"{not json",
            {"content-type": "application/json"},
            400,
            refusal(
                "The body is not valid JSON: unexpected character, expected a string key.",
                "BAD_REQUEST",
            ),
        ),
        (
            b'[{"query": "{ gpus { name } }"}]',
            {"content-type": "application/json"},
            400,
            refusal(
                "Batching is off: send one operation (a JSON object) per request.",
                "BATCHING_DISABLED",
            ),
        ),
        (
            b"{}",
            {"content-type": "application/json"},
            400,
            refusal("The request has no `query`.", "BAD_REQUEST"),
        ),
        (
            b"{ gpus { name } }",
            {"content-type": "text/plain"},
            415,
            refusal(
                "Send the request as application/json (the Content-Type was text/plain).",
                "UNSUPPORTED_MEDIA_TYPE",
            ),
        ),
    ],
)
async def test_odd_requests_get_json_refusals(
    synthetic_db, settings, content, headers, status, body
) -> None:
    """What strawberry's view answered in plain text is refused as JSON, with a code."""
    async with app_client(settings) as (_, client):
        response = await client.post("/graphql", content=content, headers=headers)
    assert (response.status_code, response.json()) == (status, body)
    assert response.headers["content-type"] == "application/json"


async def test_a_body_past_the_limit_is_refused(synthetic_db, settings) -> None:
    async with app_client(settings, max_body_bytes=100) as (_, client):
        response = await client.post("/graphql", json={"query": QUERY + " " * 100})
    assert (response.status_code, response.json()) == (
        413,
        refusal("The request body is larger than the limit of 100 bytes.", "BODY_TOO_LARGE"),
    )


async def test_get_refuses_mutations(synthetic_db, settings) -> None:
    async with app_client(settings) as (_, client):
        response = await client.get("/graphql", params={"query": "mutation { x }"})
    assert (response.status_code, response.headers["allow"], response.json()) == (
        405,
        "POST",
        refusal(
            "Only queries can be sent with GET; send other operations with POST.",
            "METHOD_NOT_ALLOWED",
        ),
    )


async def test_cors_covers_graphql_and_the_other_routes(synthetic_db, settings) -> None:
    origin = {"origin": "https://app.example"}
    async with app_client(settings, cors_origins=["https://app.example"]) as (_, client):
        graphql = await client.post("/graphql", json={"query": QUERY}, headers=origin)
        health = await client.get("/healthz", headers=origin)
    assert graphql.headers["access-control-allow-origin"] == "https://app.example"
    assert health.headers["access-control-allow-origin"] == "https://app.example"
