"""`leadgreen doctor`: checks the settings, the database, the data source, Redis and GraphiQL's
assets, and says for each what is wrong and how to fix it. Nothing is changed by a check."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import click
import httpx
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from pydantic import ValidationError
from sqlalchemy.engine import make_url

from db import reads
from db.database import alembic_config, create_engine, normalize_url, sessionmaker
from graph.settings import Settings

Status = Literal["ok", "warning", "problem", "skipped"]
TIMEOUT_SECONDS = 5.0
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""

    def line(self) -> str:
        fix = f"; fix: {self.fix}" if self.fix else ""
        return f"{self.status:8} {self.name}: {self.detail}{fix}"


def read_settings(**overrides: Any) -> tuple[Settings | None, Check]:
    """The settings from the environment (and `overrides`), or the problem with them."""
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        errors = "; ".join(
            f"LEADGREEN_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
        )
        return None, Check("settings", "problem", errors, "correct those environment variables")
    except ValueError as exc:  # a variable that is not read (graph/settings.py)
        return None, Check("settings", "problem", str(exc), "unset those environment variables")
    return settings, check_settings(settings)


def check_settings(settings: Settings) -> Check:
    """What pydantic's types do not say: ranges, names, files."""
    problems = []
    if not 0 < settings.port < 65536:
        problems.append(f"LEADGREEN_PORT {settings.port} is not a port (1 to 65535)")
    if settings.log_level.lower() not in LOG_LEVELS:
        problems.append(f"LEADGREEN_LOG_LEVEL {settings.log_level!r} is not one of {LOG_LEVELS}")
    if settings.manifest is not None and not settings.manifest.is_file():
        problems.append(f"LEADGREEN_MANIFEST {settings.manifest} is not a file")
    for origin in settings.cors_origins:
        parts = urlsplit(origin)
        if origin != "*" and (parts.scheme not in ("http", "https") or not parts.netloc):
            problems.append(f"LEADGREEN_CORS_ORIGINS: {origin!r} is not an origin")
    if settings.public_base_url and urlsplit(settings.public_base_url).scheme not in (
        "http",
        "https",
    ):
        problems.append("LEADGREEN_PUBLIC_BASE_URL is not an http(s) URL")
    if settings.max_page_size < settings.default_page_size:
        problems.append("LEADGREEN_LIMITS: default_page_size is larger than max_page_size")
    try:
        make_url(normalize_url(settings.database_url))
    except Exception as exc:
        problems.append(f"LEADGREEN_DATABASE_URL does not parse: {exc}")
    if problems:
        return Check("settings", "problem", "; ".join(problems), "correct those settings")
    return Check("settings", "ok", "they parse, and their values are in range")


async def check_database(settings: Settings) -> tuple[Check, bool]:
    """The database: reachable, migrated to the current revision, holding a release; and
    whether it holds one."""
    url = make_url(normalize_url(settings.database_url))
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        if not Path(url.database).exists():
            fix = "run `leadgreen ingest` (or `leadgreen serve`, which ingests into a new one)"
            return Check("database", "problem", f"no SQLite file at {url.database}", fix), False
    engine = create_engine(settings.database_url, statement_timeout=TIMEOUT_SECONDS)
    try:
        async with asyncio.timeout(TIMEOUT_SECONDS):
            async with engine.connect() as conn:
                revision = await conn.run_sync(
                    lambda sync: MigrationContext.configure(sync).get_current_revision()
                )
            async with sessionmaker(engine)() as session:
                latest = await reads.latest_release(session) if revision is not None else None
    except TimeoutError:
        fix = "check LEADGREEN_DATABASE_URL and that the server is up"
        return Check("database", "problem", f"no answer within {TIMEOUT_SECONDS:g} s", fix), False
    except Exception as exc:
        detail = f"cannot connect: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        fix = "check LEADGREEN_DATABASE_URL, the server and its credentials"
        return Check("database", "problem", detail, fix), False
    finally:
        await engine.dispose()
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if revision != head:
        detail = f"at migration {revision or 'none'}, the code's is {head}"
        fix = "run `leadgreen ingest` or `leadgreen serve` (both migrate first)"
        return Check("database", "problem", detail, fix), False
    if latest is None:
        fix = "run `leadgreen ingest SOURCE`"
        return Check("database", "problem", "no release has been ingested", fix), False
    detail = f"{url.get_backend_name()}, migrated, release {latest.id} (data of "
    return Check("database", "ok", detail + f"{latest.last_updated})"), True


async def check_source(settings: Settings, has_release: bool) -> Check:
    """The upstream snapshot: a directory with index.json, or a URL that answers for it.
    Unreachable while the database holds a release, it is a warning: only ingests need it."""
    source = settings.source
    if source.startswith(("http://", "https://")):
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS / 2) as client:
                response = await client.head(source.rstrip("/") + "/index.json")
            if response.status_code >= 400:
                raise ValueError(f"index.json answered {response.status_code}")
        except (httpx.HTTPError, ValueError) as exc:
            detail = f"{source} does not answer: {type(exc).__name__}: {exc}"[:300]
            return _source_problem(detail, has_release)
        return Check("source", "ok", f"{source} answers")
    path = Path(source)
    if not (path / "index.json").is_file():
        what = "has no index.json" if path.is_dir() else "is not a directory"
        return _source_problem(f"{source} {what}", has_release)
    return Check("source", "ok", f"{source} holds index.json")


def _source_problem(detail: str, has_release: bool) -> Check:
    fix = "set LEADGREEN_SOURCE to a snapshot directory or the upstream base URL"
    if has_release:
        return Check("source", "warning", detail + " (needed only to ingest again)", fix)
    return Check("source", "problem", detail, fix)


async def check_redis(settings: Settings) -> Check:
    if settings.cache != "redis":  # (the rate-limit buckets are shared there with the cache)
        return Check("redis", "skipped", "not used (LEADGREEN_CACHE is not redis)")
    from graph.server.response_cache import connect_redis

    redis = connect_redis(settings.redis_url)
    try:
        async with asyncio.timeout(TIMEOUT_SECONDS):
            await redis.ping()
    except Exception as exc:
        detail = f"{_redacted(settings.redis_url)} does not answer: {type(exc).__name__}"
        fix = "start Redis (scripts/redis-up) or check LEADGREEN_REDIS_URL"
        return Check("redis", "problem", detail, fix)
    finally:
        await redis.aclose()
    return Check("redis", "ok", f"{_redacted(settings.redis_url)} answers")


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path}"


def check_graphiql(settings: Settings, directory: Path | None = None) -> Check:
    if not settings.graphiql:
        return Check("graphiql", "skipped", "GraphiQL is off (LEADGREEN_GRAPHIQL=false)")
    from graph.server.graphiql import STATIC, Build

    try:
        Build.read(directory or STATIC)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        detail = f"its assets are not built ({type(exc).__name__}: {exc})"[:300]
        return Check("graphiql", "problem", detail, "run scripts/build-graphiql")
    return Check("graphiql", "ok", "its assets are built")


def check_metrics(settings: Settings) -> Check:
    if not settings.metrics:
        return Check("metrics", "skipped", "off (LEADGREEN_METRICS=false)")
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory and not (Path(directory).is_dir() and os.access(directory, os.W_OK)):
        fix = "create it, or unset it (`leadgreen serve` makes one for several workers)"
        detail = f"PROMETHEUS_MULTIPROC_DIR {directory} is not a writable directory"
        return Check("metrics", "problem", detail, fix)
    where = f"shared by the workers in {directory}" if directory else "per process"
    return Check("metrics", "ok", f"served at /metrics, {where}")


def check_tracing(settings: Settings) -> Check:
    from graph.server.observability import wanted

    if not wanted(settings):
        return Check("tracing", "skipped", "off (LEADGREEN_OTEL, OTEL_EXPORTER_OTLP_ENDPOINT)")
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        fix = "pip install 'leadgreen[otel]', or turn tracing off"
        return Check("tracing", "problem", "asked for, but OpenTelemetry is not installed", fix)
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "the OTLP default (localhost:4318)"
    )
    return Check("tracing", "ok", f"spans go to {endpoint}")


async def run(settings: Settings | None, settings_check: Check) -> list[Check]:
    """Every check; with settings that do not parse, only that one."""
    if settings is None:
        return [settings_check]
    database, has_release = await check_database(settings)
    return [
        settings_check,
        database,
        await check_source(settings, has_release),
        await check_redis(settings),
        check_graphiql(settings),
        check_metrics(settings),
        check_tracing(settings),
    ]


def report(**overrides: Any) -> int:
    """Run every check, print a line for each; 1 when one found a problem, else 0."""
    settings, settings_check = read_settings(**overrides)
    checks = asyncio.run(run(settings, settings_check))
    for check in checks:
        click.echo(check.line())
    return 1 if any(check.status == "problem" for check in checks) else 0
