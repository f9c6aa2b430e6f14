"""Compression: the coding a client gets, answers and documents in brotli or gzip with one weak
ETag in every coding, `Vary: Accept-Encoding` on 200s and 304s, each kept coding made once."""

from __future__ import annotations

import gzip
import uuid

import brotli
import pytest

from graph.server.documents import MODEL_PAGE
from graph.server.responses import FRESH_BROTLI, Answer, Encoded, choose, compress
from tests.conftest import app_client
from tests.test_cache import TINY_FILE

pytestmark = pytest.mark.anyio

PAGE = {"query": MODEL_PAGE, "variables": {"slug": "tiny-1b"}}
DECODE = {"br": brotli.decompress, "gzip": gzip.decompress}


@pytest.mark.parametrize(
    ("accept_encoding", "coding"),
    [
        (b"", None),
        (b"identity", None),
        (b"gzip", b"gzip"),
        (b"gzip, deflate, br", b"br"),
        (b"br;q=0.5, gzip", b"gzip"),
        (b"br;q=1.0, gzip;q=1.0", b"br"),
        (b"BR", b"br"),
        (b"*", b"br"),
        (b"*;q=0, gzip", b"gzip"),
        (b"br;q=0, gzip;q=0", None),
        (b"x-gzip", b"gzip"),
        (b"br;q=oops, gzip", b"gzip"),
        (b"deflate", None),
    ],
)
def test_the_coding_a_client_gets(accept_encoding: bytes, coding: bytes | None) -> None:
    assert choose(accept_encoding) == coding


def test_answers_not_kept_are_compressed_cheaply() -> None:
    body = b'{"data":"' + b"z" * 5000 + b'"}'
    fresh = Answer(body)
    assert fresh.encoded(b"br") == compress(body, b"br", kept=False)
    assert brotli.decompress(fresh.encoded(b"br")) == body
    assert fresh.brotli is None  # not kept: nothing stored
    kept = Answer.of(body, 1024)
    assert kept.encoded(b"gzip") is kept.encoded(b"gzip")  # made once
    assert brotli.compress(body, quality=FRESH_BROTLI) == compress(body, b"br", kept=False)


def test_encoded_copies_are_made_once() -> None:
    encoded = Encoded(1024 * 1024)
    body = b"[" + b"1," * 3000 + b"1]"
    first = encoded.get('W/"a"', body, b"br")
    assert encoded.get('W/"a"', b"ignored: the ETag names the content", b"br") is first
    assert brotli.decompress(first) == body


@pytest.mark.parametrize("path", ["/api/v1/index.json", f"/data/{TINY_FILE}"])
async def test_documents_in_every_coding_have_one_etag(synthetic_db, settings, path) -> None:
    async with app_client(settings, compress_min_bytes=64) as (_, client):
        plain = await client.get(path, headers={"accept-encoding": "identity"})
        coded = {
            coding: await client.get(path, headers={"accept-encoding": coding})
            for coding in ("br", "gzip")
        }
        revalidated = await client.get(
            path, headers={"accept-encoding": "br", "if-none-match": plain.headers["etag"]}
        )
    etag = plain.headers["etag"]
    assert etag.startswith('W/"')
    assert "content-encoding" not in plain.headers
    assert plain.headers["vary"] == "accept-encoding"
    for coding, response in coded.items():
        assert response.headers["content-encoding"] == coding
        assert (response.headers["etag"], response.headers["vary"]) == (etag, "accept-encoding")
        assert response.content == plain.content  # httpx decodes it
        assert int(response.headers["content-length"]) < len(plain.content)
    assert (revalidated.status_code, revalidated.headers["etag"]) == (304, etag)
    assert revalidated.headers["vary"] == "accept-encoding"


async def test_graphql_get_answers_in_every_coding_have_one_etag(synthetic_db, settings):
    params = {"query": MODEL_PAGE, "variables": '{"slug": "tiny-1b"}'}
    async with app_client(settings, compress_min_bytes=64) as (_, client):
        plain = await client.get("/graphql", params=params, headers={"accept-encoding": "identity"})
        br = await client.get("/graphql", params=params, headers={"accept-encoding": "br"})
        gz = await client.get("/graphql", params=params, headers={"accept-encoding": "gzip"})
        not_modified = await client.get(
            "/graphql",
            params=params,
            headers={"accept-encoding": "gzip", "if-none-match": br.headers["etag"]},
        )
    assert plain.headers["etag"] == br.headers["etag"] == gz.headers["etag"]
    assert [r.headers.get("content-encoding") for r in (plain, br, gz)] == [None, "br", "gzip"]
    assert br.content == gz.content == plain.content
    assert {r.headers["vary"] for r in (plain, br, gz, not_modified)} == {"accept, accept-encoding"}
    assert not_modified.status_code == 304


async def test_answers_without_the_cache_are_compressed_per_response(synthetic_db, settings):
    async with app_client(settings, cache="off", compress_min_bytes=64) as (_, client):
        plain = await client.post("/graphql", json=PAGE, headers={"accept-encoding": "identity"})
        br = await client.post("/graphql", json=PAGE, headers={"accept-encoding": "br"})
    assert (br.headers["content-encoding"], br.content) == ("br", plain.content)


def test_redis_gets_the_body_alone() -> None:
    answer = Answer.of(b'{"data":"' + b"z" * 2000 + b'"}', 1024)
    answer.encoded(b"br")
    assert answer.pack() == answer.body
    assert Answer.unpack(answer.pack()) == answer
    assert Answer.unpack(answer.pack()).kept


@pytest.mark.redis
async def test_answers_shared_through_redis_are_compressed_once_each(synthetic_db, settings):
    """Redis holds the body; each process makes its own compressed copies, once."""
    body = {**PAGE, "query": f"# {uuid.uuid4()}\n{MODEL_PAGE}"}
    identity = {"accept-encoding": "identity"}
    async with app_client(settings, cache="redis", compress_min_bytes=64) as (_, first):
        plain = await first.post("/graphql", json=body, headers=identity)
    async with app_client(settings, cache="redis", compress_min_bytes=64) as (app, second):
        shared = await second.post("/graphql", json=body, headers={"accept-encoding": "br"})
        [kept] = app.state.graphql.cache.local._entries.values()
    assert (plain.headers["x-cache"], shared.headers["x-cache"]) == ("MISS", "HIT")
    assert (shared.headers["content-encoding"], shared.content) == ("br", plain.content)
    assert brotli.decompress(kept.brotli) == plain.content
