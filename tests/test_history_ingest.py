"""The upstream history as releases (`leadgreen ingest --history`), on SQLite and PostgreSQL.

A repository is built here with one commit per upstream format since the launch (tests/formats.py
on the synthetic snapshot), a formatting-only commit, a commit that changes figures, and a commit
outside the data; and, on the real data, the two shared snapshots as two commits. Each release
must keep its commit's files byte for byte, say only what is true of it, keep every
configuration's id, and the timeline must match a direct comparison of the files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy.ext.asyncio import AsyncEngine

from db.database import sessionmaker
from db.files import release_files
from db.history import ingest_history
from db.snapshot import load_manifest
from graph.cli import main
from graph.settings import Settings
from tests import formats, synthetic
from tests.conftest import EARLIER, SEED, SNAPSHOT, make_execute
from tests.history_repo import build_repository, snapshot_files

pytestmark = pytest.mark.anyio
TASK = synthetic.TASK
# What the manifest says of its data (tests/synthetic.py): compiled 2030-01-02, 7 rows.
MANIFEST_DATE = "2030-01-02"


def files_of(tmp: Path, name: str, docs: dict[str, Any], **dump: Any) -> dict[str, bytes]:
    return snapshot_files(formats.write_formatted(tmp / name, docs, **dump))


def dated(docs: dict[str, Any], day: str) -> dict[str, Any]:
    docs["index.json"]["last_updated"] = day
    return docs


def corrected(docs: dict[str, Any]) -> dict[str, Any]:
    """Throughput corrected on every row (as upstream did on 2026-01-01), in both files."""
    for _path, doc in docs.items():
        for row in doc.get("configurations", []) if isinstance(doc, dict) else []:
            if "output_throughput_tokens_per_sec" in row:
                row["output_throughput_tokens_per_sec"] *= 1.25
    return docs


def commits(tmp: Path) -> list[tuple[str, str, dict[str, bytes]]]:
    """(date, subject, files) oldest first: every format, then a change of figures."""
    base = synthetic.documents
    december = dated(formats.december_format(base()), "2029-12-17")
    return [
        (
            "2029-11-29T10:00:00+00:00",
            "Launch",
            files_of(tmp, "a", dated(formats.launch_format(base()), "2029-11-29")),
        ),
        (
            "2029-12-15T10:00:00+00:00",
            "Degrees of 1",
            files_of(tmp, "b", dated(formats.mid_december_format(base()), "2029-12-15")),
        ),
        ("2029-12-17T10:00:00+00:00", "Output lengths", files_of(tmp, "c", december)),
        # The same data, written with sorted keys and an indent of 4: formatting only.
        (
            "2029-12-18T10:00:00+00:00",
            "Reformat",
            files_of(tmp, "d", december, indent=4, sort_keys=True),
        ),
        (
            "2030-01-01T10:00:00+00:00",
            "Throughput",
            files_of(tmp, "e", dated(corrected(formats.december_format(base())), "2030-01-01")),
        ),
        (
            "2030-01-02T10:00:00+00:00",
            "Toolkit",
            files_of(tmp, "f", dated(corrected(formats.current_format(base())), MANIFEST_DATE)),
        ),
        ("2030-01-03T10:00:00+00:00", "README", {"/README.md": b"not data\n"}),
        (
            "2030-03-01T10:00:00+00:00",
            "New fields",
            files_of(tmp, "g", dated(corrected(formats.future_format(base())), "2030-03-01")),
        ),
    ]


def manifest_file(tmp: Path) -> Path:
    path = tmp / "manifest.json"
    path.write_text(json.dumps(synthetic.manifest()))
    return path


async def ingest_all(engine: AsyncEngine, repo: Path, manifest: Path | None) -> list[Any]:
    doc, raw = load_manifest(manifest) if manifest else (None, None)
    return [
        report
        async for report in ingest_history(sessionmaker(engine), repo, doc, raw, str(manifest))
    ]


QUERY = """{ timeline {
  release { id number upstreamCommit commitSubject lastUpdated describedByManifest sameDataAs
            files { path bytes sha256 } }
  previous { number }
  changes { filesChanged sentences
            tasks { task changed added removed fieldsAdded fieldChanges { field rows } } } } }"""


@pytest.mark.parametrize("bare", [False, True], ids=["clone", "bare"])
async def test_every_commit_is_a_release_with_its_own_provenance(
    engine: AsyncEngine, settings: Settings, tmp_path: Path, bare: bool
) -> None:
    made = commits(tmp_path)
    repo = build_repository(tmp_path / "repo", made, bare=bare)
    reports = await ingest_all(engine, repo, manifest_file(tmp_path))
    data_commits = [c for c in made if c[1] != "README"]
    assert [r.unchanged for r in reports] == [False] * len(data_commits)
    execute = make_execute(engine, settings)
    timeline = (await execute(QUERY))["timeline"]
    assert [e["release"]["commitSubject"] for e in timeline] == [c[1] for c in data_commits]
    numbers = [e["release"]["number"] for e in timeline]
    assert [e["previous"] and e["previous"]["number"] for e in timeline] == [None, *numbers[:-1]]
    # Each release keeps its commit's files byte for byte, and lists them with their digests.
    async with sessionmaker(engine)() as session:
        for entry, (_, _, files) in zip(timeline, data_commits, strict=True):
            kept = await release_files(session, release_id=entry["release"]["number"])
            assert kept == files
            assert [(f["path"], f["bytes"]) for f in entry["release"]["files"]] == [
                (path, len(files[path])) for path in sorted(files)
            ]
    # Formatting only: the reformatted commit is the same data as the one before it.
    by_subject = {e["release"]["commitSubject"]: e for e in timeline}
    assert (
        by_subject["Reformat"]["release"]["sameDataAs"]
        == (by_subject["Output lengths"]["release"]["number"])
    )
    assert by_subject["Reformat"]["changes"]["tasks"][0]["changed"] == 0
    reformatted = by_subject["Reformat"]["changes"]["filesChanged"]
    files = "1 file" if reformatted == 1 else f"{reformatted} files"
    assert by_subject["Reformat"]["changes"]["sentences"] == [
        f"{files} written differently; the data is the same"
    ]
    # The manifest describes one commit's data only: the one compiled on its date.
    described = [
        e["release"]["commitSubject"] for e in timeline if e["release"]["describedByManifest"]
    ]
    assert described == ["Toolkit"]
    # Throughput corrected on every row of the task.
    throughput = by_subject["Throughput"]["changes"]["tasks"][0]
    assert throughput["fieldChanges"] == [
        {"field": "output_throughput_tokens_per_sec", "rows": len(synthetic.ROWS)}
    ]
    assert (
        f"output_throughput_tokens_per_sec changed on {len(synthetic.ROWS)} of "
        f"{len(synthetic.ROWS)} {TASK} rows" in by_subject["Throughput"]["changes"]["sentences"]
    )
    # Ingesting the history again changes nothing.
    again = await ingest_all(engine, repo, manifest_file(tmp_path))
    assert [r.unchanged for r in again] == [True] * len(data_commits)


async def test_no_release_but_the_described_one_claims_the_manifest(
    engine: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    repo = build_repository(tmp_path / "repo", commits(tmp_path))
    await ingest_all(engine, repo, manifest_file(tmp_path))
    execute = make_execute(engine, settings)
    manifest = synthetic.manifest()
    claims = {
        manifest["updated"],
        manifest["data_version"],
        manifest["source"]["released"],
        manifest["source"]["retrieved"],
        manifest["source"]["licence"],
        manifest["source"]["version"],
    }
    releases = (await execute("{ releases { number describedByManifest } }"))["releases"]
    for release in releases:
        query = """query ($r: Int) { index(release: $r) { version updated dataVersion
            source { name version released compiled compiledEvidence retrieved licence
                     licenceEvidence configurations release { lastUpdated } } } }"""
        index = (await execute(query, r=release["number"]))["index"]
        source = {k: v for k, v in index["source"].items() if k != "release"}
        said = {index["version"], index["updated"], index["dataVersion"]}
        said |= {v for v in source.values() if not isinstance(v, list)}
        said |= set(source["licenceEvidence"] or [])
        if release["describedByManifest"]:
            assert index["source"]["compiled"] == manifest["source"]["compiled"]
            assert index["source"]["licence"] == manifest["source"]["licence"]
        else:
            assert said.isdisjoint(claims - {index["source"]["release"]["lastUpdated"]})
            assert index["source"]["compiled"] == index["source"]["release"]["lastUpdated"]


async def test_configurations_keep_their_ids_through_every_format(
    engine: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    repo = build_repository(tmp_path / "repo", commits(tmp_path))
    await ingest_all(engine, repo, manifest_file(tmp_path))
    execute = make_execute(engine, settings)
    query = """query ($r: Int) { configurations(release: $r, filter: {task: "lm-arena-chat"}) {
        nodes { id maxNumSeqs tensorParallel dataParallel expertParallel avgOutputLen
                derivedFields energyPerRequestJoules energyPerTokenJoules } } }"""
    releases = (await execute("{ timeline { release { number commitSubject } } }"))["timeline"]
    ids = set(synthetic.IDS)
    for entry in releases:
        nodes = (await execute(query, r=entry["release"]["number"]))["configurations"]["nodes"]
        assert {n["id"] for n in nodes} == ids, entry["release"]["commitSubject"]
        launch = entry["release"]["commitSubject"] in ("Launch", "Degrees of 1")
        for node in nodes:
            # Before 2029-12-17 the files lack avg_output_len: derived exactly, and said so.
            assert node["derivedFields"] == (["avgOutputLen"] if launch else [])
            ratio = node["energyPerRequestJoules"] / node["energyPerTokenJoules"]
            assert node["avgOutputLen"] == pytest.approx(ratio, rel=1e-12)
    # 0 stays 0: the launch files write 0 for degrees that do not apply.
    launch = (await execute(query, r=releases[0]["release"]["number"]))["configurations"]
    assert {n["dataParallel"] for n in launch["nodes"]} == {0}
    # A configuration's history: its values in every release, with what changed.
    history = await execute(
        """query ($id: ID!) { node(id: $id) { ... on Configuration { history {
            release { commitSubject } changed { field old new } } } } }""",
        id=synthetic.configuration_id(1),
    )
    versions = history["node"]["history"]
    assert [v["release"]["commitSubject"] for v in versions] == [
        e["release"]["commitSubject"] for e in releases
    ]
    throughput = next(v for v in versions if v["release"]["commitSubject"] == "Throughput")
    assert [c["field"] for c in throughput["changed"]] == ["output_throughput_tokens_per_sec"]


def test_cli_shows_progress_and_ingests_the_history(tmp_path: Path) -> None:
    repo = build_repository(tmp_path / "repo", commits(tmp_path))
    db = tmp_path / "history.db"
    result = CliRunner().invoke(
        main,
        [
            "ingest",
            "--history",
            str(repo),
            "--manifest",
            str(manifest_file(tmp_path)),
            "--database-url",
            str(db),
        ],
    )
    assert result.exit_code == 0, result.output
    progress = [line for line in result.output.splitlines() if line.startswith("[")]
    assert [line.split()[0] for line in progress] == [f"[{n}/7]" for n in range(1, 8)]
    assert progress[0].endswith("Launch") and progress[-1].endswith("New fields")
    again = CliRunner().invoke(main, ["ingest", "--history", str(repo), "--database-url", str(db)])
    assert again.exit_code == 0
    assert again.output.count("unchanged: this data is already stored") == 7


def test_history_of_something_that_is_not_a_repository(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["ingest", "--history", str(tmp_path), "--database-url", str(tmp_path / "x.db")]
    )
    assert result.exit_code == 1
    assert "not a git repository" in result.stderr


@pytest.mark.realdata
async def test_the_shared_snapshots_as_two_commits(
    engine: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    """2025-12-17 then 2026-02-16 with the seed manifest: the manifest describes the second only;
    each exports byte for byte; the throughput correction is on every LLM row; every
    configuration keeps its id, the 84 whose tensor_parallel was corrected too."""
    made = [
        ("2025-12-17T12:00:00+00:00", "Data of 2025-12-17", snapshot_files(EARLIER)),
        ("2026-02-16T12:00:00+00:00", "Data of 2026-02-16", snapshot_files(SNAPSHOT)),
    ]
    repo = build_repository(tmp_path / "repo", made, bare=True)
    await ingest_all(engine, repo, SEED)
    execute = make_execute(engine, settings)
    timeline = (await execute(QUERY))["timeline"]
    assert [e["release"]["describedByManifest"] for e in timeline] == [False, True]
    async with sessionmaker(engine)() as session:
        for entry, (_, _, files) in zip(timeline, made, strict=True):
            assert await release_files(session, release_id=entry["release"]["number"]) == files
    chat = next(t for t in timeline[1]["changes"]["tasks"] if t["task"] == "lm-arena-chat")
    counts = {c["field"]: c["rows"] for c in chat["fieldChanges"]}
    assert counts["output_throughput_tokens_per_sec"] == 328
    assert counts["tensor_parallel"] == 84
    assert (chat["added"], chat["removed"]) == (0, 0)
    query = """query ($r: Int) { configurations(release: $r, filter: {task: "lm-arena-chat"},
        first: 500) { nodes { id } } }"""
    ids = [
        {
            n["id"]
            for n in (await execute(query, r=e["release"]["number"]))["configurations"]["nodes"]
        }
        for e in timeline
    ]
    assert len(ids[0]) == len(ids[1]) == 328 and ids[0] == ids[1]
