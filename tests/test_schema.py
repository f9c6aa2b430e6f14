"""The schema as a contract: descriptions, the committed SDL, whole answers on synthetic data."""

from __future__ import annotations

import pytest
from graphql import GraphQLInputObjectType, GraphQLObjectType
from sqlalchemy import event

from graph.server.documents import MODEL_PAGE
from tests import synthetic
from tests.conftest import ROOT, make_execute
from tests.conftest import SCHEMA as schema

pytestmark = pytest.mark.anyio


def test_every_type_field_and_argument_is_described() -> None:
    missing = []
    for name, gql_type in schema._schema.type_map.items():
        if name.startswith("__") or not isinstance(
            gql_type, GraphQLObjectType | GraphQLInputObjectType
        ):
            continue
        if not gql_type.description:
            missing.append(name)
        for field_name, field in gql_type.fields.items():
            if not field.description:
                missing.append(f"{name}.{field_name}")
            for arg_name, arg in getattr(field, "args", {}).items():
                if not arg.description:
                    missing.append(f"{name}.{field_name}({arg_name})")
    assert missing == []


def test_committed_schema_matches_the_code() -> None:
    committed = (ROOT / "schema.graphql").read_text()
    assert committed == schema.as_str() + "\n", (
        "schema.graphql is stale: run `leadgreen export-schema -o schema.graphql`"
    )


async def test_model_page_on_synthetic_data(execute_synthetic) -> None:
    data = await execute_synthetic(
        """{ model(slug: "mixture-8x2b") {
              slug name modelId paramsB activeParamsB architecture gpus url page inIndex
              configurations { gpuModel numGpus maxNumSeqs tensorParallel expertParallel
                               energyPerTokenJoules powerPerGpuWatts fractionOfTdp }
              curves { gpuModel numGpus tensorParallel expertParallel
                       points { maxNumSeqs energyPerTokenJoules } }
              power { gpuModel configurations totalWatts { minimum median maximum }
                      perGpuWatts { minimum median maximum }
                      fractionOfTdp { minimum median maximum } }
           } }"""
    )
    config = {"gpuModel": "H100", "numGpus": 2, "tensorParallel": 2, "expertParallel": 1}
    assert data == {
        "model": {
            "slug": "mixture-8x2b",
            "name": "Mixture 8x2B",
            "modelId": "acme/Mixture-8x2B",
            "paramsB": 16.0,
            "activeParamsB": 2.0,
            "architecture": "MoE",
            "gpus": None,
            "url": None,
            "page": None,
            "inIndex": False,
            "configurations": [
                {
                    **config,
                    "maxNumSeqs": 16,
                    "energyPerTokenJoules": 1.0,
                    "powerPerGpuWatts": 500.0,
                    "fractionOfTdp": 500 / 700,
                },
                {
                    **config,
                    "maxNumSeqs": 32,
                    "energyPerTokenJoules": 0.8,
                    "powerPerGpuWatts": 550.0,
                    "fractionOfTdp": 550 / 700,
                },
                {
                    **config,
                    "maxNumSeqs": 32,
                    "energyPerTokenJoules": 0.9,
                    "powerPerGpuWatts": 575.0,
                    "fractionOfTdp": 575 / 700,
                },
                {
                    "gpuModel": "H100",
                    "numGpus": 2,
                    "tensorParallel": 1,
                    "expertParallel": 2,
                    "maxNumSeqs": 8,
                    "energyPerTokenJoules": 1.4,
                    "powerPerGpuWatts": 450.0,
                    "fractionOfTdp": 450 / 700,
                },
            ],
            "curves": [
                {
                    "gpuModel": "H100",
                    "numGpus": 2,
                    "tensorParallel": 1,
                    "expertParallel": 2,
                    "points": [{"maxNumSeqs": 8, "energyPerTokenJoules": 1.4}],
                },
                {
                    **config,
                    "points": [
                        {"maxNumSeqs": 16, "energyPerTokenJoules": 1.0},
                        {"maxNumSeqs": 32, "energyPerTokenJoules": 0.8},
                        {"maxNumSeqs": 32, "energyPerTokenJoules": 0.9},
                    ],
                },
            ],
            "power": [
                {
                    "gpuModel": "H100",
                    "configurations": 4,
                    "totalWatts": {"minimum": 900.0, "median": 1050.0, "maximum": 1150.0},
                    "perGpuWatts": {"minimum": 450.0, "median": 525.0, "maximum": 575.0},
                    "fractionOfTdp": {
                        "minimum": 450 / 700,
                        "median": 525 / 700,
                        "maximum": 575 / 700,
                    },
                },
            ],
        }
    }


async def test_model_configuration_filters(execute_synthetic) -> None:
    query = """query ($gpu: String, $n: Int, $itl: Float) { model(modelId: "acme/Tiny-1B") {
        configurations(gpu: $gpu, numGpus: $n, maxMedianItlMs: $itl) { gpuModel maxNumSeqs } } }"""
    assert await execute_synthetic(query, gpu="H100") == {
        "model": {
            "configurations": [
                {"gpuModel": "H100", "maxNumSeqs": 8},
                {"gpuModel": "H100", "maxNumSeqs": 64},
            ]
        }
    }
    assert await execute_synthetic(query, itl=10.0) == {
        "model": {
            "configurations": [
                {"gpuModel": "H100", "maxNumSeqs": 8},
                {"gpuModel": "B200", "maxNumSeqs": 8},
            ]
        }
    }
    assert await execute_synthetic(query, n=4) == {"model": {"configurations": []}}
    assert await execute_synthetic(query, itl=-1.0) == {
        "errors": [
            {"message": "maxMedianItlMs must be a number >= 0, got -1.0", "code": "BAD_USER_INPUT"}
        ]
    }


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("", [1, 2, 3, 4, 5, 6, 7]),
        ('filter: {gpu: "H100"}', [1, 2, 4, 5, 6, 7]),
        ("filter: {numGpus: 2, maxNumSeqsAtLeast: 16}", [4, 5, 6]),
        ("filter: {maxNumSeqsAtMost: 8}", [1, 3, 7]),
        ('filter: {model: "tiny-1b", maxMedianItlMs: 10}', [1, 3]),
        ('filter: {modelId: "acme/Mixture-8x2B", task: "lm-arena-chat"}', [4, 5, 6, 7]),
        # Conditions no row meets select nothing (an unknown name is an error instead:
        # tests/test_unknown_names.py).
        ('filter: {task: "lm-arena-chat", numGpus: 3}', []),
        ('filter: {model: "tiny-1b", modelId: "acme/Mixture-8x2B"}', []),
        ("orderBy: {field: ENERGY_PER_TOKEN_JOULES}", [2, 3, 1, 5, 6, 4, 7]),
        ("orderBy: {field: MAX_NUM_SEQS, direction: DESC}", [2, 6, 5, 4, 7, 3, 1]),
    ],
)
async def test_configuration_filters_and_order(execute_synthetic, arguments, expected) -> None:
    args = f"({arguments})" if arguments else ""
    data = await execute_synthetic(f"{{ configurations{args} {{ totalCount nodes {{ id }} }} }}")
    nodes = data["configurations"]["nodes"]
    # Ids are per release; the synthetic rows are ingested first, so ids 1..7 follow file order.
    assert [synthetic.IDS.index(n["id"]) + 1 for n in nodes] == expected
    assert data["configurations"]["totalCount"] == len(expected)


async def test_cursor_pagination_walks_every_row_once(execute_synthetic) -> None:
    query = """query ($after: String) { configurations(first: 3, after: $after,
        orderBy: {field: MEDIAN_ITL_MS, direction: DESC}) {
        edges { node { medianItlMs } } pageInfo { hasNextPage endCursor } } }"""
    seen, after = [], None
    while True:
        page = (await execute_synthetic(query, after=after))["configurations"]
        seen += [edge["node"]["medianItlMs"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == [36.0, 35.0, 30.0, 25.0, 20.0, 10.0, 8.0]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("first: 1001", "`first` must be between 0 and 1000, got 1001"),
        ("first: -1", "`first` must be between 0 and 1000, got -1"),
        (
            'after: "bm90IGEgY3Vyc29y"',
            "`after` is not a cursor this API issued: 'bm90IGEgY3Vyc29y'",
        ),
        (
            'after: "WyJpZCIsMSwxXQ", orderBy: {field: P99_ITL_MS}',
            "`after` is a cursor for ordering by 'id', not 'p99_itl_ms'",
        ),
        ("filter: {maxMedianItlMs: -5}", "maxMedianItlMs must be a number >= 0, got -5.0"),
    ],
)
async def test_bad_arguments_get_coded_errors(execute_synthetic, arguments, message) -> None:
    data = await execute_synthetic(f"{{ configurations({arguments}) {{ totalCount }} }}")
    assert data == {"errors": [{"message": message, "code": "BAD_USER_INPUT"}]}


async def test_model_lookup(execute_synthetic) -> None:
    assert await execute_synthetic('{ model(slug: "nope") { slug } }') == {"model": None}
    assert await execute_synthetic("{ model { slug } }") == {
        "errors": [
            {"message": "give exactly one of `slug` and `modelId`", "code": "BAD_USER_INPUT"}
        ]
    }
    assert await execute_synthetic("{ models { slug inIndex } }") == {
        "models": [{"slug": "mixture-8x2b", "inIndex": False}, {"slug": "tiny-1b", "inIndex": True}]
    }


async def test_relations_of_a_configuration(execute_synthetic) -> None:
    data = await execute_synthetic("""{ configurations(first: 1) { nodes {
        modelId model { slug } gpu { name tdpWatts architecture } task { name displayName
        architecture } source { name licence release { lastUpdated } }
        upstream { taskFile taskRow modelFile modelRow }
        outputLengthDistribution { bins counts } } } }""")
    assert data["configurations"]["nodes"] == [
        {
            "modelId": "acme/Tiny-1B",
            "model": {"slug": "tiny-1b"},
            "gpu": {"name": "H100", "tdpWatts": 700.0, "architecture": "Hopper"},
            "task": {"name": "lm-arena-chat", "displayName": "LLM Chat", "architecture": "llm"},
            "source": {
                "name": "Synthetic",
                "licence": "CC0-1.0",
                "release": {"lastUpdated": "2030-01-02"},
            },
            "upstream": {
                "taskFile": "tasks/lm-arena-chat.json",
                "taskRow": 0,
                "modelFile": "models/acme__Tiny-1B__lm-arena-chat.json",
                "modelRow": 0,
            },
            "outputLengthDistribution": {"bins": [0.0, 100.0, 200.0], "counts": [1, 2]},
        }
    ]


async def test_empty_database_says_so(engine, settings) -> None:
    execute = make_execute(engine, settings)
    assert await execute("{ models { slug } }") == {
        "errors": [
            {
                "message": "The database holds no data yet: run `leadgreen ingest` first",
                "code": "NO_DATA",
            }
        ]
    }


async def test_unexpected_errors_are_masked(execute_synthetic, monkeypatch) -> None:
    from graph.schema.answers import listings as catalog

    async def broken(*_args, **_kwargs):
        raise RuntimeError("SELECT secret FROM somewhere")

    monkeypatch.setattr(catalog, "gpus", broken)
    assert await execute_synthetic("{ gpus { name } }") == {
        "errors": [{"message": "Internal server error", "code": "INTERNAL"}]
    }


async def test_model_page_runs_a_bounded_number_of_statements(
    real_db, real_settings, monkeypatch
) -> None:
    """The first model page of a release reads the release's rows once, in the same few
    statements whatever its size; every model page after it reads only the latest release."""
    statements: list[str] = []
    event.listen(
        real_db.sync_engine, "before_cursor_execute", lambda *args: statements.append(args[2])
    )
    execute = make_execute(real_db, real_settings)
    counts = {}
    for slug in ("deepseek-v3-1", "qwen-3-30b-a3b-instruct", "qwen-3-8b", "deepseek-v3-1"):
        statements.clear()
        data = await execute(MODEL_PAGE, slug=slug)
        assert data["model"]["slug"] == slug
        counts.setdefault(slug, []).append(len(statements))
    # The release, its source, tasks, models, GPU types, model files and its configurations
    # (the catalog stored whole at ingest): seven statements, once.
    assert counts == {"deepseek-v3-1": [1 + 7, 1], "qwen-3-30b-a3b-instruct": [1], "qwen-3-8b": [1]}
