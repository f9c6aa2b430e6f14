"""The `leadgreen` command: ingest (a snapshot, or the upstream history), serve, export,
export-schema, doctor: each a thin layer over a function of db, graph.server or graph.doctor.

Each command imports what it needs when it runs (the schema, SQLAlchemy, the ingest and its
HTTP client): `serve` starts without the ingest's modules, its imports made with the garbage
collector paused (until its app has read its release)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from db.errors import IngestError
from graph.settings import Settings

if TYPE_CHECKING:
    from db.follow import Round
    from db.ingest import IngestReport

database_option = click.option(
    "--database-url",
    help="SQLite path or database URL [env LEADGREEN_DATABASE_URL; default leadgreen.db]",
)
manifest_option = click.option(
    "--manifest",
    type=click.Path(dir_okay=False, path_type=Path),
    help="LeadGreen v1 index giving provenance and model entries [env LEADGREEN_MANIFEST]",
)


def _settings(**overrides: Any) -> Settings:
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


async def run_ingest(
    settings: Settings, source: str, *, only_if_empty: bool = False, echo: Any = click.echo
) -> IngestReport | None:
    """Ingest `source` with the configured manifest; with only_if_empty, only into an empty db."""
    from db import reads
    from db.database import create_engine, create_tables, sessionmaker

    engine = create_engine(settings.database_url)
    try:
        await create_tables(engine)
        make_session = sessionmaker(engine)
        if only_if_empty:
            async with make_session() as session:
                if await reads.latest_release(session) is not None:
                    return None
        # (Imported only now: a server whose database holds a release never needs them.)
        from db.ingest import ingest
        from db.snapshot import load_manifest, load_snapshot

        started = time.perf_counter()
        try:
            async with make_session() as session, collecting():
                echo(f"reading {source} ...")
                snapshot = await load_snapshot(source)
                manifest, raw = (
                    load_manifest(settings.manifest) if settings.manifest else (None, None)
                )
                report = await ingest(session, snapshot, manifest, raw, str(settings.manifest))
        except Exception:
            _count_ingest("failed", started)
            raise
        _count_ingest("unchanged" if report.unchanged else "ingested", started)
        return report
    finally:
        await engine.dispose()


@contextlib.asynccontextmanager
async def collecting() -> AsyncIterator[None]:
    """The garbage collector on within (an ingest drops as much as it makes, one task's rows
    at a time), whether or not `serve` paused it; as it was after."""
    paused = not gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if paused:
            gc.disable()


def _count_ingest(outcome: str, started: float) -> None:
    # Imported here: `serve` names the metrics directory of its workers before.
    from graph.server.observability import record_ingest

    record_ingest(outcome, time.perf_counter() - started)


async def run_history(settings: Settings, git_dir: Path) -> list[IngestReport]:
    """Ingest every data commit of the repository at `git_dir`, showing progress."""
    from db.database import create_engine, create_tables, sessionmaker
    from db.history import Commit, ingest_history
    from db.snapshot import load_manifest

    engine = create_engine(settings.database_url)
    manifest, raw = load_manifest(settings.manifest) if settings.manifest else (None, None)

    def progress(n: int, of: int, commit: Commit) -> None:
        click.echo(f"[{n}/{of}] {commit.sha[:12]} {commit.date[:10]} {commit.subject}")

    reports = []
    try:
        await create_tables(engine)
        async for report in ingest_history(
            sessionmaker(engine), git_dir, manifest, raw, str(settings.manifest), progress=progress
        ):
            _report(report)
            reports.append(report)
    finally:
        await engine.dispose()
    return reports


def _report(report: IngestReport, *, err: bool = False) -> None:
    click.echo(report.summary(), err=err)
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)


DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _fail(exc: Exception) -> None:
    if isinstance(exc, IngestError):
        message = f"ingest failed: {exc}"
    elif isinstance(exc, OSError) and exc.errno in DISK_FULL:  # what and where (db/spool.py)
        message = str(exc)
    else:
        message = f"database error: {type(exc).__name__}: {str(exc).splitlines()[0]}"
    click.echo(
        f"error: {message}\nnothing was changed; the data served before is still served.", err=True
    )
    sys.exit(1)


@click.group()
def main() -> None:
    """LeadGreen: the ML.ENERGY Leaderboard's measured energy of LLM inference, over GraphQL."""


@main.command("ingest")
@click.argument("source", required=False)
@click.option(
    "--history",
    type=click.Path(file_okay=False, path_type=Path),
    help="A local clone (bare or not) of the upstream repository: one release per commit that "
    "changed public/data, oldest first (instead of SOURCE).",
)
@manifest_option
@database_option
@click.option(
    "--metrics-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the ingest's duration and outcome there, in Prometheus text format "
    "(for node_exporter's textfile collector).",
)
def ingest_command(
    source: str | None,
    history: Path | None,
    manifest: Path | None,
    database_url: str | None,
    metrics_file: Path | None = None,
) -> None:
    """Ingest SOURCE (a directory or http(s) base URL in the upstream layout) as a release,
    or with --history every commit of the upstream repository."""
    if source is not None and history is not None:
        raise click.UsageError("give SOURCE or --history, not both")
    from sqlalchemy.exc import SQLAlchemyError

    settings = _settings(manifest=manifest, database_url=database_url, source=source)
    try:
        if history is not None:
            asyncio.run(run_history(settings, history))
            return
        report = asyncio.run(run_ingest(settings, settings.source))
    except (IngestError, SQLAlchemyError, OSError) as exc:
        _fail(exc)
    finally:
        if metrics_file is not None:
            from graph.server.observability import write_ingest_metrics

            write_ingest_metrics(metrics_file)
    assert report is not None
    _report(report)


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "leadgreen" / "follow"


async def run_follow(
    settings: Settings,
    source: str | None,
    files: str | None,
    cache: Path,
    interval: float,
    *,
    once: bool,
    metrics_file: Path | None = None,
    stop: asyncio.Event | None = None,
) -> str:
    """Follow rounds every `interval` seconds (one with `once`) until `stop` is set; each round
    logged (a JSON line) and counted; the last round's outcome."""
    from db.database import create_engine, create_tables
    from db.follow import FAILURES, FilesFollower, GitFollower, Round, Target, exclusive, redacted
    from db.snapshot import load_manifest
    from graph.server.observability import record_follow, write_follow_metrics

    log = logging.getLogger("leadgreen.follow")
    stop = stop or asyncio.Event()
    manifest, raw = load_manifest(settings.manifest) if settings.manifest else (None, None)
    engine = create_engine(settings.database_url)
    target = Target(engine, manifest, raw, str(settings.manifest))
    follower: GitFollower | FilesFollower
    if source is not None:
        follower = GitFollower(target, source, cache)
    else:
        assert files is not None
        follower = FilesFollower(target, files)
    where = redacted(source or files or "")
    migrated = False
    try:
        while True:
            started = time.perf_counter()
            result = Round()
            try:
                if not migrated:  # one follower at a time: migrations run once
                    async with exclusive(engine):
                        await create_tables(engine)
                    migrated = True
                result = await follower.round()
            except FAILURES as exc:
                result.error = exc
            _log_round(log, where, result, time.perf_counter() - started)
            written = sum(not r.unchanged for r in result.reports)
            record_follow(result.outcome, written, time.time())
            if metrics_file is not None:
                write_follow_metrics(metrics_file)
            if once or stop.is_set():
                return result.outcome
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)
            if stop.is_set():
                return result.outcome
    finally:
        await engine.dispose()


def _log_round(log: logging.Logger, source: str, result: Round, seconds: float) -> None:
    """One JSON line per round (and one per commit whose files were refused): what happened,
    to what, and why it failed."""
    from db.follow import redacted

    for commit, why in result.refused.items():
        log.warning(
            "follow: a commit's files were refused; it is not served",
            extra={"source": source, "commit": commit, "error": why},
        )
    commits: list[str | None] = [*result.commits] or [None] * len(result.reports)
    releases = [
        {"release": r.release_id, "commit": c, "unchanged": r.unchanged}
        for r, c in zip(result.reports, commits, strict=True)
    ]
    fields: dict[str, Any] = {"outcome": result.outcome, "source": source, "releases": releases}
    fields["seconds"] = round(seconds, 3)
    if result.error is not None:
        error = result.error
        fields["error"] = redacted(str(error) if isinstance(error, IngestError) else repr(error))
    if result.outcome == "failed":  # (refused files alone fail a round too, and are said above)
        log.warning("follow: the round failed; the data served is as it was", extra=fields)
    else:
        log.info(f"follow: {result.outcome}", extra=fields)


@main.command()
@click.argument("source", required=False)
@click.option(
    "--files",
    help="Instead of SOURCE: an http(s) base URL of the files in the upstream layout, whose "
    "index.json is polled with conditional requests (ETag, Last-Modified).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0, min_open=True),
    default=300.0,
    show_default=True,
    help="Seconds between two rounds.",
)
@click.option("--once", is_flag=True, help="One round, then exit (1 if it failed): for a CronJob.")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the mirror of SOURCE is kept [default: $XDG_CACHE_HOME/leadgreen/follow]",
)
@manifest_option
@database_option
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    help="Serve the follower's metrics at http://HOST:PORT/metrics.",
)
@click.option("--metrics-host", default="127.0.0.1", show_default=True)
@click.option(
    "--metrics-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the follower's metrics there after each round (Prometheus text format).",
)
def follow(
    source: str | None,
    files: str | None,
    interval: float,
    once: bool,
    cache_dir: Path | None,
    manifest: Path | None,
    database_url: str | None,
    metrics_port: int | None,
    metrics_host: str,
    metrics_file: Path | None,
) -> None:
    """Keep the database up to date with the upstream data: every --interval, fetch SOURCE (a
    git repository's URL or path, mirrored in --cache-dir) and ingest each data commit no
    release holds yet, oldest first, once, whatever other followers run beside; or poll --files.
    A failed round is logged and counted, and leaves the data served as it was."""
    import logging.config
    import signal

    from graph.server.observability import logging_config, serve_follow_metrics

    if (source is None) == (files is None):
        raise click.UsageError("give SOURCE (a git repository) or --files URL, one of them")
    settings = _settings(manifest=manifest, database_url=database_url)
    logging.config.dictConfig(logging_config(settings.log_level))
    if metrics_port is not None:
        serve_follow_metrics(metrics_host, metrics_port)

    async def run() -> str:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        return await run_follow(
            settings,
            source,
            files,
            cache_dir or _cache_dir(),
            interval,
            once=once,
            metrics_file=metrics_file,
            stop=stop,
        )

    outcome = asyncio.run(run())
    sys.exit(1 if once and outcome == "failed" else 0)


@main.command()
@click.option(
    "--source",
    help="Ingested into an empty database before serving "
    "[env LEADGREEN_SOURCE; default: upstream, pinned]",
)
@manifest_option
@database_option
@click.option("--host", help="[env LEADGREEN_HOST; default 127.0.0.1]")
@click.option("--port", type=int, help="[env LEADGREEN_PORT; default 8000]")
@click.option("--workers", type=int, help="uvicorn worker processes [env LEADGREEN_WORKERS]")
def serve(**options: Any) -> None:
    """Serve the API (ingesting the source first if the database is empty)."""
    # Paused until the app has read its release (graph.server.app's start freezes what was
    # made so far, then resumes it): the start makes a few hundred thousand objects that all
    # live (modules, the schema, the catalog), which the collector's passes would only scan.
    gc.disable()
    settings = _settings(**options)
    with shared_metrics(settings):
        _serve(settings)


# Before any of `serve`'s workers (or itself) imports prometheus-client: the directory where the
# workers share their metrics.
@contextlib.contextmanager
def shared_metrics(settings: Settings) -> Iterator[None]:
    """Workers share their metrics through a directory (prometheus-client's multiprocess mode):
    PROMETHEUS_MULTIPROC_DIR, emptied of an earlier run's files, or else for several workers a
    new one, removed afterwards."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        for stale in Path(directory).glob("*.db"):
            stale.unlink()
        yield
        return
    if settings.workers == 1 or not settings.metrics:
        yield
        return
    made = tempfile.mkdtemp(prefix="leadgreen-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = made
    try:
        yield
    finally:
        del os.environ["PROMETHEUS_MULTIPROC_DIR"]
        shutil.rmtree(made, ignore_errors=True)


def _serve(settings: Settings) -> None:
    import uvicorn
    from sqlalchemy.exc import SQLAlchemyError

    from graph.server.edge import uvicorn_settings
    from graph.server.observability import logging_config

    try:
        report = asyncio.run(run_ingest(settings, settings.source, only_if_empty=True))
    except (IngestError, SQLAlchemyError, OSError) as exc:
        _fail(exc)
    # What serve says to a person goes to stderr: stdout carries only the JSON log lines.
    if report is not None:
        _report(report, err=True)
    click.echo("\n".join(where(settings)), err=True)
    # Workers build their app from the environment: hand them these settings.
    os.environ.update(settings.environment())
    if settings.workers > 1:  # this process only supervises: each worker loads its app
        gc.enable()
    uvicorn.run(
        "graph.server.app:served_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level,
        # JSON logs in every worker; each request's line is the app's own (observability.py).
        log_config=logging_config(settings.log_level),
        access_log=False,
        **uvicorn_settings(settings),
    )


def where(settings: Settings) -> list[str]:
    """What `serve` says as it starts: where its database is, and GraphiQL's address."""
    from sqlalchemy.engine import make_url

    from db.database import normalize_url

    url = make_url(normalize_url(settings.database_url))
    if url.get_backend_name() != "sqlite":
        database = url.render_as_string(hide_password=True)
    elif url.database in (None, "", ":memory:"):
        database = "SQLite, in memory"
    else:
        database = f"SQLite file {Path(url.database).resolve()}"
    # An address that listens on every interface is reached on the loopback one.
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(settings.host, settings.host)
    address = f"http://{f'[{host}]' if ':' in host else host}:{settings.port}/graphql"
    said = f"GraphiQL: {address}" if settings.graphiql else f"GraphQL: {address} (GraphiQL is off)"
    return [f"database: {database}", said]


async def run_export(settings: Settings, release: int | None) -> tuple[int, dict[str, bytes]]:
    from db import reads
    from db.database import create_engine, sessionmaker
    from db.files import ExportError, release_files

    engine = create_engine(settings.database_url)
    try:
        async with sessionmaker(engine)() as session:
            row = (
                await reads.release(session, release_id=release)
                if release is not None
                else await reads.latest_release(session)
            )
            if row is None:
                raise click.ClickException(
                    f"no release {release}" if release is not None else "the database is empty"
                )
            try:
                return row.id, await release_files(session, release_id=row.id)
            except ExportError as exc:
                raise click.ClickException(str(exc)) from None
    finally:
        await engine.dispose()


@main.command("export")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--release", type=int, help="Release number (default: the latest).")
@click.option("--replace", is_flag=True, help="Replace DIRECTORY if it is not empty.")
@database_option
def export_command(
    directory: Path, release: int | None, replace: bool, database_url: str | None
) -> None:
    """Write a release's files, byte for byte as published, to DIRECTORY (index.json, tasks/,
    models/). DIRECTORY must be new or empty (or --replace); it is written whole or not at all."""
    from db.files import ExportError, write_files

    settings = _settings(database_url=database_url)
    release_id, files = asyncio.run(run_export(settings, release))
    try:
        write_files(files, directory, replace=replace)
    except (ExportError, IngestError, OSError) as exc:
        raise click.ClickException(f"export failed: {exc}; {directory} is as it was") from None
    click.echo(f"exported release {release_id}: {len(files)} files to {directory}")


@main.command()
@database_option
def doctor(database_url: str | None) -> None:
    """Check the settings, the database, the data source, Redis and GraphiQL's assets; print
    one line per check (what is wrong and how to fix it); exit 1 on any problem."""
    from graph.doctor import report

    sys.exit(report(**({"database_url": database_url} if database_url else {})))


@main.command("export-schema")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to this file instead of standard output.",
)
def export_schema(output: Path | None) -> None:
    """Print the GraphQL schema (SDL); `schema.graphql` is this command's output."""
    from graph.schema import build_schema

    sdl = build_schema().as_str() + "\n"
    if output is None:
        click.echo(sdl, nl=False)
    else:
        output.write_text(sdl)
