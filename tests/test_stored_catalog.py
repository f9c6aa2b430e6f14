"""The stored catalog (db.catalog, the `catalogs` table): written by the ingest's transaction,
read whole by a server; the same rows, value for value, as reading every configuration's row;
a release without one (ingested before), or with one that does not read back, is read row by
row, and answers the same."""

from __future__ import annotations

import logging
from dataclasses import fields
from typing import Any

import hypothesis.strategies as st
import lz4.frame
import orjson
import pytest
from hypothesis import given, settings
from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from db import catalog as stored
from db import reads
from db.catalog import CATALOG_FORMAT, load_catalog, pack, unpack
from db.database import sessionmaker
from db.kinds import DIFFUSION, KINDS, LLM, Kind
from db.rows import DiffusionRow, LlmRow, Row, columns
from db.tables import CatalogRow
from graph.server.documents import MODEL_PAGE
from graph.settings import Settings
from tests.conftest import app_client, examples

pytestmark = pytest.mark.anyio


def values(rows: dict[Kind, list[Row]] | Any) -> dict[str, list[tuple[Any, ...]]]:
    """Every field of every row, by kind: what two catalogs' rows must share."""
    return {
        kind.name: [tuple(getattr(row, f.name) for f in fields(row)) for row in rows[kind]]
        for kind in KINDS
    }


async def read_both(engine: AsyncEngine) -> tuple[Any, Any]:
    """The latest release's rows read row by row, and from its stored catalog."""
    async with sessionmaker(engine)() as session:
        release = await reads.latest_release(session)
        assert release is not None
        by_row = {
            kind: await reads.all_configurations(session, release_id=release.id, kind=kind)
            for kind in KINDS
        }
        whole = await stored.stored_rows(session, release.id)
    return by_row, whole


async def test_ingest_stores_the_catalog_a_server_reads_row_by_row(synthetic_db) -> None:
    by_row, whole = await read_both(synthetic_db)
    assert whole is not None
    assert values(whole) == values(by_row)
    assert len(whole[LLM]) == 7 and whole[DIFFUSION] == []
    async with sessionmaker(synthetic_db)() as session:
        stored_formats = list(await session.scalars(select(CatalogRow.format)))
    assert stored_formats == [CATALOG_FORMAT]


async def test_the_real_release_s_stored_catalog_equals_its_rows(real_db) -> None:
    by_row, whole = await read_both(real_db)
    assert whole is not None
    assert values(whole) == values(by_row)
    assert {kind.name: len(rows) for kind, rows in whole.items()} == {
        "llm": 838,
        "diffusion": 1020,
    }


async def catalog_values(engine: AsyncEngine) -> dict[str, Any]:
    async with sessionmaker(engine)() as session:
        release = await reads.latest_release(session)
        assert release is not None
        catalog = await load_catalog(session, release.id)
    return values(catalog.rows) | {
        "models": [m.slug for m in catalog.models],
        "tasks": [t.name for t in catalog.tasks],
    }


async def test_a_release_without_a_stored_catalog_is_read_row_by_row(synthetic_db) -> None:
    with_it = await catalog_values(synthetic_db)
    async with sessionmaker(synthetic_db)() as session, session.begin():
        await session.execute(delete(CatalogRow))
    assert await catalog_values(synthetic_db) == with_it


@pytest.mark.parametrize(
    "spoiled",
    [
        b"not lz4 at all",
        lz4.frame.compress(b"[1, 2"),  # not JSON
        lz4.frame.compress(b'{"llm": {}}'),  # not every kind
        lz4.frame.compress(  # other columns (a field added since it was stored)
            orjson.dumps({k.name: {"columns": ["id"], "rows": [[1]]} for k in KINDS})
        ),
        lz4.frame.compress(  # a row of another length
            orjson.dumps(
                {k.name: {"columns": columns(k.row_type), "rows": [[1, 2]]} for k in KINDS}
            )
        ),
    ],
    ids=["not-lz4", "not-json", "kinds", "columns", "row-length"],
)
async def test_a_stored_catalog_that_does_not_read_back_falls_back(
    synthetic_db, spoiled: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with_it = await catalog_values(synthetic_db)
    async with sessionmaker(synthetic_db)() as session, session.begin():
        await session.execute(update(CatalogRow).values(data=spoiled))
    with caplog.at_level(logging.WARNING, logger="leadgreen"):
        assert await catalog_values(synthetic_db) == with_it
    warned = [r.getMessage() for r in caplog.records if "stored catalog" in r.getMessage()]
    assert len(warned) == 1 and warned[0].startswith("release 1: its stored catalog is not read")


async def test_a_stored_catalog_of_another_format_is_not_read(synthetic_db) -> None:
    with_it = await catalog_values(synthetic_db)
    async with sessionmaker(synthetic_db)() as session, session.begin():
        await session.execute(update(CatalogRow).values(format=CATALOG_FORMAT + 1, data=b"x"))
    async with sessionmaker(synthetic_db)() as session:
        assert await stored.stored_rows(session, 1) is None
    assert await catalog_values(synthetic_db) == with_it


async def test_a_server_answers_the_same_with_and_without_it(synthetic_db, database_url) -> None:
    settings = Settings(database_url=database_url, manifest=None, cache="off")
    request = {"query": MODEL_PAGE, "variables": {"slug": "tiny-1b"}}
    answers = []
    for _ in range(2):
        async with app_client(settings) as (_app, client):
            answer = await client.post("/graphql", json=request)
            assert answer.status_code == 200 and "errors" not in answer.json()
            answers.append(answer.content)
        async with sessionmaker(synthetic_db)() as session, session.begin():
            await session.execute(delete(CatalogRow))
    assert answers[0] == answers[1]
    assert len(answers[0]) > 1000


# --- pack and unpack over rows Hypothesis writes -------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False)
texts = st.text(max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | finite | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


def row_strategy(row_type: type[Row]) -> st.SearchStrategy[Row]:
    """Rows of the type with values of each field's type (None where the field may be)."""
    by_type: dict[str, st.SearchStrategy[Any]] = {
        "int": st.integers(-(2**62), 2**62),
        "float": finite,
        "str": texts,
        "bool": st.booleans(),
    }

    def field_values(name: str, annotation: str) -> st.SearchStrategy[Any]:
        if name == "extra":
            return st.none() | st.dictionaries(texts, json_values, max_size=3)
        optional = "None" in annotation
        base = next((s for t, s in by_type.items() if annotation.startswith(t)), texts)
        return (st.none() | base) if optional else base

    return st.builds(
        lambda *made: row_type(*made),
        *[field_values(f.name, str(f.type)) for f in fields(row_type)],
    )


@settings(max_examples=examples(100), deadline=None)
@given(
    llm=st.lists(row_strategy(LlmRow), max_size=4),
    diffusion=st.lists(row_strategy(DiffusionRow), max_size=4),
)
def test_unpack_gives_back_every_value_pack_took(llm: list[Row], diffusion: list[Row]) -> None:
    rows: dict[Kind, list[Row]] = {LLM: llm, DIFFUSION: diffusion}
    assert values(unpack(pack(rows))) == values(rows)
