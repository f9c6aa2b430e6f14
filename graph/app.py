"""The ASGI app: GraphQL (and GraphiQL) at /graphql with a response cache, /healthz, CORS."""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.http.ides import get_graphql_ide_html

from db import reads
from db.engine import create_engine, create_tables, sessionmaker
from graph.cache import connect_redis, make_cache
from graph.context import Context
from graph.documents import document_routes
from graph.http.handler import GraphQLHandler
from graph.http.persisted import PersistedQueries
from graph.http.release import ReleaseWatcher
from graph.queries import MODEL_PAGE
from graph.schema import schema
from graph.settings import Settings

log = logging.getLogger("leadgreen")
_EXAMPLE = re.compile(r"const EXAMPLE_QUERY = `.*?`;", re.S)


def _graphiql_html() -> str:
    """Strawberry's GraphiQL page with the model-page query as its default tab."""
    query = json.dumps(MODEL_PAGE)
    return _EXAMPLE.sub(lambda _: f"const EXAMPLE_QUERY = {query};", get_graphql_ide_html())


class GraphQLApp(GraphQL[Context, None]):
    """Strawberry's ASGI view with one database session per request."""

    def __init__(self, settings: Settings, make_session: async_sessionmaker[AsyncSession]):
        super().__init__(schema, graphql_ide="graphiql" if settings.graphiql else None)
        self.settings, self.make_session = settings, make_session
        self.ide_html = _graphiql_html()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with self.make_session() as session:
            scope.setdefault("state", {})["session"] = session
            await super().__call__(scope, receive, send)

    async def get_context(self, request: Any, response: Any) -> Context:
        return Context(session=request.state.session, settings=self.settings)

    async def render_graphql_ide(self, request: Request) -> Response:
        return HTMLResponse(self.ide_html)


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
    engine = create_engine(settings.database_url)
    make_session = sessionmaker(engine)
    redis = connect_redis(settings.redis_url) if settings.cache == "redis" else None
    cache = make_cache(settings, redis)
    # Answers of a release no longer served cannot be asked for again: free them.
    release = ReleaseWatcher(
        make_session, settings.release_poll_seconds, on_change=cache.forget_local
    )
    graphql: ASGIApp = GraphQLHandler(
        settings,
        make_session,
        cache=cache,
        release=release,
        persisted=PersistedQueries(settings.persisted_queries, redis, settings.redis_ttl_seconds),
        fallback=GraphQLApp(settings, make_session),
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
            *document_routes(settings, make_session, settings.http_max_age),
        ],
        middleware=[Middleware(CORSMiddleware, **cors)] if settings.cors_origins else [],
        lifespan=lifespan,
    )
