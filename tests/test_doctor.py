"""`leadgreen doctor`: one line per check, what is wrong and how to fix it, exit 1 on a problem;
against real SQLite and PostgreSQL databases, a directory source, a down Redis port."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from db.database import create_engine, create_tables
from graph import doctor
from graph.cli import main
from graph.settings import Settings

pytestmark = pytest.mark.anyio

DOWN = "redis://127.0.0.1:9/0"  # nothing listens on the discard port


def healthy(settings: Settings, source: Path, **more: Any) -> Settings:
    return settings.model_copy(update={"source": str(source), "graphiql": False, **more})


async def statuses(settings: Settings) -> dict[str, str]:
    checks = await doctor.run(settings, doctor.check_settings(settings))
    return {check.name: check.status for check in checks}


async def test_a_healthy_setup(synthetic_db, settings, synthetic_dir) -> None:
    checks = await doctor.run(*_checked(healthy(settings, synthetic_dir)))
    assert {c.name: c.status for c in checks} == {
        "settings": "ok",
        "database": "ok",
        "source": "ok",
        "redis": "skipped",
        "graphiql": "skipped",
        "metrics": "ok",
        "tracing": "skipped",
    }
    database = next(c for c in checks if c.name == "database")
    assert "release 1 (data of 2030-01-02)" in database.detail


async def test_an_empty_database(database_url, settings, synthetic_dir) -> None:
    engine = create_engine(database_url)
    await create_tables(engine)
    await engine.dispose()
    [_, database, source, *_] = await doctor.run(*_checked(healthy(settings, synthetic_dir)))
    assert (database.status, database.detail) == ("problem", "no release has been ingested")
    assert database.fix == "run `leadgreen ingest SOURCE`"
    assert source.status == "ok"


async def test_a_database_not_migrated(tmp_path, synthetic_dir) -> None:
    path = tmp_path / "old.db"
    engine = create_engine(str(path))
    async with engine.begin():  # creates the file, and no table
        pass
    await engine.dispose()
    settings = Settings(database_url=str(path), source=str(synthetic_dir), graphiql=False)
    [_, database, *_] = await doctor.run(*_checked(settings))
    assert database.status == "problem"
    assert database.detail.startswith("at migration none, the code's is ")


async def test_a_missing_sqlite_file(tmp_path, synthetic_dir) -> None:
    settings = Settings(database_url=str(tmp_path / "none.db"), source=str(synthetic_dir))
    [_, database, *_] = await doctor.run(*_checked(settings))
    assert (database.status, database.detail) == (
        "problem",
        f"no SQLite file at {tmp_path}/none.db",
    )
    assert not (tmp_path / "none.db").exists()  # a check changes nothing


async def test_an_unreachable_postgresql(synthetic_dir) -> None:
    settings = Settings(
        database_url="postgresql+asyncpg://postgres@127.0.0.1:9/none", source=str(synthetic_dir)
    )
    database, has_release = await doctor.check_database(settings)
    assert (database.status, has_release) == ("problem", False)
    assert database.detail.startswith("cannot connect: ")


async def test_redis_down(synthetic_db, settings, synthetic_dir) -> None:
    for more in ({"cache": "redis"}, {"cache": "redis", "rate_limit": True}):
        check = await doctor.check_redis(healthy(settings, synthetic_dir, redis_url=DOWN, **more))
        assert (check.status, check.detail) == (
            "problem",
            "redis://127.0.0.1:9/0 does not answer: ConnectionError",
        )
        assert check.fix.startswith("start Redis (scripts/redis-up)")


@pytest.mark.redis
async def test_redis_up(settings) -> None:
    check = await doctor.check_redis(settings.model_copy(update={"cache": "redis"}))
    assert (check.status, check.detail) == ("ok", "redis://127.0.0.1:6379/0 answers")


async def test_sources(synthetic_db, settings, tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = await doctor.check_source(healthy(settings, empty), has_release=False)
    assert (missing.status, missing.detail) == ("problem", f"{empty} has no index.json")
    kept = await doctor.check_source(healthy(settings, empty), has_release=True)
    assert kept.status == "warning"
    url = settings.model_copy(update={"source": "http://127.0.0.1:9/data"})
    unreachable = await doctor.check_source(url, has_release=False)
    assert unreachable.status == "problem"
    assert unreachable.detail.startswith("http://127.0.0.1:9/data does not answer: ConnectError")


def test_graphiql_not_built(tmp_path) -> None:
    check = doctor.check_graphiql(Settings(graphiql=True), tmp_path)
    assert (check.status, check.fix) == ("problem", "run scripts/build-graphiql")


def test_settings_out_of_range() -> None:
    wrong = Settings(port=70000, log_level="loud", cors_origins=["app.example"])
    check = doctor.check_settings(wrong)
    assert check.status == "problem"
    assert check.detail == (
        "LEADGREEN_PORT 70000 is not a port (1 to 65535); LEADGREEN_LOG_LEVEL 'loud' is not one "
        "of ('critical', 'error', 'warning', 'info', 'debug', 'trace'); LEADGREEN_CORS_ORIGINS: "
        "'app.example' is not an origin"
    )


async def test_the_command(synthetic_db, database_url, synthetic_dir, monkeypatch) -> None:
    monkeypatch.setenv("LEADGREEN_SOURCE", str(synthetic_dir))
    monkeypatch.setenv("LEADGREEN_GRAPHIQL", "false")
    runner = CliRunner()

    def run_doctor(*args: str) -> Any:  # in a thread: the command runs its own event loop
        return runner.invoke(main, ["doctor", *args])

    ok = await anyio.to_thread.run_sync(run_doctor, "--database-url", database_url)
    assert ok.exit_code == 0, ok.output
    assert (
        ok.output.splitlines()[0] == "ok       settings: they parse, and their values are in range"
    )
    monkeypatch.setenv("LEADGREEN_CACHE", "redis")
    monkeypatch.setenv("LEADGREEN_REDIS_URL", DOWN)
    down = await anyio.to_thread.run_sync(run_doctor, "--database-url", database_url)
    assert down.exit_code == 1
    assert "problem  redis: redis://127.0.0.1:9/0 does not answer" in down.output
    monkeypatch.setenv("LEADGREEN_WORKERS", "0")
    wrong = await anyio.to_thread.run_sync(run_doctor)
    assert (wrong.exit_code, wrong.output) == (
        1,
        "problem  settings: LEADGREEN_WORKERS: Input should be greater than or equal to 1; "
        "fix: correct those environment variables\n",
    )


def _checked(settings: Settings) -> tuple[Settings, doctor.Check]:
    return settings, doctor.check_settings(settings)


def test_graphiql_built(graphiql_assets) -> None:
    check = doctor.check_graphiql(Settings(graphiql=True))
    assert (check.status, check.detail) == ("ok", "its assets are built")
