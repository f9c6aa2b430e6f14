"""The `leadgreen` command: serve, ingest, export-schema."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import click
import orjson
import uvicorn
from sqlalchemy.exc import SQLAlchemyError

from db import reads
from db.engine import create_engine, create_tables, sessionmaker
from db.errors import IngestError
from db.export import export_documents
from db.ingest import IngestReport, ingest
from db.snapshot import load_manifest, load_snapshot
from graph.settings import Settings

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
    engine = create_engine(settings.database_url)
    try:
        await create_tables(engine)
        make_session = sessionmaker(engine)
        if only_if_empty:
            async with make_session() as session:
                if await reads.latest_release(session) is not None:
                    return None
        async with make_session() as session:
            echo(f"reading {source} ...")
            snapshot = await load_snapshot(source)
            manifest, raw = load_manifest(settings.manifest) if settings.manifest else (None, None)
            return await ingest(session, snapshot, manifest, raw, str(settings.manifest))
    finally:
        await engine.dispose()


def _report(report: IngestReport) -> None:
    click.echo(report.summary())
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)


def _fail(exc: Exception) -> None:
    if isinstance(exc, IngestError):
        message = f"ingest failed: {exc}"
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
@manifest_option
@database_option
def ingest_command(source: str | None, manifest: Path | None, database_url: str | None) -> None:
    """Ingest SOURCE (a directory or http(s) base URL in the upstream layout) as a release."""
    settings = _settings(manifest=manifest, database_url=database_url, source=source)
    try:
        report = asyncio.run(run_ingest(settings, settings.source))
    except (IngestError, SQLAlchemyError, OSError) as exc:
        _fail(exc)
    assert report is not None
    _report(report)


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
    settings = _settings(**options)
    try:
        report = asyncio.run(run_ingest(settings, settings.source, only_if_empty=True))
    except (IngestError, SQLAlchemyError, OSError) as exc:
        _fail(exc)
    if report is not None:
        _report(report)
    # Workers build their app from the environment: hand them these settings.
    for name, value in settings.model_dump(exclude_none=True).items():
        if name != "cors_origins":
            os.environ[f"LEADGREEN_{name.upper()}"] = str(value)
    os.environ["LEADGREEN_CORS_ORIGINS"] = ",".join(settings.cors_origins)
    uvicorn.run(
        "graph.server.app:create_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level,
    )


async def run_export(settings: Settings, release: int | None) -> tuple[int, dict[str, Any]]:
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
            return row.id, await export_documents(session, release_id=row.id)
    finally:
        await engine.dispose()


@main.command("export")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--release", type=int, help="Release id (default: the latest).")
@database_option
def export_command(directory: Path, release: int | None, database_url: str | None) -> None:
    """Write a release in the upstream layout (index.json, tasks/, models/) to DIRECTORY."""
    settings = _settings(database_url=database_url)
    release_id, documents = asyncio.run(run_export(settings, release))
    for path, document in documents.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    click.echo(f"exported release {release_id}: {len(documents)} files to {directory}")


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
