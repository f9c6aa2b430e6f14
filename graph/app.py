"""The ASGI app: GraphQL (and GraphiQL) at /graphql, /healthz, CORS."""

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
from starlette.types import Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.http.ides import get_graphql_ide_html

from db import reads
from db.engine import create_engine, create_tables, sessionmaker
from graph.context import Context
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


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or Settings()
    engine = create_engine(settings.database_url)
    make_session = sessionmaker(engine)

    async def healthz(_request: Request) -> Response:
        try:
            async with make_session() as session:
                await session.execute(text("SELECT 1"))
                release = await reads.latest_release(session)
        except Exception:  # the database is down or unreachable; say so, show nothing more
            log.warning("healthz: database unreachable", exc_info=True)
            return JSONResponse({"status": "unavailable", "reason": "database unreachable"}, 503)
        return JSONResponse(
            {
                "status": "ok",
                "release": release.id if release else None,
                "lastUpdated": release.last_updated if release else None,
            }
        )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await create_tables(engine)
        yield
        await engine.dispose()

    graphql = GraphQLApp(settings, make_session)
    middleware = []
    if settings.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=settings.cors_origins,
                allow_methods=["GET", "POST"],
                allow_headers=["*"],
                max_age=600,
            )
        )
    return Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ],
        middleware=middleware,
        lifespan=lifespan,
    )
