"""`leadgreen follow`: a repository that gains commits (tests/history_repo.py), or files polled
with conditional requests (tests/httpserver.py), ingested each once as a release with its
provenance, on SQLite and PostgreSQL; a failed fetch or refused files change nothing served and
are logged and counted; followers beside each other ingest each commit once (the lock).

The rounds are run in this process (the quick loop); `leadgreen follow` itself runs as a process
in the `slow` tests (two at once), and beside `leadgreen serve` in the `follow` one.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from graphql import parse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from db.database import create_engine, sessionmaker
from db.files import release_files
from db.follow import Busy, FilesFollower, GitFollower, Mirror, Target, exclusive, redacted
from graph.cli import main
from graph.engine.cost import actual_cost
from graph.engine.prepared import Prepared
from graph.settings import Settings
from tests import synthetic
from tests.conftest import examples, make_execute
from tests.history_repo import add_commit, build_repository, git, snapshot_files
from tests.httpserver import Fault, SnapshotServer
from tests.live import LEADGREEN, answering, free_port, stop, subscriber, wait_until
from tests.reports import cost
from tests.test_cost import requested_cost

pytestmark = pytest.mark.anyio

RELEASES = """query Releases { releases { number upstreamCommit commitDate commitSubject
  lastUpdated files { path sha256 } } }"""


def data_of(tmp: Path, day: str) -> dict[str, bytes]:
    """The synthetic snapshot's files, compiled on `day` (so each day's are new data)."""
    docs = synthetic.documents()
    docs["index.json"]["last_updated"] = day
    return snapshot_files(synthetic.write(tmp / f"data-{day}", docs))


def commit_of(day: str) -> tuple[str, str, str]:
    """(date, subject) of the commit of `day`'s data, and the release's commitDate."""
    return f"{day}T10:00:00+00:00", f"Data of {day}", f"{day}T10:00:00+00:00"


def repository(tmp: Path, days: list[str]) -> Path:
    """A repository (its work tree) with one data commit per day, oldest first."""
    made = [(commit_of(day)[0], commit_of(day)[1], data_of(tmp, day)) for day in days]
    return build_repository(tmp / "upstream", made)


def head(work: Path) -> str:
    return git(work, "rev-parse", "HEAD").strip()


def expected(days_and_commits: list[tuple[str, str]], tmp: Path) -> list[dict[str, Any]]:
    """The `releases` a user would check: one per commit, newest first, with its provenance."""
    import hashlib

    oldest_first = [
        {
            "number": n,
            "upstreamCommit": sha,
            "commitDate": commit_of(day)[2],
            "commitSubject": commit_of(day)[1],
            "lastUpdated": day,
            "files": [
                {"path": path, "sha256": hashlib.sha256(data).hexdigest()}
                for path, data in sorted(data_of(tmp, day).items())
            ],
        }
        for n, (day, sha) in enumerate(days_and_commits, start=1)
    ]
    return oldest_first[::-1]


def follower(engine: AsyncEngine, source: Path | str, tmp: Path) -> GitFollower:
    return GitFollower(Target(engine), str(source), tmp / "cache")


def one_commit(engine: AsyncEngine, tmp: Path) -> tuple[Path, str, GitFollower]:
    """A repository with the data of 2030-01-01, its commit, and a follower of it."""
    work = repository(tmp, ["2030-01-01"])
    return work, head(work), follower(engine, work, tmp)


async def test_each_new_commit_becomes_one_release_with_its_provenance(
    engine: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    work, first, follow = one_commit(engine, tmp_path)
    execute = make_execute(engine, settings)

    done = await follow.round()
    assert (done.outcome, done.commits, done.error) == ("ingested", [first], None)
    assert (await execute(RELEASES))["releases"] == expected([("2030-01-01", first)], tmp_path)

    # Nothing new upstream: nothing read, nothing written.
    again = await follow.round()
    assert (again.outcome, again.reports, again.error) == ("unchanged", [], None)

    # Two data commits and one outside the data: two releases, oldest first.
    second = add_commit(work, *commit_of("2030-02-01")[:2], data_of(tmp_path, "2030-02-01"))
    add_commit(work, "2030-02-02T10:00:00+00:00", "README", {"/README.md": b"not data\n"})
    third = add_commit(work, *commit_of("2030-03-01")[:2], data_of(tmp_path, "2030-03-01"))
    done = await follow.round()
    assert (done.outcome, done.commits) == ("ingested", [second, third])
    assert [r.unchanged for r in done.reports] == [False, False]
    days = [("2030-01-01", first), ("2030-02-01", second), ("2030-03-01", third)]
    assert (await execute(RELEASES))["releases"] == expected(days, tmp_path)
    # Each release keeps its commit's files byte for byte.
    async with sessionmaker(engine)() as session:
        assert await release_files(session, release_id=3) == data_of(tmp_path, "2030-03-01")

    # A new follower (a restart, another replica's): what a release holds is not read again.
    fresh = await follower(engine, work, tmp_path / "other").round()
    assert (fresh.outcome, fresh.reports, fresh.error) == ("unchanged", [], None)


async def test_a_failed_fetch_changes_nothing_served(
    engine: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    work, _, follow = one_commit(engine, tmp_path)
    assert (await follow.round()).outcome == "ingested"
    execute = make_execute(engine, settings)
    before = await execute(RELEASES)

    work.rename(tmp_path / "away")  # the source is gone (a network error, a moved repository)
    failed = await follow.round()
    assert failed.outcome == "failed"
    assert str(failed.error) == (
        f"{work}: git fetch failed: fatal: '{work}' does not appear to be a git repository"
    )
    assert await execute(RELEASES) == before

    (tmp_path / "away").rename(work)
    sha = add_commit(work, *commit_of("2030-02-01")[:2], data_of(tmp_path, "2030-02-01"))
    assert (
        (await follow.round()).outcome,
        (await execute(RELEASES))["releases"][0]["number"],
    ) == (
        "ingested",
        2,
    )
    assert (await execute(RELEASES))["releases"][0]["upstreamCommit"] == sha


@pytest.mark.parametrize(
    "source, message",
    [
        ("missing", "git clone failed: fatal: repository '{source}' does not exist"),
        ("not-a-repository", "git clone failed: fatal: repository '{source}' does not exist"),
        ("ext::sh -c touch% /tmp/pwned", "git clone failed: fatal: transport 'ext' not allowed"),
    ],
)
async def test_a_source_that_cannot_be_cloned_leaves_no_mirror(
    engine: AsyncEngine, settings: Settings, tmp_path: Path, source: str, message: str
) -> None:
    (tmp_path / "not-a-repository").mkdir()
    where = source if source.startswith("ext::") else str(tmp_path / source)
    follow = follower(engine, where, tmp_path)
    failed = await follow.round()
    assert (failed.outcome, str(failed.error)) == (
        "failed",
        f"{where}: " + message.format(source=where),
    )
    assert list((tmp_path / "cache").iterdir()) == []  # no half clone kept
    assert (await make_execute(engine, settings)(RELEASES))["releases"] == []


async def test_refused_files_are_reported_and_later_commits_still_come(
    engine: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    work, first, follow = one_commit(engine, tmp_path)
    await follow.round()
    broken = {**data_of(tmp_path, "2030-02-01"), "index.json": b'{"last_updated": '}
    bad = add_commit(work, "2030-02-01T10:00:00+00:00", "Broken", broken)
    good = add_commit(work, *commit_of("2030-03-01")[:2], data_of(tmp_path, "2030-03-01"))

    done = await follow.round()
    assert done.outcome == "failed"  # counted as a failure, though the later commit came
    assert done.refused == {bad: "index.json: malformed JSON: Expecting value at line 1 column 18"}
    assert done.commits == [good]
    releases = (await make_execute(engine, settings)(RELEASES))["releases"]
    assert [r["upstreamCommit"] for r in releases] == [good, first]
    # Refused once: not read again by this follower.
    assert ((await follow.round()).outcome, (await follow.round()).refused) == ("unchanged", {})


async def test_the_lock_admits_one_follower_at_a_time(database_url: str) -> None:
    first, second = create_engine(database_url), create_engine(database_url)
    order: list[str] = []
    try:
        async with exclusive(first):
            with pytest.raises(Busy):
                async with exclusive(second, wait=False):
                    pass  # pragma: no cover
            waiting = asyncio.create_task(_take(second, order))
            await asyncio.sleep(0)  # the waiter starts waiting (the order holds either way)
            order.append("released")
        await waiting
        assert order == ["released", "acquired"]
        async with exclusive(second, wait=False):  # free again once both are out
            pass
    finally:
        await first.dispose()
        await second.dispose()


async def _take(engine: AsyncEngine, order: list[str]) -> None:
    async with exclusive(engine):
        order.append("acquired")


# A step of a generated history: a commit (new data, the data of an earlier commit again, a
# file outside the data, files that are refused) or a round of one of two followers.
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("commit"), st.sampled_from(["new", "again", "outside", "broken"])),
        st.tuples(st.just("round"), st.sampled_from([0, 1])),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=STEPS)
def test_any_history_followed_by_two_followers_makes_one_release_per_new_data(
    sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory, steps: list[Any]
) -> None:
    """Whatever the commits and whichever follower runs a round: after each round the releases
    are the data committed so far, each once (an earlier commit's data again is not a new
    release), numbered in commit order; a round fails exactly when it meets refused files its
    follower had not met, and then writes the rest."""
    tmp = tmp_path_factory.mktemp("history")
    shutil.copy(sqlite_template, tmp / "db.sqlite")
    asyncio.run(_follow_history(f"sqlite+aiosqlite:///{tmp / 'db.sqlite'}", tmp, steps))


async def _follow_history(url: str, tmp: Path, steps: list[Any]) -> None:
    start = "2029-12-31"
    work = build_repository(
        tmp / "upstream", [(f"{start}T10:00:00+00:00", start, data_of(tmp, start))]
    )
    engine = create_engine(url)
    followers = [follower(engine, work, tmp / f"f{n}") for n in range(2)]
    contents = [start]  # the day of each data commit's files, in commit order
    first = {start: head(work)}  # a day's data -> the first commit with it
    broken: list[str] = []
    met = [0, 0]  # the refused commits each follower has met
    stored = 0  # the releases stored after the last round
    settings = Settings(database_url=url, manifest=None)
    try:
        for step, what in steps:
            if step == "commit":
                n = len(contents) + len(broken) - 1
                day = f"2030-{1 + n // 28:02d}-{1 + n % 28:02d}"
                if what == "again" and contents:
                    day = contents[0]
                if what in ("new", "again"):
                    sha = add_commit(work, f"{day}T10:00:00+00:00", day, data_of(tmp, day))
                    contents.append(day)
                    first.setdefault(day, sha)
                elif what == "outside":
                    add_commit(
                        work, "2030-06-01T10:00:00+00:00", "README", {"/README.md": day.encode()}
                    )
                else:
                    files = {**data_of(tmp, day), "index.json": f'{{"{day}": '.encode()}
                    broken.append(add_commit(work, f"{day}T10:00:00+00:00", "Broken", files))
                continue
            done = await followers[what].round()
            assert done.error is None
            assert sorted(done.refused) == sorted(broken[met[what] :])
            fails = len(broken) > met[what]
            met[what] = len(broken)
            wrote = any(not r.unchanged for r in done.reports)
            assert done.outcome == ("failed" if fails else "ingested" if wrote else "unchanged")
            releases = (await make_execute(engine, settings)(RELEASES))["releases"]
            by_number = sorted(releases, key=lambda r: r["number"])
            assert [(r["upstreamCommit"], r["lastUpdated"]) for r in by_number] == [
                (sha, day) for day, sha in first.items()
            ]
            assert wrote == (len(first) > stored)
            stored = len(first)
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    "text, shown",
    [
        ("https://user:token@example.org/repo.git", "https://***@example.org/repo.git"),
        (
            "fatal: unable to access 'https://tok@host/r/': 403",
            "fatal: unable to access 'https://***@host/r/': 403",
        ),
        ("ssh://git@host:22/repo", "ssh://***@host:22/repo"),
        ("https://example.org/repo.git", "https://example.org/repo.git"),
        ("/srv/repo@2", "/srv/repo@2"),
    ],
)
def test_credentials_in_a_source_are_never_shown(text: str, shown: str) -> None:
    assert redacted(text) == shown


def test_the_mirror_lives_in_the_cache_under_a_name_of_its_source(tmp_path: Path) -> None:
    one = Mirror("https://github.com/ml-energy/leaderboard", tmp_path)
    other = Mirror("https://example.org/fork/leaderboard", tmp_path)
    assert one.path.parent == tmp_path and one.path.name.startswith("leaderboard-")
    assert one.path != other.path


async def test_files_are_polled_with_conditional_requests(
    engine: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    root = synthetic.write(tmp_path / "files", synthetic.documents())
    task = f"tasks/{synthetic.TASK}.json"
    with SnapshotServer(root) as server:
        follow = FilesFollower(Target(engine), server.url)
        done = await follow.round()
        assert (done.outcome, [r.release_id for r in done.reports]) == ("ingested", [1])
        reads = server.count(task)

        # Unchanged upstream: a 304 for each file, and the snapshot is not read.
        again = await follow.round()
        assert (again.outcome, again.reports) == ("unchanged", [])
        assert (server.not_modified["index.json"], server.not_modified[task]) == (1, 1)
        assert server.count(task) == reads + 1

        # The server fails: counted as a failure, nothing changes, and tried again after.
        server.fail("index.json", Fault.http(503))
        failed = await follow.round()
        assert (failed.outcome, str(failed.error)) == (
            "failed",
            f"index.json: HTTP 503 from {server.url}/index.json",
        )

        # New data published: read and ingested as the next release.
        docs = synthetic.documents()
        docs["index.json"]["last_updated"] = "2031-01-01"
        synthetic.write(tmp_path / "files", docs)
        done = await follow.round()
        assert (done.outcome, [r.release_id for r in done.reports]) == ("ingested", [2])
    releases = (await make_execute(engine, settings)(RELEASES))["releases"]
    assert [r["lastUpdated"] for r in releases] == [
        "2031-01-01",
        synthetic.documents()["index.json"]["last_updated"],
    ]


def _changed_model_file(tmp: Path) -> tuple[str, bytes]:
    """One model file of the synthetic snapshot rewritten with another output length
    distribution (index.json and the task file as they were): its path and new bytes."""
    docs = synthetic.documents()
    path = next(p for p in docs if p.startswith("models/"))
    docs[path]["output_length_distribution"]["counts"][0] += 1
    synthetic.write(tmp / "files", {path: docs[path]})
    return path, (tmp / "files" / path).read_bytes()


async def test_a_changed_data_file_is_noticed_while_index_json_stays_the_same(
    engine: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    """A data file the snapshot lists changes upstream, index.json does not: the next round asks
    each file conditionally, finds it and ingests the new release; a failed fetch of it first
    fails the round and changes nothing served."""
    root = synthetic.write(tmp_path / "files", synthetic.documents())
    with SnapshotServer(root) as server:
        follow = FilesFollower(Target(engine), server.url)
        assert (await follow.round()).outcome == "ingested"
        path, changed = _changed_model_file(tmp_path)

        server.fail(path, Fault.http(503))
        failed = await follow.round()
        assert (failed.outcome, str(failed.error)) == (
            "failed",
            f"{path}: HTTP 503 from {server.url}/{path}",
        )
        served = (await make_execute(engine, settings)(RELEASES))["releases"]
        assert [len(r["files"]) for r in served] == [4]

        index_asked = server.not_modified["index.json"]
        done = await follow.round()
        assert (done.outcome, [r.release_id for r in done.reports]) == ("ingested", [2])
        assert server.not_modified["index.json"] == index_asked + 1  # index.json: unchanged

        again = await follow.round()
        assert (again.outcome, again.reports) == ("unchanged", [])
    async with sessionmaker(engine)() as session:
        assert (await release_files(session, release_id=2))[path] == changed
        assert (await release_files(session, release_id=1))[path] != changed


async def test_files_are_asked_about_a_bounded_number_at_a_time(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """Each request is held until more than the bound are held at once (or half a second):
    the server never holds more than the follower's bound."""
    docs = synthetic.documents()
    root = synthetic.write(tmp_path / "files", docs)
    with SnapshotServer(root) as server:
        follow = FilesFollower(Target(engine), server.url, polling=2)
        assert (await follow.round()).outcome == "ingested"
        for path in docs:
            if path != "index.json":
                server.fail(path, Fault.hold(2, 0.5))
        again = await follow.round()
        assert (again.outcome, server.most_held) == ("unchanged", 2)


def test_one_source_is_given(tmp_path: Path) -> None:
    runner = CliRunner()
    for args in ([], ["repo", "--files", "http://127.0.0.1:1/data"]):
        result = runner.invoke(main, ["follow", *args, "--database-url", str(tmp_path / "x.db")])
        assert result.exit_code == 2
        assert "give SOURCE (a git repository) or --files URL, one of them" in result.output


# --- `leadgreen follow` as processes -------------------------------------------------------


def follow_command(source: Path | str, database_url: str, cache: Path, *extra: str) -> list[str]:
    return [
        LEADGREEN,
        "follow",
        str(source),
        "--database-url",
        database_url,
        "--cache-dir",
        str(cache),
        *extra,
    ]


async def releases_in(database_url: str) -> list[dict[str, Any]]:
    engine = create_engine(database_url)
    try:
        settings = Settings(database_url=database_url, manifest=None)
        return list((await make_execute(engine, settings)(RELEASES))["releases"])
    finally:
        await engine.dispose()


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.mark.slow
async def test_two_followers_at_once_ingest_each_commit_once(
    database_url: str, tmp_path: Path
) -> None:
    days = ["2030-01-01", "2030-02-01", "2030-03-01", "2030-04-01"]
    work = repository(tmp_path, days)
    shas = git(work, "rev-list", "--reverse", "HEAD").split()
    followers = [
        await asyncio.create_subprocess_exec(
            *follow_command(work, database_url, tmp_path / f"cache-{n}", "--once"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, "LEADGREEN_LOG_LEVEL": "info"},
        )
        for n in range(2)
    ]
    outputs = [
        out.decode()
        for out, _ in await asyncio.wait_for(
            asyncio.gather(*(p.communicate() for p in followers)), 120
        )
    ]
    assert [p.returncode for p in followers] == [0, 0], outputs
    assert await releases_in(database_url) == expected(list(zip(days, shas, strict=True)), tmp_path)
    # Between them, each commit was written once: the one's releases, the other's nothing new.
    written = [
        release["commit"]
        for output in outputs
        for line in json_lines(output)
        for release in line.get("releases", [])
        if not release["unchanged"]
    ]
    assert sorted(written) == sorted(shas)


@pytest.mark.slow
def test_a_failed_round_exits_1_is_logged_and_counted(tmp_path: Path) -> None:
    metrics = tmp_path / "follow.prom"
    source = tmp_path / "missing"
    done = subprocess.run(
        follow_command(
            source,
            str(tmp_path / "db.sqlite"),
            tmp_path / "cache",
            "--once",
            "--metrics-file",
            str(metrics),
        ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    [line] = [line for line in json_lines(done.stdout) if line.get("logger") == "leadgreen.follow"]
    assert {k: line[k] for k in ("level", "event", "outcome", "source", "releases", "error")} == {
        "level": "warning",
        "event": "follow: the round failed; the data served is as it was",
        "outcome": "failed",
        "source": str(source),
        "releases": [],
        "error": f"{source}: git clone failed: fatal: repository '{source}' does not exist",
    }
    assert samples(metrics.read_text()) == {
        'leadgreen_follow_runs_total{outcome="failed"}': 1.0,
        'leadgreen_follow_runs_total{outcome="ingested"}': 0.0,
        'leadgreen_follow_runs_total{outcome="unchanged"}': 0.0,
        "leadgreen_follow_last_success_timestamp_seconds": 0.0,
        "leadgreen_follow_releases_total": 0.0,
    }


def samples(exposition: str) -> dict[str, float]:
    """The follower's samples (not the _created ones)."""
    found = {}
    for line in exposition.splitlines():
        if line.startswith("leadgreen_follow") and "_created" not in line:
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


# --- beside a running server ---------------------------------------------------------------


HEARD = "subscription Heard { releasePublished { release { number upstreamCommit } } }"


def heard_event(release: dict[str, Any]) -> dict[str, Any]:
    """The event a subscriber of HEARD gets for a release, with its cost (charged once, when
    the subscription began)."""
    data = {"releasePublished": {"release": release}}
    actual = actual_cost(Prepared(HEARD, parse(HEARD)), None, data)
    return {"data": data, "extensions": cost(requested_cost(HEARD, None), actual)}


@pytest.mark.follow
async def test_commits_reach_a_running_server_once_each(database_url: str, tmp_path: Path) -> None:
    """`leadgreen serve` and `leadgreen follow --interval 0.2` on one database; the repository
    gains commits (and loses its source for a while) as they run."""
    # Data newer than the seed's (2030-01-02): each commit is the release served by default.
    days = ["2030-02-01"]
    work = repository(tmp_path, days)
    shas = [head(work)]
    synthetic.write(tmp_path / "seed", synthetic.documents())
    server_port, metrics_port = free_port(), free_port()
    env = {
        **os.environ,
        "LEADGREEN_DATABASE_URL": database_url,
        "LEADGREEN_SOURCE": str(tmp_path / "seed"),
        "LEADGREEN_HOST": "127.0.0.1",
        "LEADGREEN_PORT": str(server_port),
        "LEADGREEN_RELEASE_POLL_SECONDS": "0.1",
        "LEADGREEN_LOG_LEVEL": "info",
    }
    server_log, follow_log = tmp_path / "serve.log", tmp_path / "follow.log"
    with server_log.open("wb") as out:
        server = subprocess.Popen([LEADGREEN, "serve"], env=env, stdout=out, stderr=out)
    follow: subprocess.Popen[bytes] | None = None
    heard: subprocess.Popen[str] | None = None
    try:
        answering(f"http://127.0.0.1:{server_port}/readyz", server, server_log)
        # A subscriber (the npm graphql-ws client) hears each commit the follower ingests.
        heard = subscriber(
            "ws",
            server_port,
            tmp_path / "subscriber.log",
            HEARD,
            count=3,
        )
        with follow_log.open("wb") as out:
            follow = subprocess.Popen(
                follow_command(
                    work,
                    database_url,
                    tmp_path / "cache",
                    "--interval",
                    "0.2",
                    "--metrics-port",
                    str(metrics_port),
                ),
                env=env,
                stdout=out,
                stderr=out,
            )
        url = f"http://127.0.0.1:{server_port}/graphql"
        metrics = f"http://127.0.0.1:{metrics_port}/metrics"
        seed = {"number": 1, "upstreamCommit": None}

        def served() -> list[dict[str, Any]]:
            answer = httpx.post(url, json={"query": "{ releases { number upstreamCommit } }"})
            return list(answer.json()["data"]["releases"])

        def latest_is(sha: str) -> list[dict[str, Any]] | None:
            releases = served()
            return releases if releases[0]["upstreamCommit"] == sha else None

        def serves(number: int) -> bool:
            """The server's own gauge: the release its answers come from."""
            exposition = httpx.get(f"http://127.0.0.1:{server_port}/metrics").text
            return f"leadgreen_release {float(number)}" in exposition.splitlines()

        def counted() -> dict[str, float]:
            return samples(httpx.get(metrics).text)

        def each_once() -> list[dict[str, Any]]:
            made = [{"number": i + 2, "upstreamCommit": s} for i, s in enumerate(shas)]
            return [seed, *made][::-1]  # newest first

        # The commit there when the follower starts, then one made while it runs.
        for day in [None, "2030-03-01"]:
            if day is not None:
                shas.append(add_commit(work, *commit_of(day)[:2], data_of(tmp_path, day)))
            assert wait_until(lambda: latest_is(shas[-1]), 60, "the commit") == each_once()
            wait_until(lambda: serves(len(shas) + 1), 30, "the commit served by default")
        wait_until(lambda: counted()["leadgreen_follow_releases_total"] == 2, 30, "2 counted")

        # The source goes away: rounds fail, are logged and counted; the release stays served.
        work.rename(tmp_path / "away")
        failures = counted()['leadgreen_follow_runs_total{outcome="failed"}']
        wait_until(
            lambda: counted()['leadgreen_follow_runs_total{outcome="failed"}'] >= failures + 2,
            30,
            "two failed rounds",
        )
        assert served() == each_once()
        assert serves(len(shas) + 1)
        failed = [
            line for line in json_lines(follow_log.read_text()) if line.get("outcome") == "failed"
        ]
        assert failed and failed[0]["error"] == (
            f"{work}: git fetch failed: fatal: '{work}' does not appear to be a git repository"
        )

        # Back, with one more commit: it comes, once.
        (tmp_path / "away").rename(work)
        shas.append(add_commit(work, *commit_of("2030-05-01")[:2], data_of(tmp_path, "2030-05-01")))
        wait_until(lambda: latest_is(shas[-1]), 60, "the commit after the outage")
        wait_until(lambda: serves(len(shas) + 1), 30, "it served by default")
        assert served() == each_once()
        assert counted()["leadgreen_follow_releases_total"] == 3
        # What the subscriber heard: each commit once, in order, nothing in the outage.
        assert heard.stdout is not None
        events = [json.loads(heard.stdout.readline())["event"] for _ in shas]
        assert events == [heard_event(release) for release in each_once()[-2::-1]], (
            tmp_path / "subscriber.log"
        ).read_text()
        assert heard.wait(10) == 0
        # SIGTERM ends it between two rounds, cleanly (not killed: stop() kills after 10 s).
        stop(follow)
        assert follow.returncode == 0, follow_log.read_text()[-2000:]
    finally:
        if heard is not None:
            if heard.poll() is None:
                os.killpg(heard.pid, signal.SIGKILL)
                heard.wait()
            assert heard.stdout is not None
            heard.stdout.close()
        if follow is not None:
            stop(follow)
        stop(server)
