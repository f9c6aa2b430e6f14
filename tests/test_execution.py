"""The one way a request is executed (graph/engine/execution.py): plain fields completed
together answer exactly as graphql-core's executor answers, on the real data and on values
made not to fit; a request's errors before its plan runs are strawberry's own; a client pays
once, what its answer cost."""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import logging
import warnings
from enum import Enum
from typing import Any

import pytest
import strawberry
from strawberry.exceptions import MissingQueryError
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types.graphql import OperationType

from db import reads
from db.database import sessionmaker
from graph.engine.execution import Schema
from graph.schema.context import Context
from graph.schema.memory import Catalogs
from graph.server.documents import MODEL_PAGE
from graph.server.execute import RequestContext
from graph.server.ratelimit import CostBucket
from tests.conftest import SCHEMA as schema
from tests.conftest import SEED
from tests.queries import Request
from tests.reports import UNCOSTED, cost
from tests.test_query_plans import REFERENCE, Coded, _on_both, answer

pytestmark = pytest.mark.anyio
FIELDS = """id gpuModel numGpus modelId maxNumSeqs tensorParallel dataParallel expertParallel
    parallelNotes avgBatchSize avgOutputLen avgPowerWatts powerPerGpuWatts fractionOfTdp
    energyPerRequestJoules energyPerTokenJoules medianItlMs p90ItlMs p95ItlMs p99ItlMs
    outputThroughputTokensPerSec outputLengthDistribution { bins counts }
    upstream { taskFile taskRow modelFile modelRow } gpu { name fullName tdpWatts }
    model { slug name gpus inIndex } task { name architecture }"""
QUERIES = [
    (
        "query ($t: String) { configurations(filter: {task: $t}, first: 500) { totalCount "
        f"nodes {{ {FIELDS} }} }} }}",
        {"t": "gpqa"},
    ),
    (
        """query ($all: Boolean!) { a: models { __typename slug s: slug name @include(if: $all)
            ...M } } fragment M on Model { paramsB gpus @skip(if: $all) power { __typename
            gpuModel totalWatts { minimum ...S } } } fragment S on Spread { median maximum }""",
        {"all": False},
    ),
    (
        """{ diffusionConfigurations(first: 40) { nodes { __typename id gpuModel batchSize
            ... on ImageConfiguration { imageHeight imageWidth energyPerImageJoules }
            ... on VideoConfiguration { fps numFrames energyPerVideoJoules }
            isParetoOptimal energy { perOutput { joules kilowattHours } } } } }""",
        None,
    ),
    (
        """{ leaderboard { task { name } entries { rank energyJoules ratioToBest
            model { slug } configuration { id isParetoOptimal(scope: GLOBAL) } } }
            fittedCurves { task gpuModel runs medianItlMs { unit method fit { k r2: rSquared }
            measured { batchSize mean runs } estimate(batchSize: 48) { value method } } }
            facets { task { name } gpus batchSizes metrics { metric unit minimum maximum } }
            releases { number lastUpdated identityChecks { identity rows } } tasks { name } }""",
        None,
    ),
]


async def _both(real_db, real_settings, query: str, variables: Any) -> tuple[Any, Any]:
    async with sessionmaker(real_db)() as session:
        release = await reads.latest_release(session)
    answers = []
    for each in (schema, REFERENCE):
        async with sessionmaker(real_db)() as session:
            value = Context(session=session, settings=real_settings, _release=release)
            result = await each.execute(query, variable_values=variables, context_value=value)
        answers.append(answer(result))
    return answers[0], answers[1]


@pytest.mark.parametrize(("query", "variables"), QUERIES)
async def test_the_same_answers_on_the_real_data(real_db, real_settings, query, variables):
    ours, reference = await _both(real_db, real_settings, query, variables)
    assert ours == reference  # the JSON text: the same values in the same order
    assert ours[1] == []


async def test_every_model_page_answers_the_same_on_the_real_data(real_db, real_settings):
    slugs = [m["slug"] for m in json.loads(SEED.read_text())["models"]]
    for slug in [*slugs, "deepseek-v3-1", "no-such-model"]:
        ours, reference = await _both(real_db, real_settings, MODEL_PAGE, {"slug": slug})
        assert ours == reference, slug
        assert ours[1] == [], slug


@strawberry.enum
class Colour(Enum):
    RED = "red"


@strawberry.type
class Thing:
    name: str
    size: float
    count: int
    flag: bool | None
    colour: Colour
    sizes: list[float]
    maybe: list[int | None] | None

    @strawberry.field
    def other(self) -> Thing | None:
        if self.name == "broken":
            raise ValueError("no other")
        return None


BAD: list[dict[str, Any]] = [
    {},
    {"name": None},
    {"size": float("inf")},
    {"size": "1.5"},
    {"size": 7},
    {"count": 2**40},
    {"count": 2.5},
    {"count": True},
    {"flag": 0},
    {"colour": "blue"},
    {"sizes": [1.0, None]},
    {"sizes": "12"},
    {"sizes": (1, 2.5)},
    {"maybe": [None, 3]},
    {"maybe": [None, "x"]},
    {"name": "broken"},
    {"name": 12},
]


def _thing(**changes: Any) -> Thing:
    values: dict[str, Any] = {
        "name": "ok",
        "size": 1.5,
        "count": 3,
        "flag": None,
        "colour": Colour.RED,
        "sizes": [1.0, 2.0],
        "maybe": None,
    }
    values.update(changes)
    thing = Thing.__new__(Thing)
    thing.__dict__.update(values)
    return thing


@strawberry.type
class Point:
    x: float
    label: str | None


def _points(*values: Any) -> list[Any]:
    points = []
    for value in values:
        if isinstance(value, tuple):
            point = Point.__new__(Point)
            point.__dict__.update(x=value[0], label=value[1])
            value = point
        points.append(value)
    return points


@strawberry.type
class ToyQuery:
    @strawberry.field
    def things(self) -> list[Thing | None]:
        return [_thing(**bad) for bad in BAD]

    @strawberry.field
    def points(self, case: int) -> list[Point | None]:
        return [
            _points((1.0, "a"), (2, None)),
            _points((1.0, "a"), None),
            _points((1.0, "a"), (float("nan"), "b")),
            _points((1.0, "a"), _thing()),
            _points(*[(float(i), str(i)) for i in range(50)]),
        ][case]

    @strawberry.field
    def required_points(self, case: int) -> list[Point]:
        return self.points(case)  # type: ignore[return-value]


OURS = Schema(ToyQuery)
STRAWBERRYS = strawberry.Schema(query=ToyQuery, extensions=[Coded])


async def _toy(query: str) -> list[tuple[str, list[Any]]]:
    return [answer(await toy.execute(query)) for toy in (OURS, STRAWBERRYS)]


async def test_the_same_answers_and_errors_for_values_that_do_not_fit() -> None:
    """Nulls where the schema forbids them, values that do not coerce, an error beside plain
    fields: each such object completed again field by field, which reports it."""
    ours, reference = await _toy(
        "{ things { __typename name size count flag colour sizes maybe other { name } } }"
    )
    assert ours == reference
    assert len(ours[1]) == 9  # the ones graphql-core refuses


@pytest.mark.parametrize("case", range(5))
@pytest.mark.parametrize("field", ["points", "requiredPoints"])
async def test_lists_of_plain_objects_answer_as_graphql_core_answers(field, case) -> None:
    """A null item, a value that does not coerce, an item of another type, a long list."""
    ours, reference = await _toy(f"{{ a: {field}(case: {case}) {{ x label __typename }} }}")
    assert ours == reference


async def test_a_selection_of_the_type_name_only() -> None:
    ours, reference = await _toy("{ points(case: 0) { __typename t: __typename } }")
    assert ours == reference
    assert json.loads(ours[0]) == {"points": [{"__typename": "Point", "t": "Point"}] * 2}


@strawberry.type
class Branch:
    """Fields that answer after `steps` turns of the loop, fail after them, or branch again."""

    @strawberry.field
    async def value(self, steps: int) -> int:
        for _ in range(steps):
            await asyncio.sleep(0)
        return steps

    @strawberry.field
    async def fail(self, steps: int) -> int:
        for _ in range(steps):
            await asyncio.sleep(0)
        raise ValueError("failed")

    @strawberry.field
    async def child(self) -> Branch:
        return Branch()

    @strawberry.field
    async def children(self) -> list[Branch]:
        return [Branch(), Branch()]


@strawberry.type
class Tree:
    @strawberry.field
    async def root(self) -> Branch | None:
        return Branch()


def _nested(inner: str, depth: int, field: str) -> str:
    for _ in range(depth):
        inner = f"{field} {{ {inner} }}"
    return inner


def _tree(at: int, fail: int, depth: int, steps: int, field: str) -> str:
    failing = _nested(f"fail(steps: {fail})", at, field)
    return f"{{ root {{ a: {failing} b: {_nested(f'value(steps: {steps})', depth, field)} }} }}"


TREES = [
    _tree(*each)
    for each in itertools.product(range(3), range(3), range(1, 4), range(3), ["child", "children"])
]


async def _unawaited(run: Any) -> list[str]:
    """What Python reports as never awaited while `run` runs and once its objects are freed
    (its errors not logged: a captured log record would keep their frames alive). A warning
    holds the coroutine it reports, and that what it was handed: collected until none is new."""
    found: list[str] = []
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            await run()
            await asyncio.sleep(0.001)  # what the failure left to settle, settled
            while True:
                gc.collect()
                if not caught:
                    break
                found += [str(each.message) for each in caught]
                caught.clear()
    finally:
        logging.disable(logging.NOTSET)
    return [each for each in found if "never awaited" in each]


async def test_siblings_cancelled_before_they_start_leave_no_coroutine_unawaited() -> None:
    """A field that fails cancels its siblings (graphql-core's order); a sibling cancelled
    before its first step still closes the resolvers' coroutines it was handed (graphql-core's
    own gather leaves them to be reported as never awaited), and the answers are strawberry's."""
    answers = []

    async def run() -> None:
        for query in TREES:
            answers.append(answer(await Schema(Tree).execute(query)))

    assert await _unawaited(run) == []
    reference = strawberry.Schema(query=Tree, extensions=[Coded])
    assert answers == [answer(await reference.execute(query)) for query in TREES]
    assert {data for data, _errors in answers} == {json.dumps({"root": None})}


async def test_a_request_cancelled_at_any_turn_leaves_no_coroutine_unawaited() -> None:
    """A request cancelled (a deadline, a client gone) while its fields are being gathered,
    after each number of turns of the loop until it has answered."""
    query = """{ root { a: children { children { value(steps: 2) } }
        b: children { children { children { value(steps: 1) } } } } }"""
    schema, cancelled = Schema(Tree), []

    async def run() -> None:
        for turns in range(20):
            task = asyncio.ensure_future(schema.execute(query))
            for _ in range(turns):
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            cancelled.append(task.cancelled())

    assert await _unawaited(run) == []
    assert cancelled[0] and not cancelled[-1]  # from before it starts to after it answered


def test_the_model_page_answers_as_strawberry_answers_it(synthetic_data) -> None:
    runner, engine, settings = synthetic_data
    ours, result, reference = runner.run(
        _on_both(engine, settings, Request(MODEL_PAGE, {"slug": "tiny-1b"}, None))
    )
    assert ours == reference and ours[1] == []
    assert result.extensions["cost"]["actualQueryCost"] > 100


@pytest.mark.parametrize(
    ("query", "variables", "expected", "extensions"),
    [
        (  # the resolver refuses: a field error, the non-null root nulled
            '{ leaderboard(task: "text-to-image") { task { name } } }',
            {},
            {
                "message": "unknown task 'text-to-image' in `task`; `tasks` lists them",
                "locations": [{"line": 1, "column": 3}],
                "path": ["leaderboard"],
                "extensions": {"code": "BAD_USER_INPUT"},
            },
            cost(3, 0),  # leaderboard, its task and the task's name; the answer holds nothing
        ),
        (  # a variable that does not coerce: a request error
            MODEL_PAGE,
            {"slug": 12},
            {
                "message": "Variable '$slug' has invalid value: String cannot represent a "
                "non string value: 12",
                "locations": [{"line": 3, "column": 17}],
                "extensions": {"code": "BAD_USER_INPUT"},
            },
            UNCOSTED,  # (the estimate needs the variables)
        ),
    ],
    ids=["a resolver refuses", "a variable does not coerce"],
)
def test_errors_are_answered_as_strawberry_answers_them(
    synthetic_data, query, variables, expected, extensions
) -> None:
    runner, engine, settings = synthetic_data
    ours, result, reference = runner.run(
        _on_both(engine, settings, Request(query, variables, None))
    )
    assert ours == reference == ("null", [expected])
    assert result.extensions == extensions


async def test_several_operations_without_a_name_are_refused() -> None:
    """The spec's GetOperation() needs a name; strawberry would run the first."""
    result = await schema.execute("query A { models { slug } } query B { tasks { name } }")
    assert answer(result) == (
        "null",
        [
            {
                "message": "The document holds several operations: say which to run with "
                "`operationName`.",
                "extensions": {"code": "BAD_REQUEST"},
            }
        ],
    )


@pytest.mark.parametrize(
    ("query", "operation_name", "allowed", "raised"),
    [
        ("", None, None, MissingQueryError),
        ("{ gpus { name } }", "Other", None, CannotGetOperationTypeError),
        ("fragment F on Gpu { name }", None, None, CannotGetOperationTypeError),
        ("mutation { gpus { name } }", None, [OperationType.QUERY], InvalidOperationTypeError),
    ],
)
async def test_what_strawberry_raises_is_raised(query, operation_name, allowed, raised) -> None:
    with pytest.raises(raised):
        await schema.execute(query, operation_name=operation_name, allowed_operation_types=allowed)


async def _paid(engine: Any, settings: Any, query: str, variables: Any) -> float:
    """What a client has left of a fresh bucket after the query is run twice (the first run
    reads the document; the second pays for its cost alone)."""
    bucket = CostBucket(10_000, 0.000001)
    settings = settings.model_copy(update={"rate_limit": True})
    catalogs = Catalogs()
    left = []
    for _ in range(2):
        context = RequestContext(
            session=None,
            sessions=sessionmaker(engine),
            settings=settings,
            catalogs=catalogs,
            client="someone",
            cost_bucket=bucket,
        )
        try:
            before = bucket.available("someone", 0.0)
            result = await schema.execute(query, variables, context_value=context)
            left.append((before - bucket.available("someone", 0.0), result))
        finally:
            if context.session is not None:
                await context.session.close()
    return left[1]


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        (MODEL_PAGE, {"slug": "tiny-1b"}),
        ("query ($t: String!) { leaderboard(task: $t) { task { name } } }", {"t": "text-to-image"}),
    ],
    ids=["an answer", "a field error that nulls the answer"],
)
def test_a_client_pays_once_what_its_answer_cost(synthetic_data, query, variables) -> None:
    runner, engine, settings = synthetic_data
    paid, result = runner.run(_paid(engine, settings, query, variables))
    cost = (result.extensions or {}).get("cost", {}).get("actualQueryCost", 0)
    assert paid == pytest.approx(cost, abs=0.01)
    assert (cost > 100) == (result.errors is None)  # a nulled answer costs nothing
