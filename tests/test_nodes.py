"""Relay's Node: every object fetched again by its global id, ids the same in every release."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from graph.settings import Settings
from tests import synthetic
from tests.conftest import Execute, ingest_dir, make_execute

pytestmark = pytest.mark.anyio

OBJECTS = """{
  configurations(first: 1) { nodes { id } }
  models { id slug } gpus { id name } tasks { id name } releases { id number }
}"""
NODE = """query ($id: ID!) { node(id: $id) { __typename id
  ... on Configuration { maxNumSeqs } ... on Model { slug } ... on Gpu { name }
  ... on Task { name } ... on Release { number } } }"""


async def test_every_kind_of_object_comes_back_by_its_id(execute_synthetic: Execute) -> None:
    objects = await execute_synthetic(OBJECTS)
    assert objects["configurations"]["nodes"] == [{"id": synthetic.configuration_id(1)}]
    assert objects["models"] == [
        {"id": "Model:acme/Mixture-8x2B", "slug": "mixture-8x2b"},
        {"id": "Model:acme/Tiny-1B", "slug": "tiny-1b"},
    ]
    assert objects["gpus"] == [
        {"id": "Gpu:B200", "name": "B200"},
        {"id": "Gpu:H100", "name": "H100"},
    ]
    assert objects["tasks"] == [{"id": "Task:lm-arena-chat", "name": "lm-arena-chat"}]
    (release,) = objects["releases"]
    assert release["id"].startswith("Release:") and len(release["id"]) == len("Release:") + 20
    expected = [
        (synthetic.configuration_id(1), {"__typename": "Configuration", "maxNumSeqs": 8}),
        ("Model:acme/Tiny-1B", {"__typename": "Model", "slug": "tiny-1b"}),
        ("Gpu:H100", {"__typename": "Gpu", "name": "H100"}),
        ("Task:lm-arena-chat", {"__typename": "Task", "name": "lm-arena-chat"}),
        (release["id"], {"__typename": "Release", "number": 1}),
    ]
    for id, fields in expected:
        assert await execute_synthetic(NODE, id=id) == {"node": {"id": id, **fields}}


@pytest.mark.parametrize(
    "id",
    [
        "",
        "Configuration:",
        "Configuration:lm-arena-chat:acme/Tiny-1B:H100x1:max_num_seqs=9999:0",
        "Model:acme/Nothing",
        "Gpu:A100",
        "Task:gpqa",
        "Release:ffffffffffffffffffff",
        "Release:not-hex",
        "Release:",
        "User:1",
        "1",
        "x" * 10_000,
    ],
)
async def test_an_id_that_names_nothing_is_null(execute_synthetic: Execute, id: str) -> None:
    assert await execute_synthetic(NODE, id=id) == {"node": None}


async def test_nodes_in_order_with_nulls(execute_synthetic: Execute) -> None:
    query = "query ($ids: [ID!]!) { nodes(ids: $ids) { id } }"
    ids = ["Gpu:H100", "Gpu:A100", "Model:acme/Tiny-1B"]
    assert await execute_synthetic(query, ids=ids) == {
        "nodes": [{"id": "Gpu:H100"}, None, {"id": "Model:acme/Tiny-1B"}]
    }
    too_many = await execute_synthetic(query, ids=["Gpu:H100"] * 101)
    assert too_many == {
        "errors": [
            {
                "message": "`ids` holds 101 ids; ask for at most 100 at once",
                "code": "BAD_USER_INPUT",
            }
        ]
    }


async def test_a_configuration_gone_from_the_latest_release_comes_from_the_newest_with_it(
    engine: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    files = synthetic.documents()
    root = synthetic.write(tmp_path / "first", files)
    await ingest_dir(engine, root)
    later = synthetic.documents(synthetic.ROWS[:-1])  # the last row is gone
    later["index.json"]["last_updated"] = "2030-02-01"
    await ingest_dir(engine, synthetic.write(tmp_path / "later", later))
    execute = make_execute(engine, settings)
    gone = synthetic.configuration_id(len(synthetic.ROWS))
    query = """query ($id: ID!) { node(id: $id) { ... on Configuration {
        id source { release { number lastUpdated } } } } }"""
    assert await execute(query, id=gone) == {
        "node": {"id": gone, "source": {"release": {"number": 1, "lastUpdated": "2030-01-02"}}}
    }
    kept = synthetic.configuration_id(1)
    assert (await execute(query, id=kept))["node"]["source"]["release"]["number"] == 2
