"""The ASGI app: a Starlette app whose first middleware is the edge (graph/server/edge.py:
request ids, CORS, limits, the time limit, logs, metrics, tracing, every error JSON) and whose
routes are GraphQL (and GraphiQL) at /graphql with a response cache, / (where things are),
/healthz, /readyz, the documents and /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import html
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from sqlalchemy.engine import make_url
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp

from db.database import (
    create_engine,
    create_tables,
    normalize_url,
    request_session,
    sessionmaker,
)
from graph.caches import Budget
from graph.errors import Code
from graph.schema import build_schema
from graph.schema.memory import Catalogs
from graph.server import execute as run
from graph.server.documents import document_routes
from graph.server.documents import rehearse as rehearsal
from graph.server.edge import Edge, RequestIds
from graph.server.exports import export_routes
from graph.server.graphiql import GraphiQL
from graph.server.handler import Execute, GraphQLHandler
from graph.server.observability import (
    Metrics,
    RequestLog,
    Streams,
    make_tracing,
    quiet_expected_errors,
)
from graph.server.protocol import Reader, negotiate
from graph.server.ratelimit import RateLimiter, believed_proxies
from graph.server.release import ReleaseWatcher, read_current
from graph.server.replay import Replays
from graph.server.response_cache import (
    REDIS_TTL_SECONDS,
    PersistedQueries,
    connect_redis,
    make_cache,
)
from graph.server.responses import choose, compress, http_error
from graph.server.subscriptions import (
    EventStreams,
    Releases,
    Runner,
    SingleConnection,
    Sse,
    TransportWs,
)
from graph.settings import Settings

log = logging.getLogger("leadgreen")


def served_app() -> Starlette:
    """The app `leadgreen serve` runs in each worker: from the environment, its first pages
    rehearsed and what its start built kept out of the garbage collector's passes."""
    # Paused until the release is read (`leadgreen serve` paused it already in its own
    # process; a worker of several starts here): see `create_app`.
    gc.disable()
    return create_app(freeze_startup=True, rehearse=True)


def create_app(
    settings: Settings | None = None,
    *,
    freeze_startup: bool = False,
    rehearse: bool = False,
    execute: Execute | None = None,
) -> Starlette:
    """The ASGI app. With `freeze_startup`, what the start built (modules, the schema, the
    catalog) is moved out of reach of the collector's passes, whose pauses would set the p99,
    and the collector, paused until then by whoever started the process, is resumed; one
    process per app only (`gc.freeze` is process-wide). With `rehearse`, the v1 index and its
    first model's page are answered once before /readyz says ready (documents.rehearse), so
    that the first request is answered warm. `execute` runs a request through the schema
    instead of graph/server/execute.py (tests give their own).

    `app.state` holds the parts a test or a benchmark looks into: `graphql` (the /graphql
    handler), `schema`, `request_log`, `metrics`, `tracing` and `rehearsed` (the paths the
    start answered)."""
    settings = settings or Settings()
    engine = create_engine(
        settings.database_url,
        statement_timeout=settings.request_timeout_seconds,
        wait_timeout=settings.database_timeout_seconds,
        # A connection that died with the database is replaced, not handed to a request.
        pool_pre_ping=make_url(normalize_url(settings.database_url)).get_backend_name()
        == "postgresql",
    )
    make_session = sessionmaker(engine)
    budget = Budget(settings.cache_max_bytes)
    schema = build_schema(settings)
    catalogs = Catalogs(budget.catalogs)
    # With several processes sharing Redis, the rate-limit buckets are there too.
    redis = connect_redis(settings.redis_url) if settings.cache == "redis" else None
    cache = make_cache(settings, budget.answers, redis)
    graphiql = GraphiQL.load() if settings.graphiql else None
    # Answers of a release no longer served cannot be asked for again: free them.
    # A new release is served once its catalog is read (and the first before /readyz says so).
    releases = Releases()  # the subscribers of releasePublished

    def changed() -> None:
        cache.forget_local()
        if replays is not None:
            replays.forget()
        releases.served(release.known)

    release = ReleaseWatcher(
        make_session,
        settings.release_poll_seconds,
        on_change=changed,
        prepare=lambda current: catalogs.prepare(make_session, current.release),
    )
    limiter = RateLimiter(settings, redis) if settings.rate_limit else None
    metrics = Metrics(release) if settings.metrics else None
    tracing = make_tracing(settings)
    level = logging.getLevelNamesMapping().get(settings.log_level.upper(), logging.INFO)
    request_log = RequestLog(level, metrics=metrics)  # each request's line feeds the metrics
    ids = RequestIds()
    replays = (
        Replays(cache, release, request_log, ids, budget.replays)
        if settings.replay and settings.cache != "off" and limiter is None and tracing is None
        else None
    )
    graphql = GraphQLHandler(
        settings,
        execute=execute
        or functools.partial(run.execute, schema, settings, make_session, catalogs, limiter),
        cache=cache,
        release=release,
        persisted=PersistedQueries(
            settings.persisted_queries,
            redis,
            REDIS_TTL_SECONDS,
            budget.persisted,
            settings.max_document_bytes,
        ),
        reader=Reader(budget.requests),
        limiter=limiter,
        graphiql=graphiql,
        replays=replays,
    )
    runner = Runner(schema, settings, make_session, catalogs, limiter, releases, Streams(metrics))
    streams = Sse(runner, Reader(budget.requests), settings)
    single = SingleConnection(runner, streams, settings)
    if tracing is not None:
        tracing.instrument(engine)
    if metrics is not None:
        metrics.pending = request_log.flush
    quiet_expected_errors()

    async def healthz(_request: Request) -> Response:
        """Liveness: the process answers. The database is not asked once the release has been
        read (a database outage must not get every process restarted: /readyz says whether it
        can be reached); the release is the one the process answers from, as last read."""
        known = release.known
        if known is None and not release.failing:  # just started: read it, briefly
            with contextlib.suppress(Exception):
                async with asyncio.timeout(HEALTH_READ_SECONDS):
                    known = await release.current()
        return JSONResponse(
            {
                "status": "ok",
                "release": known.release.id if known else None,
                "lastUpdated": known.release.last_updated if known else None,
            },
            headers={"cache-control": "no-store"},
        )

    async def readyz(_request: Request) -> Response:
        """Ready when the database answers, now, and holds a release to serve, and that
        release's catalog is read (the first answers come from memory)."""
        try:  # (within the request's wait for the database: this 503, not the limit's 504)
            async with request_session(make_session) as session:
                current = await read_current(session)
        except Exception as exc:
            log.warning("readyz: database unreachable: %r", exc)
            return _not_ready("database unreachable")
        if current is None:
            return _not_ready("no release loaded: run `leadgreen ingest`", Code.NO_DATA)
        if not catalogs.holds(current.release):
            release.refresh_soon()
            return _not_ready(f"reading release {current.release.id}", Code.STARTING)
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
        # The release to answer from, and its catalog, read before the first request (a
        # database away now is found again by the watcher; /readyz says so meanwhile).
        with contextlib.suppress(Exception):
            await release.refresh()
        if rehearse and release.known is not None and catalogs.holds(release.known.release):
            try:
                app.state.rehearsed = await rehearsal(schema, settings, make_session, catalogs)
            except Exception as exc:  # the first requests will do it, as they would without
                log.warning("could not rehearse the first pages: %r", exc)
        release.start()
        if metrics is not None:
            metrics.start()
        if freeze_startup:
            # Frozen without a collection first: a full pass over this heap costs about a
            # tenth of the start, and finds what the start dropped in cycles, which stays
            # frozen instead: some 4,600 objects, 0.7 MB (bench/RESULTS.md, "Ready in a
            # second").
            gc.freeze()
            gc.enable()
        try:
            yield
        finally:
            if freeze_startup:
                gc.unfreeze()
            # The metrics' last fold reads the release (and may start a reading of it in the
            # background): before the watcher stops, which waits for every reading to end.
            if metrics is not None:
                await metrics.stop()
            await release.stop()
            request_log.flush()
            if redis is not None:
                await redis.aclose()
            await engine.dispose()

    graphql_http = EventStreams(streams, single, graphql)
    app = App(
        routes=[
            # first: the hot path's match; an event stream asked for is a subscription's (the
            # edge hands /graphql's requests to the same app, past the routing)
            Route("/graphql", graphql_http, name="graphql"),
            WebSocketRoute("/graphql", TransportWs(runner, settings)),
            Route("/", home(settings), methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            *document_routes(settings, make_session, schema, catalogs, settings.http_max_age),
            *export_routes(settings, make_session, catalogs, settings.http_max_age),
            *(graphiql.routes() if graphiql is not None else []),
            *([Route("/metrics", metrics_endpoint(metrics), methods=["GET"])] if metrics else []),
        ],
        middleware=[
            *believed_proxies(settings),  # first: every part sees the client it forwards
            Middleware(
                Edge,
                settings=settings,
                log=request_log,
                metrics=metrics,
                tracing=tracing,
                graphql_app=graphql_http,
                ids=ids,
            ),
        ],
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan,
    )
    app.state.graphql, app.state.schema = graphql, schema
    app.replays = replays
    app.state.releases, app.state.subscriptions = releases, runner.bounds
    app.state.reservations = single
    app.state.request_log, app.state.metrics, app.state.tracing = request_log, metrics, tracing
    app.state.rehearsed = []
    return app


class App(Starlette):
    """Starlette without its outermost ServerErrorMiddleware: the edge, the first middleware,
    answers whatever fails as JSON with a code and logs it, so Starlette's would only wrap each
    response's `send` to learn whether it started (a tenth of a cached answer's CPU in the
    app). What fails outside the edge (a middleware added before it) uvicorn answers 500."""

    # Cached answers `leadgreen serve`'s protocol sends again itself (graph/server/replay.py).
    replays: Replays | None = None

    def build_middleware_stack(self) -> ASGIApp:
        stack = super().build_middleware_stack()
        assert isinstance(stack, ServerErrorMiddleware)
        return stack.app


HEALTH_READ_SECONDS = 1.0


def home(settings: Settings) -> Callable[[Request], Awaitable[Response]]:
    """GET /: where things are, as JSON for a client and as a small page for a browser."""

    def places(root: str) -> dict[str, str]:
        graphql = "GraphQL over HTTP: POST a JSON body, or GET with ?query="
        found = {
            f"{root}/graphql": graphql + ("; GraphiQL for a browser" if settings.graphiql else ""),
            f"{root}/api/v1/index.json": "the v1 documents: the index, and each model's page at "
            "/api/v1/models/{slug}.json",
            f"{root}/api/v1/configurations.csv": "the configurations as CSV (or .parquet), "
            "filtered by the query parameters the `configurations` filter takes",
            f"{root}/data/index.json": "each release's upstream files, byte for byte "
            "(/data/tasks/..., /data/models/...); ?release=N for an older one",
            f"{root}/healthz": "is the process alive",
            f"{root}/readyz": "is it ready: the database answers and a release is read",
        }
        if settings.metrics:
            found[f"{root}/metrics"] = "Prometheus metrics"
        return found

    async def endpoint(request: Request) -> Response:
        root = request.scope.get("root_path", "")
        found = places(root)
        accept = request.headers.get("accept", "").encode("latin-1")
        headers = {"cache-control": "no-cache", "vary": "accept"}
        if accept and negotiate(accept).html:
            return HTMLResponse(_home_page(found), headers=headers)
        return JSONResponse({**HOME, "endpoints": found}, headers=headers)

    return endpoint


HOME = {
    "name": "LeadGreen",
    "about": "A GraphQL API over the ML.ENERGY Leaderboard's measured energy of LLM inference",
    "documentation": "The schema describes every type and field (GraphiQL's Docs, or "
    "introspection); the guide is the project's docs/ (README.md first)",
}


def _home_page(places: dict[str, str]) -> str:
    items = "".join(
        f'<li><a href="{html.escape(path)}"><code>{html.escape(path)}</code></a>: '
        f"{html.escape(about)}</li>"
        for path, about in places.items()
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>LeadGreen</title>'
        f"</head><body><h1>LeadGreen</h1><p>{html.escape(HOME['about'])}.</p><ul>{items}</ul>"
        f"<p>{html.escape(HOME['documentation'])}.</p></body></html>"
    )


def metrics_endpoint(metrics: Metrics) -> Callable[[Request], Awaitable[Response]]:
    """GET /metrics: Prometheus's text format, compressed for a client that accepts it."""

    async def endpoint(request: Request) -> Response:
        body, media_type = await metrics.exposition()
        headers = {"cache-control": "no-store", "vary": "accept-encoding"}
        coding = choose(request.headers.get("accept-encoding", "").encode("latin-1"))
        if coding is not None:
            body = compress(body, coding, kept=False)
            headers["content-encoding"] = coding.decode()
        return Response(body, headers=headers, media_type=media_type)

    return endpoint


def _not_ready(reason: str, code: Code = Code.DATABASE_UNAVAILABLE) -> Response:
    return JSONResponse(
        {"status": "unavailable", "reason": reason, "code": str(code)},
        503,
        headers={"cache-control": "no-store", "retry-after": "1"},
    )
