"""The ASGI app: GraphQL (and GraphiQL) at /graphql with a response cache, /healthz, /readyz,
the documents, CORS; every error JSON."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from db import reads
from db.engine import create_engine, create_tables, normalize_url, sessionmaker
from graph.caches import Budget
from graph.engine.internals import graphiql_page
from graph.schema import build_schema
from graph.schema.catalogs import Catalogs
from graph.server.document_routes import document_routes
from graph.server.faults import JSONErrors, http_error
from graph.server.handler import GraphQLHandler
from graph.server.operations import MODEL_PAGE
from graph.server.persisted import PersistedQueries
from graph.server.ratelimit import RateLimiter
from graph.server.release import ReleaseWatcher, read_current
from graph.server.request import Reader
from graph.server.response_cache import connect_redis, make_cache
from graph.settings import Settings

log = logging.getLogger("leadgreen")


class LeadGreen(Starlette):
    """Starlette, with /graphql handed to its handler ahead of routing and middleware.

    /graphql is the hot path: a cached answer should cost what a precomputed response costs.
    The handler answers its own errors; CORS, when configured, wraps it.
    """

    def __init__(self, graphql: ASGIApp, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.graphql = graphql

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] in ("/graphql", _rooted(scope)):
            await self.graphql(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def _rooted(scope: Scope) -> str:
    return f"{scope.get('root_path', '')}/graphql"


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or Settings()
    engine = create_engine(
        settings.database_url,
        statement_timeout=settings.request_timeout_seconds,
        # A connection that died with the database is replaced, not handed to a request.
        pool_pre_ping=make_url(normalize_url(settings.database_url)).get_backend_name()
        == "postgresql",
    )
    make_session = sessionmaker(engine)
    budget = Budget(settings.cache_max_bytes)
    schema = build_schema(settings)
    catalogs = Catalogs(budget.catalogs)
    shared_buckets = settings.rate_limit and (
        settings.rate_limit_store == "redis"
        or (settings.rate_limit_store == "auto" and settings.cache == "redis")
    )
    redis = (
        connect_redis(settings.redis_url) if settings.cache == "redis" or shared_buckets else None
    )
    cache = make_cache(settings, budget.answers, redis if settings.cache == "redis" else None)
    # Answers of a release no longer served cannot be asked for again: free them.
    release = ReleaseWatcher(
        make_session, settings.release_poll_seconds, on_change=cache.forget_local
    )
    graphql: ASGIApp = GraphQLHandler(
        settings,
        make_session,
        schema=schema,
        catalogs=catalogs,
        cache=cache,
        release=release,
        persisted=PersistedQueries(
            settings.persisted_queries,
            redis if settings.cache == "redis" else None,
            settings.redis_ttl_seconds,
            budget.persisted,
        ),
        reader=Reader(budget.requests),
        limiter=RateLimiter(settings, redis if shared_buckets else None)
        if settings.rate_limit
        else None,
        graphiql=graphiql_page(MODEL_PAGE).encode() if settings.graphiql else None,
    )
    cors: dict[str, Any] = {
        "allow_origins": settings.cors_origins,
        "allow_methods": ["GET", "POST"],
        "allow_headers": ["*"],
        "max_age": 600,
    }
    if settings.cors_origins:
        graphql = CORSMiddleware(graphql, **cors)

    async def healthz(_request: Request) -> Response:
        try:
            async with make_session() as session:
                await session.execute(text("SELECT 1"))
                row = await reads.latest_release(session)
        except Exception:  # the database is down or unreachable; say so, show nothing more
            log.warning("healthz: database unreachable", exc_info=True)
            return JSONResponse({"status": "unavailable", "reason": "database unreachable"}, 503)
        return JSONResponse(
            {
                "status": "ok",
                "release": row.id if row else None,
                "lastUpdated": row.last_updated if row else None,
            }
        )

    async def readyz(_request: Request) -> Response:
        """Ready when the database answers, now, and holds a release to serve."""
        try:
            async with asyncio.timeout(READY_TIMEOUT_SECONDS), make_session() as session:
                current = await read_current(session)
        except Exception as exc:
            log.warning("readyz: database unreachable: %r", exc)
            return _not_ready("database unreachable")
        if current is None:
            return _not_ready("no release loaded: run `leadgreen ingest`")
        return JSONResponse(
            {
                "status": "ready",
                "release": current.release.id,
                "lastUpdated": current.release.last_updated,
            },
            headers={"cache-control": "no-store"},
        )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await create_tables(engine)
        release.start()
        try:
            yield
        finally:
            await release.stop()
            if redis is not None:
                await redis.aclose()
            await engine.dispose()

    return LeadGreen(
        graphql,
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            *document_routes(settings, make_session, schema, catalogs, settings.http_max_age),
        ],
        middleware=[
            Middleware(JSONErrors),
            *([Middleware(CORSMiddleware, **cors)] if settings.cors_origins else []),
        ],
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan,
    )


READY_TIMEOUT_SECONDS = 5.0


def _not_ready(reason: str) -> Response:
    return JSONResponse(
        {"status": "unavailable", "reason": reason}, 503, headers={"cache-control": "no-store"}
    )
