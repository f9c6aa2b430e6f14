"""Documents over HTTP: the v1 JSON API, and the upstream files as they were published; and the
queries the product documents and ships (the model page is also GraphiQL's default tab).

- `/api/v1/index.json` and `/api/v1/models/{slug}.json`: the LeadGreen v1 documents.
- `/data/index.json`, `/data/tasks/{task}.json`, `/data/models/{file}`: each release's files byte
  for byte, so a client of the leaderboard's static files only changes its base URL.
Each takes `?release=N` (default: the latest). Answers carry a weak ETag (a file's is its
SHA-256), the same in every content coding, and Cache-Control, answer If-None-Match with 304,
and are compressed (brotli or gzip) for a client that accepts it, each coding made once.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from strawberry import Schema

from db import reads
from db.database import request_session
from db.files import release_file
from graph.caches import Bounded
from graph.errors import ApiError, Code
from graph.schema.context import Context
from graph.schema.memory import Catalogs
from graph.server.responses import Encoded, choose, error_response, etag_matches, weak
from graph.settings import Settings

MODEL_PAGE = """\
# The model page: one model's configurations, concurrency curves and measured
# GPU power, with the provenance and licence evidence of the data.
query ModelPage($slug: String! = "qwen-3-8b", $release: Int) {
  model(slug: $slug, release: $release) {
    slug name modelId paramsB activeParamsB architecture weightPrecision gpus url page
    configurations {
      id gpuModel numGpus maxNumSeqs tensorParallel dataParallel expertParallel
      energyPerTokenJoules energyPerRequestJoules medianItlMs p90ItlMs p95ItlMs p99ItlMs
      outputThroughputTokensPerSec avgPowerWatts powerPerGpuWatts fractionOfTdp
      avgBatchSize avgOutputLen
    }
    curves {
      task gpuModel numGpus tensorParallel dataParallel expertParallel
      points {
        maxNumSeqs energyPerTokenJoules energyPerRequestJoules medianItlMs p99ItlMs
        outputThroughputTokensPerSec avgPowerWatts avgBatchSize
      }
    }
    power {
      gpuModel configurations
      totalWatts { minimum median maximum }
      perGpuWatts { minimum median maximum }
      fractionOfTdp { minimum median maximum }
      gpu { fullName tdpWatts source sourceUrl }
    }
  }
  source(release: $release) {
    name publisher url dataUrl version compiled retrieved
    licence licenceEvidence method cite citeUrl
    release { lastUpdated upstreamCommit }
  }
}
"""

INDEX_QUERY = """query ($release: Int) { index(release: $release) {
  version updated dataVersion
  source { name publisher url dataUrl version released compiled compiledEvidence retrieved
           licence licenceEvidence workload method selection cite citeUrl usedFor configurations }
  models { slug name modelId paramsB activeParamsB gpus url page } } }"""
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")
_RELEASE = re.compile(r"^[0-9]{1,9}$")
JSON = "application/json"


def snake_keys(value: Any) -> Any:
    """camelCase GraphQL names back to the v1 documents' snake_case (`paramsB` -> `params_b`)."""
    if isinstance(value, dict):
        return {_CAMEL.sub(r"_\1", k).lower(): snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    return value


def rebase(url: str | None, base: str | None) -> str | None:
    """`url` with its scheme and host replaced by `base`'s."""
    if url is None or base is None:
        return url
    parts, new = urlsplit(url), urlsplit(base.rstrip("/"))
    return urlunsplit((new.scheme, new.netloc, parts.path, parts.query, parts.fragment))


def cacheable(
    content: bytes,
    etag: str,
    request: Request,
    max_age: int,
    encoded: Encoded | None = None,
    min_bytes: int = 1024,
) -> Response:
    """A successful answer, or 304 when the client holds it already; compressed when the
    client accepts it and it is at least `min_bytes` (its copies kept in `encoded`)."""
    etag = weak(etag)
    headers = {"etag": etag, "cache-control": f"public, max-age={max_age}"}
    large = encoded is not None and len(content) >= min_bytes
    if large:
        headers["vary"] = "accept-encoding"
    if_none_match = request.headers.get("if-none-match")
    if if_none_match and etag_matches(if_none_match.encode("latin-1"), etag.encode()):
        return Response(status_code=304, headers=headers)
    coding = choose(request.headers.get("accept-encoding", "").encode("latin-1"))
    if large and coding is not None:
        assert encoded is not None
        content = encoded.get(etag, content, coding)
        headers["content-encoding"] = coding.decode()
    return Response(content, 200, media_type=JSON, headers=headers)


def _not_found(message: str) -> Response:
    return error_response(404, str(Code.NOT_FOUND), message)


class Refused(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


async def answer(
    schema: Schema,
    settings: Settings,
    catalogs: Catalogs,
    session: AsyncSession,
    query: str,
    **variables: Any,
) -> dict[str, Any]:
    """A document's data, as the v1 documents are answered; its first error raised."""
    result = await schema.execute(
        query,
        variable_values=variables,
        context_value=Context(session=session, settings=settings, catalogs=catalogs),
    )
    if result.errors:
        # Chained, so a database fault is still recognised (503) by the error middleware.
        raise ApiError(result.errors[0].message) from result.errors[0].original_error
    assert result.data is not None
    return result.data


async def rehearse(
    schema: Schema,
    settings: Settings,
    make_session: async_sessionmaker[AsyncSession],
    catalogs: Catalogs,
) -> list[str]:
    """Answer the v1 index and its first model's page once, in this process, before it says
    it is ready: what the first of each makes (the documents prepared, their plans, the
    GraphQL objects of the model's rows, the statements compiled) is then made, and the first
    real request, of these or of the model page at /graphql, is answered as the next would be.
    The paths answered (none for an empty database)."""
    async with make_session() as session:
        latest = await reads.latest_release(session)
        if latest is None:
            return []
        ask = functools.partial(answer, schema, settings, catalogs, session, release=latest.id)
        said = ["/api/v1/index.json"]
        for model in (await ask(INDEX_QUERY))["index"]["models"][:1]:
            await ask(MODEL_PAGE, slug=model["slug"])
            said.append(f"/api/v1/models/{model['slug']}.json")
    return said


def document_routes(
    settings: Settings,
    make_session: async_sessionmaker[AsyncSession],
    schema: Schema,
    catalogs: Catalogs,
    max_age: int = 60,
    max_bytes: int = 16 * 1024 * 1024,
) -> list[Route]:
    """The document routes, reading through `make_session` and answering with `schema`; the
    files recently served are kept within `max_bytes`."""
    files: Bounded[tuple[int, str], tuple[str, bytes]] = Bounded(
        max_bytes, lambda file: len(file[1]) + 300
    )
    encoded = Encoded(max_bytes // 2)
    min_bytes = settings.compress_min_bytes

    async def release_of(request: Request, session: AsyncSession) -> int:
        asked = request.query_params.get("release") or None  # empty: no choice, the latest
        if asked is not None:
            if not _RELEASE.match(asked):
                raise Refused(
                    error_response(
                        400,
                        str(Code.BAD_USER_INPUT),
                        f"`release` must be a release number (digits 0-9), got {asked[:40]!r}",
                    )
                )
            if await reads.release(session, release_id=int(asked)) is not None:
                return int(asked)
        else:
            latest = await reads.latest_release(session)
            if latest is not None:
                return latest.id
        raise Refused(
            _not_found("no such release; GET /graphql with `{ releases { number } }` lists them")
        )

    def endpoint(
        handler: Callable[[Request, AsyncSession, int], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def respond(request: Request) -> Response:
            try:
                async with request_session(make_session) as session:
                    return await handler(request, session, await release_of(request, session))
            except Refused as refused:
                return refused.response

        return respond

    async def graphql(session: AsyncSession, query: str, **variables: Any) -> dict[str, Any]:
        return await answer(schema, settings, catalogs, session, query, **variables)

    def json_answer(body: Any, request: Request) -> Response:
        content = orjson.dumps(body)
        etag = '"' + hashlib.sha256(content).hexdigest()[:32] + '"'
        return cacheable(content, etag, request, max_age, encoded, min_bytes)

    async def v1_index(request: Request, session: AsyncSession, release_id: int) -> Response:
        index = snake_keys((await graphql(session, INDEX_QUERY, release=release_id))["index"])
        for model in index["models"]:
            model["url"] = rebase(model["url"], settings.public_base_url)
            model["page"] = rebase(model["page"], settings.public_base_url)
        return json_answer(index, request)

    async def v1_model(request: Request, session: AsyncSession, release_id: int) -> Response:
        slug = request.path_params["slug"]
        data = await graphql(session, MODEL_PAGE, slug=slug, release=release_id)
        model = data["model"]
        if model is None:
            return _not_found(f"no model {slug[:100]!r}; /api/v1/index.json lists the models")
        # The same links as the index that points here.
        model["url"] = rebase(model["url"], settings.public_base_url)
        model["page"] = rebase(model["page"], settings.public_base_url)
        return json_answer(data, request)

    async def upstream(request: Request, session: AsyncSession, release_id: int) -> Response:
        path = request.path_params["path"]
        file = files.get((release_id, path))
        if file is None:
            file = await release_file(session, release_id=release_id, path=path)
            if file is None:
                return _not_found(f"no file {path[:200]!r} in release {release_id}")
            files[(release_id, path)] = file
        sha256, data = file  # the digest stored at ingest: the file is not hashed per request
        return cacheable(data, f'"{sha256}"', request, max_age, encoded, min_bytes)

    return [
        Route("/api/v1/index.json", endpoint(v1_index), methods=["GET"]),
        Route("/api/v1/models/{slug}.json", endpoint(v1_model), methods=["GET"]),
        Route("/data/{path:path}", endpoint(upstream), methods=["GET"]),
    ]
