"""Documents over HTTP: the v1 JSON API and the upstream files, generated from the database.

- `/api/v1/index.json` and `/api/v1/models/{slug}.json`: the LeadGreen v1 documents.
- `/data/index.json`, `/data/tasks/{task}.json`, `/data/models/{file}`: the upstream layout,
  so a client of the leaderboard's static files only changes its base URL.
Each takes `?release=N` (default: the latest). Responses carry an ETag and Cache-Control.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from strawberry import Schema

from db import reads
from db.export import export_documents
from graph.errors import ApiError
from graph.schema.catalogs import Catalogs
from graph.schema.context import Context
from graph.server.operations import MODEL_PAGE
from graph.server.respond import etag_matches
from graph.settings import Settings

INDEX_QUERY = """query ($release: Int) { index(release: $release) {
  version updated dataVersion
  source { name publisher url dataUrl version released compiled compiledEvidence retrieved
           licence licenceEvidence workload method selection cite citeUrl usedFor configurations }
  models { slug name modelId paramsB activeParamsB gpus url page } } }"""
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


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
    return parts._replace(scheme=new.scheme, netloc=new.netloc).geturl()


def _json(status: int, body: Any, request: Request, max_age: int) -> Response:
    content = orjson.dumps(body)
    if status != 200:
        return Response(
            content, status, media_type="application/json", headers={"cache-control": "no-store"}
        )
    etag = '"' + hashlib.sha256(content).hexdigest()[:32] + '"'
    headers = {"etag": etag, "cache-control": f"public, max-age={max_age}"}
    if_none_match = request.headers.get("if-none-match")
    if if_none_match and etag_matches(if_none_match.encode("latin-1"), etag.encode()):
        return Response(status_code=304, headers=headers)
    return Response(content, 200, media_type="application/json", headers=headers)


def _not_found(message: str) -> dict[str, Any]:
    return {"error": {"code": "NOT_FOUND", "message": message}}


def document_routes(
    settings: Settings,
    make_session: async_sessionmaker[AsyncSession],
    schema: Schema,
    catalogs: Catalogs,
    max_age: int = 60,
) -> list[Route]:
    """The document routes, reading through `make_session` and answering with `schema`."""
    exported: dict[int, dict[str, Any]] = {}

    async def release_of(request: Request, session: AsyncSession) -> int | None:
        asked = request.query_params.get("release") or None
        if asked is not None:
            return (
                int(asked)
                if asked.isdigit() and await reads.release(session, release_id=int(asked))
                else None
            )
        latest = await reads.latest_release(session)
        return latest.id if latest else None

    def endpoint(
        handler: Callable[[Request, AsyncSession, int], Awaitable[tuple[int, Any]]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def respond(request: Request) -> Response:
            async with make_session() as session:
                release_id = await release_of(request, session)
                if release_id is None:
                    return _json(
                        404,
                        _not_found(
                            "no such release; GET /graphql with `{ releases { id } }` lists them"
                        ),
                        request,
                        0,
                    )
                status, body = await handler(request, session, release_id)
            return _json(status, body, request, max_age)

        return respond

    async def graphql(session: AsyncSession, query: str, **variables: Any) -> dict[str, Any]:
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

    async def v1_index(request: Request, session: AsyncSession, release_id: int) -> tuple[int, Any]:
        index = snake_keys((await graphql(session, INDEX_QUERY, release=release_id))["index"])
        for model in index["models"]:
            model["url"] = rebase(model["url"], settings.public_base_url)
            model["page"] = rebase(model["page"], settings.public_base_url)
        return 200, index

    async def v1_model(request: Request, session: AsyncSession, release_id: int) -> tuple[int, Any]:
        slug = request.path_params["slug"]
        data = await graphql(session, MODEL_PAGE, slug=slug, release=release_id)
        model = data["model"]
        if model is None:
            return 404, _not_found(f"no model {slug!r}; /api/v1/index.json lists the models")
        # The same links as the index that points here.
        model["url"] = rebase(model["url"], settings.public_base_url)
        model["page"] = rebase(model["page"], settings.public_base_url)
        return 200, data

    async def upstream(request: Request, session: AsyncSession, release_id: int) -> tuple[int, Any]:
        if release_id not in exported:
            exported.clear()  # keep one release's files: they are rebuilt on demand
            exported[release_id] = await export_documents(session, release_id=release_id)
        path = request.path_params["path"]
        if path not in exported[release_id]:
            return 404, _not_found(f"no file {path!r} in release {release_id}")
        return 200, exported[release_id][path]

    return [
        Route("/api/v1/index.json", endpoint(v1_index), methods=["GET"]),
        Route("/api/v1/models/{slug}.json", endpoint(v1_model), methods=["GET"]),
        Route("/data/{path:path}", endpoint(upstream), methods=["GET"]),
    ]
