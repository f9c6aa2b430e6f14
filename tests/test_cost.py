"""Query cost: estimates computed by hand, actual costs, refusal before SQL, the cost bucket."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from graphql import get_named_type, get_nullable_type, is_composite_type, is_list_type, parse
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import event
from strawberry.http import process_result

from db.database import sessionmaker
from graph.engine import limits
from graph.engine.cost import Pages, actual_cost
from graph.engine.cost import requested_cost as estimate
from graph.engine.prepared import SMALL_KEY_CHARS, Prepared, frozen, small_key
from graph.internals import core_schema
from graph.schema.context import Context
from graph.schema.costs import LIST_SIZES
from graph.server.documents import MODEL_PAGE
from graph.server.ratelimit import CostBucket
from tests.conftest import SCHEMA as schema
from tests.reports import cost

pytestmark = pytest.mark.anyio
PAGES = Pages(default=50, maximum=500)


def requested_cost(query: str, variables: dict[str, Any] | None) -> int | None:
    """The estimate for a document never seen before (nothing remembered)."""
    prepared = Prepared(query, parse(query))
    return estimate(prepared, core_schema(schema), None, variables, PAGES, LIST_SIZES)


async def run(engine, settings, query: str, variables=None, **context: Any) -> dict[str, Any]:
    """The answer as the HTTP layer sends it: data, errors and extensions."""
    async with sessionmaker(engine)() as session:
        value = Context(session=session, settings=settings)
        for name, attribute in context.items():
            setattr(value, name, attribute)
        result = await schema.execute(query, variable_values=variables, context_value=value)
    return dict(process_result(result))


@pytest.mark.parametrize(
    ("query", "variables", "expected"),
    [
        # A field costs 1; an object adds its fields; a list of objects adds them per element.
        ("{ __typename }", None, 1),
        ("{ gpus { name tdpWatts } }", None, 1 + 4 * 2),
        ('{ model(slug: "x") { name paramsB } }', None, 1 + 2),
        # A model's configurations: 32 for one task, 64 when `task: null` asks for every task.
        ('{ model(slug: "x") { configurations { id } } }', None, 1 + (1 + 32)),
        ('{ model(slug: "x") { configurations(task: null) { id } } }', None, 1 + (1 + 64)),
        # Connections multiply their nodes by the page size: `first`, the default, or the cap.
        ("{ configurations { totalCount nodes { id } } }", None, 1 + 1 + (1 + 50)),
        ("{ configurations(first: 3) { nodes { id model { slug } } } }", None, 1 + 1 + 3 * 3),
        ("query ($n: Int) { configurations(first: $n) { edges { cursor } } }", {"n": 7}, 9),
        ("{ configurations(first: 100000) { nodes { id } } }", None, 1 + 1 + 500),
        # Fragments count where they are spread; an interface costs its dearest type.
        (
            "{ ...Q } fragment Q on Query { models { ...M } }"
            " fragment M on Model { slug configurations { ...C } }"
            " fragment C on Configuration { id }",
            None,
            1 + 50 * (1 + (1 + 32)),
        ),
        (
            "{ diffusionConfigurations(first: 2) { nodes { id"
            " ... on ImageConfiguration { imageHeight imageWidth }"
            " ... on VideoConfiguration { fps numFrames videoHeight } } } }",
            None,
            1 + 1 + 2 * (1 + 3),
        ),
        # Skipped fields cost nothing.
        (
            "query ($all: Boolean!) { gpus { name tdpWatts @include(if: $all) } }",
            {"all": False},
            1 + 4,
        ),
        # Lists sized by an argument, or by the field above them.
        ('{ compareModels(models: ["a", "b", "c"]) { model { slug } } }', None, 1 + 3 * 2),
        ("{ changes(from: 1, to: 2) { tasks { task } } }", None, 1 + (1 + 8)),
        ('{ changes(from: 1, to: 2, task: "gpqa") { tasks { task } } }', None, 1 + (1 + 1)),
        # Nesting multiplies.
        (
            "{ models { configurations(task: null) { model {"
            " configurations(task: null) { model { name } } } } } }",
            None,
            1 + 50 * (1 + 64 * (1 + (1 + 64 * (1 + 1)))),
        ),
    ],
)
def test_requested_cost(query: str, variables: dict[str, Any] | None, expected: int) -> None:
    assert requested_cost(query, variables) == expected


def test_the_model_page_costs_what_its_fields_add_up_to() -> None:
    """The model page, by hand: well within the default limit of 250,000."""
    configurations = 1 + 32 * 19
    curves = 1 + 4 * (6 + (1 + 16 * 8))
    power = 1 + 4 * (2 + 4 + 4 + 4 + (1 + 4))
    model = 1 + 10 + configurations + curves + power
    source = 1 + 12 + (1 + 2)
    assert model + source == 1254
    assert requested_cost(MODEL_PAGE, None) == 1254


def test_introspection_lists_are_the_schema_s_own_counts() -> None:
    types = len(schema._schema.type_map)
    query = "{ __schema { types { name } directives { name } } }"
    directives = len(schema._schema.directives)
    expected = 1 + (1 + types) + (1 + directives)
    assert requested_cost(query, None) == expected


def test_variables_that_do_not_fit_leave_the_cost_to_execution() -> None:
    query = "query ($n: Int) { configurations(first: $n) { totalCount } }"
    assert requested_cost(query, {"n": "many"}) is None


def test_actual_cost_counts_the_result() -> None:
    query = """{ a: models { slug configurations { ...C } } gpus { name } }
               fragment C on Configuration { id gpu { name } }"""
    data = {
        "a": [
            {"slug": "x", "configurations": [{"id": "1", "gpu": {"name": "H100"}}]},
            {"slug": "y", "configurations": []},
        ],
        "gpus": None,
    }
    x = 1 + (1 + (1 + (1 + 1)))  # slug, configurations, and its one: id, gpu { name }
    y = 1 + 1  # slug, configurations (none)
    assert actual_cost(Prepared(query, parse(query)), None, data) == (1 + x + y) + 1  # null


def test_every_list_of_objects_has_a_size_and_every_size_a_list() -> None:
    """A new list field needs its bound in `graph.schema.costs.LIST_SIZES` (or a page)."""
    lists = set()
    for name, gql_type in schema._schema.type_map.items():
        for field_name, field in getattr(gql_type, "fields", {}).items():
            nullable = get_nullable_type(getattr(field, "type", None))
            if is_list_type(nullable) and is_composite_type(get_named_type(nullable)):
                lists.add(f"{name}.{field_name}")
    pages = {name for name in lists if name.split(".")[1] in ("nodes", "edges")}
    introspection = {name for name in lists if name.startswith("__")}
    assert sorted(lists - pages - introspection - set(LIST_SIZES)) == []
    assert sorted(set(LIST_SIZES) - lists) == []


async def test_answers_report_their_cost(synthetic_db, settings) -> None:
    answer = await run(synthetic_db, settings, "{ gpus { name tdpWatts } }")
    assert answer == {
        "data": {
            "gpus": [{"name": "B200", "tdpWatts": 1000.0}, {"name": "H100", "tdpWatts": 700.0}]
        },
        "extensions": cost(1 + 4 * 2, 1 + 2 * 2),
    }
    page = await run(synthetic_db, settings, MODEL_PAGE, {"slug": "tiny-1b"})
    # tiny-1b: 3 configurations; curves of 2 and 1 points; power on 2 GPU types.
    model = 1 + 10 + (1 + 3 * 19) + (1 + (6 + 1 + 2 * 8) + (6 + 1 + 1 * 8)) + (1 + 2 * 19)
    assert page["extensions"] == cost(1254, model + 16)


async def test_answers_with_errors_report_their_cost(synthetic_db, settings) -> None:
    """Estimated (configurations and its totalCount), run, and holding nothing."""
    answer = await run(synthetic_db, settings, "{ configurations(first: -1) { totalCount } }")
    assert answer["extensions"] == cost(2, 0)


async def test_a_query_over_the_limit_is_refused_before_any_sql(synthetic_db, settings) -> None:
    statements: list[str] = []
    event.listen(
        synthetic_db.sync_engine, "before_cursor_execute", lambda *a: statements.append(a[2])
    )
    query = """{ models { configurations(task: null) { model {
                 configurations(task: null) { model { name } } } } } }"""
    answer = await run(synthetic_db, settings, query)
    assert answer == {
        "data": None,
        "errors": [
            {
                "message": "The query costs 416051, more than the limit of 250000.",
                "extensions": {"code": "QUERY_TOO_COMPLEX", "cost": 416051, "maxCost": 250000},
            }
        ],
        "extensions": cost(416051, None),
    }
    assert statements == []


async def test_the_cost_limit_is_a_setting(synthetic_db, settings) -> None:
    tight = settings.model_copy(update={"max_cost": 500})
    answer = await run(synthetic_db, tight, "{ configurations(first: 999) { nodes { id } } }")
    assert answer["errors"] == [
        {
            "message": "The query costs 1001, more than the limit of 500.",
            "extensions": {"code": "QUERY_TOO_COMPLEX", "cost": 1001, "maxCost": 500},
        }
    ]


async def test_the_cost_over_http(synthetic_db, client) -> None:
    response = await client.post("/graphql", json={"query": "{ gpus { name } }"})
    assert (response.status_code, response.json()) == (
        200,
        {"data": {"gpus": [{"name": "B200"}, {"name": "H100"}]}, "extensions": cost(5, 3)},
    )


def test_the_bucket_takes_restores_and_refunds() -> None:
    bucket = CostBucket(capacity=100, restore_rate=10)
    assert bucket.take("a", 30, now=0.0) == (True, 70.0, 0.0)
    assert bucket.take("a", 80, now=0.0) == (False, 70.0, 1.0)  # 10 points short: 1 s
    assert bucket.take("a", 80, now=1.0) == (True, 0.0, 0.0)
    assert bucket.refund("a", 20, now=1.0) == 20.0
    assert bucket.available("a", now=3.0) == 40.0
    assert bucket.available("a", now=60.0) == 100.0  # never more than the capacity
    assert bucket.take("b", 100, now=0.0) == (True, 0.0, 0.0)  # each client its own bucket
    assert bucket.refund("b", -10, now=0.0) == -10.0  # used more than its estimate


def test_a_query_dearer_than_the_bucket_runs_from_a_full_bucket_into_debt() -> None:
    bucket = CostBucket(capacity=100, restore_rate=10)
    assert bucket.take("a", 150, now=0.0) == (True, -50.0, 0.0)
    assert bucket.take("a", 10, now=1.0) == (False, -40.0, 5.0)
    assert bucket.take("a", 150, now=14.0) == (False, 90.0, 1.0)
    assert bucket.take("a", 150, now=15.0) == (True, -50.0, 0.0)


def test_the_bucket_forgets_clients_whose_bucket_is_full() -> None:
    bucket = CostBucket(capacity=10, restore_rate=1, max_clients=2)
    for client in ("a", "b"):
        bucket.take(client, 5, now=0.0)
    bucket.take("c", 5, now=5.0)  # a and b are full again by now
    assert sorted(bucket._levels) == ["c"]


async def test_rate_limiting_reports_and_throttles(synthetic_db, settings, monkeypatch) -> None:
    monkeypatch.setattr(limits, "clock", lambda: 1000.0)
    # Documents are free to read here (the fee for reading one: tests/test_adversarial_*.py).
    limited = settings.model_copy(
        update={
            "rate_limit": True,
            "rate_limit_capacity": 10,
            "rate_limit_restore_rate": 0.5,
            "rate_limit_byte_cost": 0,
        }
    )
    bucket = CostBucket(10, 0.5)
    status = {"maximumAvailable": 10, "restoreRate": 0.5}
    first = await run(synthetic_db, limited, "{ gpus { name } }", client="k", cost_bucket=bucket)
    # Takes the requested 5, gives back the 2 it did not use.
    assert first["extensions"] == {
        "cost": {
            "requestedQueryCost": 5,
            "actualQueryCost": 3,
            "throttleStatus": {**status, "currentlyAvailable": 7},
        }
    }
    second = await run(
        synthetic_db, limited, "{ gpus { name tdpWatts } }", client="k", cost_bucket=bucket
    )
    assert second == {
        "data": None,
        "errors": [
            {
                "message": "Throttled: the query costs 9 and 7 of 10 points are available, "
                "restoring 0.5 a second.",
                "extensions": {"code": "THROTTLED", "cost": 9, "retryAfter": 4.0},
            }
        ],
        "extensions": {
            "cost": {
                "requestedQueryCost": 9,
                "actualQueryCost": None,
                "throttleStatus": {**status, "currentlyAvailable": 7},
            }
        },
    }
    other = await run(synthetic_db, limited, "{ gpus { name } }", client="j", cost_bucket=bucket)
    assert other["extensions"]["cost"]["throttleStatus"]["currentlyAvailable"] == 7
    # An answer with errors gets back what went unused too, and reports it (its actual cost
    # counts what the answer holds: `data: null`, nothing).
    failed = await run(
        synthetic_db,
        limited,
        "{ configurations(first: -1) { totalCount } }",
        client="j",
        cost_bucket=bucket,
    )
    assert (failed["extensions"], bucket.available("j", 1000.0)) == (
        {
            "cost": {
                "requestedQueryCost": 2,
                "actualQueryCost": 0,
                "throttleStatus": {**status, "currentlyAvailable": 7},
            }
        },
        7.0,
    )


async def test_without_a_bucket_nothing_is_charged() -> None:
    """The HTTP layer brings the client's bucket; a query run without one (a document route's)
    reports its cost and pays nothing."""
    from graph.settings import Settings

    context = SimpleNamespace(settings=Settings(rate_limit=True, rate_limit_capacity=50))
    result = await schema.execute("{ __typename }", context_value=context)
    assert result.extensions == {"cost": {"requestedQueryCost": 1, "actualQueryCost": 1}}


# JSON values as variables come: scalars, lists and objects, nested.
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=30,
)


def _chars(value: Any) -> int:
    """What a small key counts of a value: its strings' characters, 8 for anything else."""
    if isinstance(value, dict):
        return 8 + sum(len(k) + _chars(v) for k, v in value.items())
    if isinstance(value, list):
        return 8 + sum(_chars(v) for v in value)
    return len(value) if isinstance(value, str) else 8


@given(value=JSON, other=JSON)
def test_memo_keys_are_equal_exactly_for_equal_values_of_equal_types(value, other) -> None:
    """The costs' memo key (prepared.small_key): equal for equal values whatever the order of
    an object's keys, different where a type differs (1, 1.0, true), None past its size."""
    key = small_key(value)
    assert (key is None) == (_chars(value) > SMALL_KEY_CHARS)
    if key is not None:
        assert key == frozen(value) == small_key(json.loads(json.dumps(value, sort_keys=True)))
        other_key = small_key(other)
        if other_key is not None:
            same = json.dumps(value, sort_keys=True) == json.dumps(other, sort_keys=True)
            assert (key == other_key) == same


def test_memo_keys_of_large_or_deep_values_are_not_kept() -> None:
    deep: list[Any] = []
    inner = deep
    for _ in range(5_000):
        inner.append([])
        inner = inner[0]
    assert small_key(deep) is None  # not a RecursionError
    assert small_key("x" * SMALL_KEY_CHARS) is not None
    assert small_key("x" * (SMALL_KEY_CHARS + 1)) is None
    assert small_key({"slug": "qwen-3-8b", "release": None}) is not None
    assert len({small_key(v) for v in (1, 1.0, True, "1")}) == 4
    assert small_key({"k": {1, 2}}) is None  # not a key at all
