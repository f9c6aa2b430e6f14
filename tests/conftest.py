"""Fixtures: a database on SQLite and on PostgreSQL, settings, sessions, clients and data."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import inspect
import json
import os
import re
import shutil
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import graphql.execution.executor
import httpx
import hypothesis
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette

from db.database import create_engine, create_tables, sessionmaker
from db.ingest import IngestReport, ingest
from db.snapshot import load_manifest, load_snapshot
from graph.engine import completion
from graph.schema import build_schema
from graph.schema.context import Context
from graph.schema.memory import Catalogs
from graph.server import handler
from graph.server.app import create_app
from graph.settings import Settings
from tests import synthetic

# The executor the differential tests answer against (strawberry's: graphql-core's) cancels a
# failed field's siblings as the engine does, but drops what a sibling cancelled before its
# first step was handed: resolvers' coroutines, reported as never awaited when they are
# collected, in whichever test runs then. It is given the engine's gather, which closes them
# (tests/test_execution.py shows the engine's leaves none).
graphql.execution.executor.gather_with_cancel = completion.gather_with_cancel

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SNAPSHOT = DATA / "ml-energy-leaderboard" / "2026-02-16"
EARLIER = DATA / "ml-energy-leaderboard" / "2025-12-17"
SEED = DATA / "seed" / "leadgreen-index-v1.json"
POSTGRES_URL = os.environ.get(
    "LEADGREEN_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
# The fields of an LLM task-file row a configuration serves unchanged (upstream names),
# written out here so tests check the API against the files, not against the code.
LLM_ROW_KEYS = (
    "gpu_model",
    "num_gpus",
    "max_num_seqs",
    "tensor_parallel",
    "data_parallel",
    "expert_parallel",
    "energy_per_token_joules",
    "energy_per_request_joules",
    "median_itl_ms",
    "p90_itl_ms",
    "p95_itl_ms",
    "p99_itl_ms",
    "output_throughput_tokens_per_sec",
    "avg_power_watts",
    "avg_batch_size",
    "avg_output_len",
)
# One schema for the tests that execute through it directly (the app builds its own).
SCHEMA = build_schema()
BACKENDS: list[Any] = ["sqlite"] + (
    []
    if os.environ.get("LEADGREEN_TEST_POSTGRES") == "off"
    else [pytest.param("postgres", marks=pytest.mark.postgres)]
)
# Hypothesis's examples: the quick loop's profile (the default) draws a quarter of them, `ci`
# (HYPOTHESIS_PROFILE=ci, as scripts/test sets, or --hypothesis-profile=ci) all of them; a test
# of its own count says it with `examples(n)`, n being the count under `ci`.
hypothesis.settings.register_profile("ci", max_examples=100)
hypothesis.settings.register_profile("quick", max_examples=25)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


def examples(ci: int) -> int:
    """`ci` examples under the ci profile, a quarter of them under the quick one."""
    return ci * hypothesis.settings.default.max_examples // 100


# Fixtures that hold the real data, and names that point at it: a test using either is marked
# `realdata` (and so left out of the quick loop).
REAL_FIXTURES = {"real_url", "real_db", "real_settings", "execute_real", "real_client"}
_SHARED = re.compile(r"\b(SNAPSHOT|EARLIER|SEED|DATA)\b")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and _reads_shared_data(item):
            item.add_marker(pytest.mark.realdata)
        # A test on the PostgreSQL server by a fixture of its own (not the backend parameter).
        if isinstance(item, pytest.Function) and "pg_url" in item.fixturenames:
            item.add_marker(pytest.mark.postgres)


def _reads_shared_data(item: pytest.Function) -> bool:
    if REAL_FIXTURES & set(item.fixturenames) or _module_reads_shared(item.module):
        return True
    functions = [item.function] + [
        definition.func
        for definitions in item._fixtureinfo.name2fixturedefs.values()
        for definition in definitions
    ]
    return any(_mentions_shared(f) for f in functions)


@functools.cache
def _module_reads_shared(module: Any) -> bool:
    """Whether the module's own top-level code (not its functions) reads the shared data."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return False
    return any(
        not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import)
        and not isinstance(node, ast.ImportFrom)
        and _SHARED.search(ast.unparse(node))
        for node in tree.body
    )


@functools.cache
def _mentions_shared(function: Any) -> bool:
    try:
        return bool(_SHARED.search(inspect.getsource(function)))
    except (OSError, TypeError):
        return False


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _admin(statement: str) -> None:
    """Run one statement on the server, from a thread of its own (a loop may be running here)."""

    async def run() -> None:
        admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        async with admin.connect() as conn:
            await conn.execute(text(statement))
        await admin.dispose()

    _in_thread(run())


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A database of the test run's own on the PostgreSQL server, dropped afterwards."""
    name = f"leadgreen_test_{uuid.uuid4().hex[:8]}"
    _admin(f"CREATE DATABASE {name}")
    yield make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    _admin(f"DROP DATABASE {name} WITH (FORCE)")


async def _migrate(url: str) -> None:
    engine = create_engine(url)
    await create_tables(engine)
    await engine.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite database with every migration applied, copied for each test (migrating
    costs more than the rest of most tests)."""
    path = tmp_path_factory.mktemp("template") / "empty.db"
    _in_thread(_migrate(f"sqlite+aiosqlite:///{path}"))
    return path


@pytest.fixture(params=BACKENDS)
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh, empty database: a SQLite file, or an emptied PostgreSQL database."""
    if request.param == "sqlite":
        shutil.copy(request.getfixturevalue("sqlite_template"), tmp_path / "test.db")
        yield f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"
        return
    url = request.getfixturevalue("postgres_url")
    reset = create_engine(url)
    async with reset.begin() as conn:
        await conn.execute(text("DROP SCHEMA public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await reset.dispose()
    yield url


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, manifest=None)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    await create_tables(engine)
    yield engine
    await engine.dispose()


async def ingest_dir(
    engine: AsyncEngine, source: Path | str, manifest: Path | None = None
) -> IngestReport:
    snapshot = await load_snapshot(str(source))
    doc, raw = load_manifest(manifest) if manifest else (None, None)
    async with sessionmaker(engine)() as session:
        return await ingest(session, snapshot, doc, raw, str(manifest))


@pytest.fixture
def synthetic_dir(tmp_path: Path) -> Path:
    root = synthetic.write(tmp_path / "snapshot", synthetic.documents())
    (tmp_path / "manifest.json").write_text(json.dumps(synthetic.manifest()))
    return root


@pytest.fixture
async def synthetic_db(engine: AsyncEngine, synthetic_dir: Path) -> AsyncEngine:
    await ingest_dir(engine, synthetic_dir, synthetic_dir.parent / "manifest.json")
    return engine


def _in_thread(coroutine: Coroutine[Any, Any, Any]) -> Any:
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def _ingest_real(url: str) -> None:
    engine = create_engine(url)
    await create_tables(engine)
    await ingest_dir(engine, SNAPSHOT, SEED)
    await engine.dispose()


@pytest.fixture(scope="session", params=BACKENDS)
def real_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A database holding the 2026-02-16 snapshot with the seed manifest, ingested once per run.

    Tests that use it only read; a test that writes takes a fresh `database_url` instead.
    """
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('real') / 'real.db'}"
        _in_thread(_ingest_real(url))
        yield url
        return
    name = f"leadgreen_real_{uuid.uuid4().hex[:8]}"
    _admin(f"CREATE DATABASE {name}")
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    _in_thread(_ingest_real(url))
    yield url
    _admin(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
async def real_db(real_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(real_url)
    yield engine
    await engine.dispose()


@pytest.fixture
def real_settings(real_url: str) -> Settings:
    return Settings(database_url=real_url, manifest=None)


Execute = Callable[..., Awaitable[dict[str, Any]]]


def make_execute(
    engine: AsyncEngine, settings: Settings, catalogs: Catalogs | None = None
) -> Execute:
    catalogs = catalogs or Catalogs()

    async def execute(query: str, **variables: Any) -> dict[str, Any]:
        """Run a query through the schema; return `data`, or the errors as a dict."""
        async with sessionmaker(engine)() as session:
            context = Context(session=session, settings=settings, catalogs=catalogs)
            result = await SCHEMA.execute(query, variable_values=variables, context_value=context)
        if result.errors:
            return {
                "errors": [
                    {"message": e.message, "code": (e.extensions or {}).get("code")}
                    for e in result.errors
                ]
            }
        assert result.data is not None
        return result.data

    return execute


@pytest.fixture
def execute_synthetic(synthetic_db: AsyncEngine, settings: Settings) -> Execute:
    return make_execute(synthetic_db, settings)


@pytest.fixture
def execute_real(real_db: AsyncEngine, real_settings: Settings) -> Execute:
    return make_execute(real_db, real_settings)


@contextlib.asynccontextmanager
async def app_client(
    settings: Settings,
    *,
    execute: handler.Execute | None = None,
    started: bool = True,
    rehearse: bool = False,
    root_path: str = "",
    **overrides: Any,
) -> AsyncIterator[tuple[Starlette, httpx.AsyncClient]]:
    """The app on `settings` with `overrides` (`execute` and `rehearse` as `create_app` takes
    them), started, and a client talking to it through ASGI (an exception escaping the app is
    raised in the test, with its traceback). Not `started`: the requests meet a process whose
    start has not run (or whose database is away), and the start runs after them, to close
    what they opened."""
    app = create_app(settings.model_copy(update=overrides), execute=execute, rehearse=rehearse)
    transport = httpx.ASGITransport(app=app, root_path=root_path)
    async with contextlib.AsyncExitStack() as stack:
        if started:
            await stack.enter_async_context(app.router.lifespan_context(app))
        client = await stack.enter_async_context(
            httpx.AsyncClient(transport=transport, base_url="http://test")
        )
        yield app, client
    if not started:
        with contextlib.suppress(OSError):  # (the database out of reach: nothing was opened)
            async with app.router.lifespan_context(app):
                pass


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """HTTP through the ASGI app, against whatever the test put in the database."""
    async with app_client(settings) as (_, client):
        yield client


@pytest.fixture
async def real_client(real_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """HTTP through the ASGI app, against the real data."""
    async with app_client(real_settings) as (_, client):
        yield client


@pytest.fixture
def graphiql_assets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """GraphiQL's build output (tests/graphiql_build.py's stand-in) where the app looks for it."""
    from graph.server import graphiql
    from tests import graphiql_build

    directory = graphiql_build.write(tmp_path / "graphiql")
    monkeypatch.setattr(graphiql, "STATIC", directory)
    return directory


@pytest.fixture(scope="session")
def synthetic_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The synthetic data in a SQLite file, with an event loop of its own to read it in (the
    examples Hypothesis runs are plain calls)."""
    root = tmp_path_factory.mktemp("synthetic")
    snapshot = synthetic.write(root / "snapshot", synthetic.documents())
    (root / "manifest.json").write_text(json.dumps(synthetic.manifest()))
    url = f"sqlite+aiosqlite:///{root / 'synthetic.db'}"
    with asyncio.Runner() as runner:
        engine = create_engine(url)
        runner.run(create_tables(engine))
        runner.run(ingest_dir(engine, snapshot, root / "manifest.json"))
        yield runner, engine, Settings(database_url=url, manifest=None)
        runner.run(engine.dispose())
