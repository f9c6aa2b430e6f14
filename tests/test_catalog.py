"""The release catalog: read once per release and process, filtered and paged in memory, a new
ingest served as soon as the release is, and nothing read per request once it is loaded."""

from __future__ import annotations

import asyncio
from operator import attrgetter
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from db import reads
from db.catalog import Bound, Catalog, ConfigurationFilter, NoSuchRelease, load_catalog
from db.database import sessionmaker
from db.kinds import DIFFUSION, LLM
from db.tables import ConfigurationRow
from graph.schema.context import Context
from graph.schema.memory import Catalogs
from graph.server.documents import MODEL_PAGE
from graph.settings import Settings
from tests import synthetic
from tests.conftest import SCHEMA as schema
from tests.conftest import ingest_dir, make_execute

pytestmark = pytest.mark.anyio


async def catalog_of(engine: AsyncEngine) -> Catalog:
    async with sessionmaker(engine)() as session:
        release = await reads.latest_release(session)
        assert release is not None
        return await load_catalog(session, release.id)


def ids(rows: list[ConfigurationRow]) -> list[int]:
    return [row.id for row in rows]


async def test_a_catalog_holds_the_release_s_rows(synthetic_db) -> None:
    catalog = await catalog_of(synthetic_db)
    assert catalog.source is not None and catalog.source.name == "Synthetic"
    assert [t.name for t in catalog.tasks] == ["lm-arena-chat"]
    assert [m.slug for m in catalog.models] == ["mixture-8x2b", "tiny-1b"]
    assert [m.slug for m in catalog.in_manifest] == ["tiny-1b"]
    assert [g.name for g in catalog.gpus] == ["B200", "H100"]
    # Upstream order: the task file's rows as they stand.
    assert [r.task_row for r in catalog.rows[LLM]] == list(range(len(synthetic.ROWS)))
    assert catalog.rows[DIFFUSION] == []
    tiny = catalog.model_by_slug["tiny-1b"]
    assert [r.max_num_seqs for r in catalog.of_model(LLM, tiny.id)] == [8, 64, 8]
    assert catalog.of_model(DIFFUSION, tiny.id) == ()
    assert [t.file for t in catalog.tasks_of_model[tiny.id]] == [
        "models/acme__Tiny-1B__lm-arena-chat.json"
    ]


async def test_an_unknown_release_has_no_catalog(synthetic_db) -> None:
    async with sessionmaker(synthetic_db)() as session:
        with pytest.raises(NoSuchRelease):
            await load_catalog(session, 99)


async def test_a_model_by_slug_and_by_id(synthetic_db) -> None:
    catalog = await catalog_of(synthetic_db)
    tiny = catalog.model_by_slug["tiny-1b"]
    assert catalog.model(slug="tiny-1b") is tiny
    assert catalog.model(model_id="acme/Tiny-1B") is tiny
    assert catalog.model(slug="tiny-1b", model_id="acme/Tiny-1B") is tiny
    assert catalog.model(slug="tiny-1b", model_id="acme/Mixture-8x2B") is None
    assert catalog.model(slug="nope") is None
    assert catalog.model(model_id="a\x00b") is None


@pytest.mark.parametrize(
    ("where", "rows"),
    [
        (ConfigurationFilter(), [0, 1, 2, 3, 4, 5, 6]),
        (ConfigurationFilter(gpu="H100"), [0, 1, 3, 4, 5, 6]),
        (ConfigurationFilter(num_gpus=2, bounds=(Bound("max_num_seqs", least=16),)), [3, 4, 5]),
        (ConfigurationFilter(bounds=(Bound("max_num_seqs", most=8),)), [0, 2, 6]),
        (ConfigurationFilter(bounds=(Bound("median_itl_ms", most=10),)), [0, 2]),
        (
            ConfigurationFilter(
                bounds=(Bound("max_num_seqs", least=16, most=32), Bound("median_itl_ms", most=35))
            ),
            [3, 4],
        ),
        (ConfigurationFilter(task="lm-arena-chat", gpu="B200"), [2]),
        (ConfigurationFilter(task="gpqa"), []),
        (ConfigurationFilter(model_ids=[]), []),
    ],
)
async def test_configurations_filter_in_upstream_order(synthetic_db, where, rows) -> None:
    catalog = await catalog_of(synthetic_db)
    assert [r.task_row for r in catalog.configurations(LLM, where)] == rows


async def test_a_model_s_configurations_filter_like_the_others(synthetic_db) -> None:
    catalog = await catalog_of(synthetic_db)
    mixture = catalog.model_by_slug["mixture-8x2b"].id
    tiny = catalog.model_by_slug["tiny-1b"].id
    one = ConfigurationFilter(
        model_ids=[mixture], task="lm-arena-chat", bounds=(Bound("max_num_seqs", most=16),)
    )
    assert [r.task_row for r in catalog.configurations(LLM, one)] == [3, 6]
    both = ConfigurationFilter(model_ids=(tiny, mixture), gpu="H100")
    assert [r.task_row for r in catalog.configurations(LLM, both)] == [
        0,
        1,
        3,
        4,
        5,
        6,
    ]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("order_by", ["id", "median_itl_ms", "max_num_seqs"])
async def test_pages_walk_every_row_once_in_order(synthetic_db, order_by, descending) -> None:
    catalog = await catalog_of(synthetic_db)
    key = attrgetter(order_by, "id")
    expected = sorted(catalog.rows[LLM], key=key, reverse=descending)
    seen, after = [], None
    while True:
        rows, total = catalog.page(
            LLM, order_by=order_by, descending=descending, after=after, first=3
        )
        assert total == len(catalog.rows[LLM])
        seen += rows[:3]
        if len(rows) <= 3:
            break
        after = key(rows[2])
    assert ids(seen) == ids(expected)


async def test_catalogs_read_each_release_once(synthetic_db) -> None:
    """Concurrent first requests share one read; later ones read nothing."""
    statements: list[str] = []
    event.listen(
        synthetic_db.sync_engine, "before_cursor_execute", lambda *a: statements.append(a[2])
    )
    catalogs = Catalogs()
    async with sessionmaker(synthetic_db)() as session:
        release = await reads.latest_release(session)
        assert release is not None
        statements.clear()
        first = await asyncio.gather(
            *(catalogs.get(session, release, default=True) for _ in range(5))
        )
        # The release, its stored catalog (every configuration: db.catalog), its source, tasks,
        # models, the GPUs and its models' task files.
        assert len(statements) == 7
        assert all(c is first[0] for c in first)
        assert await catalogs.get(session, release, default=True) is first[0]
        assert len(statements) == 7


async def test_catalogs_keep_the_default_release_and_others_within_bytes(
    tmp_path: Path, engine, synthetic_dir
) -> None:
    """The default release's catalog is always kept; another's only within the byte budget."""
    await ingest_dir(engine, synthetic_dir, synthetic_dir.parent / "manifest.json")
    later = synthetic.write(tmp_path / "later", _later_documents())
    await ingest_dir(engine, later)
    async with sessionmaker(engine)() as session:
        older, newer = [await reads.release(session, release_id=i) for i in (1, 2)]
        assert older is not None and newer is not None
        small, roomy = Catalogs(max_bytes=1), Catalogs()
        for catalogs, kept in ((small, False), (roomy, True)):
            latest = await catalogs.get(session, newer, default=True)
            first = await catalogs.get(session, older, default=False)
            again = await catalogs.get(session, older, default=False)
            assert (again is first) is kept and again.release.id == 1
            assert await catalogs.get(session, newer, default=True) is latest


async def test_a_failed_read_is_tried_again(synthetic_db, monkeypatch) -> None:
    catalogs = Catalogs()
    real = load_catalog
    calls = 0

    async def flaky(session, release_id):
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionResetError("the database went away")
        return await real(session, release_id)

    monkeypatch.setattr("graph.schema.memory.load_catalog", flaky)
    async with sessionmaker(synthetic_db)() as session:
        release = await reads.latest_release(session)
        assert release is not None
        with pytest.raises(ConnectionResetError):
            await catalogs.get(session, release, default=True)
        assert (await catalogs.get(session, release, default=True)).release.id == release.id
    assert calls == 2


def _later_documents() -> dict[str, object]:
    """The synthetic snapshot a day later, with Tiny 1B's first row measured again."""
    rows = [dict(r) for r in synthetic.ROWS]
    rows[0]["energy_per_token_joules"] = 0.25
    rows[0]["energy_per_request_joules"] = 25.0
    rows[0]["output_throughput_tokens_per_sec"] = 1600.0
    files = synthetic.documents(rows)
    index = files["index.json"]
    assert isinstance(index, dict)
    index["last_updated"] = "2030-02-01"
    return files


async def test_a_new_ingest_is_served_as_soon_as_its_release_is(
    tmp_path: Path, engine, synthetic_dir, settings
) -> None:
    execute = make_execute(engine, settings)
    query = '{ model(slug: "tiny-1b") { configurations { energyPerTokenJoules } } }'
    await ingest_dir(engine, synthetic_dir, synthetic_dir.parent / "manifest.json")
    before = await execute(query)
    assert before["model"]["configurations"][0] == {"energyPerTokenJoules": 0.5}
    later = synthetic.write(tmp_path / "later", _later_documents())
    await ingest_dir(engine, later, synthetic_dir.parent / "manifest.json")
    after = await execute(query)
    assert after["model"]["configurations"][0] == {"energyPerTokenJoules": 0.25}
    # The earlier release is still there, on request.
    earlier = await execute(query.replace('"tiny-1b"', '"tiny-1b", release: 1'))
    assert earlier == before


async def test_with_the_watcher_s_release_a_page_reads_nothing(
    real_db, real_settings: Settings
) -> None:
    """The HTTP handler hands the context the release its watcher read: once the release's
    catalog is in memory, a model page runs no SQL at all."""
    async with sessionmaker(real_db)() as session:
        release = await reads.latest_release(session)
    statements: list[str] = []
    event.listen(real_db.sync_engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    answers = []
    catalogs = Catalogs()
    for slug in ("qwen-3-8b", "deepseek-v3-1", "qwen-3-8b"):
        async with sessionmaker(real_db)() as session:
            value = Context(
                session=session, settings=real_settings, _release=release, catalogs=catalogs
            )
            result = await schema.execute(
                MODEL_PAGE, variable_values={"slug": slug}, context_value=value
            )
        assert result.errors is None
        answers.append(result.data)
        if slug == "qwen-3-8b":
            statements.clear()  # the first one may have read the catalog
    assert statements == []
    assert answers[0] == answers[2]


async def test_unknown_names_are_not_remembered(synthetic_db, settings, monkeypatch) -> None:
    """A catalog remembers what it derives for the release's own tasks only: a client asking
    for made-up task names gets an error and cannot make it grow."""
    catalogs = Catalogs()
    execute = make_execute(synthetic_db, settings, catalogs)
    query = """query ($t: String) {
        a: model(slug: "tiny-1b") { curves(task: $t) { gpuModel } }
        b: model(slug: "tiny-1b") { power(task: $t) { gpuModel } }
        c: model(slug: "tiny-1b") { configurations(task: $t) { id } }
    }"""
    assert await execute(query, t="lm-arena-chat")
    assert catalogs._default is not None
    catalog = catalogs._default[1]
    remembered = len(catalog._derived)
    for n in range(20):
        data = await execute(query, t=f"made-up-{n}")
        message = f"unknown task 'made-up-{n}' in `task`; `tasks` lists them"
        assert data == {"errors": [{"message": message, "code": "BAD_USER_INPUT"}] * 3}
    assert len(catalog._derived) == remembered
