"""The short way through plain fields (graph/execution.py) answers exactly as graphql-core's."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

import pytest
import strawberry
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from db import reads
from db.engine import sessionmaker
from graph.engine.internals import CompiledQueries
from graph.schema import build_schema
from graph.schema.context import Context
from graph.server.documents import MODEL_PAGE
from tests.conftest import SCHEMA as schema
from tests.conftest import SEED

pytestmark = pytest.mark.anyio

usual = build_schema()
usual.execution_context_class = StrawberryGraphQLCoreExecutionContext
SLUGS = [m["slug"] for m in json.loads(SEED.read_text())["models"]]
FIELDS = """id gpuModel numGpus modelId maxNumSeqs tensorParallel dataParallel expertParallel
    parallelNotes avgBatchSize avgOutputLen avgPowerWatts powerPerGpuWatts fractionOfTdp
    energyPerRequestJoules energyPerTokenJoules medianItlMs p90ItlMs p95ItlMs p99ItlMs
    outputThroughputTokensPerSec outputLengthDistribution { bins counts }
    upstream { taskFile taskRow modelFile modelRow } gpu { name fullName tdpWatts }
    model { slug name gpus inIndex } task { name architecture }"""
QUERIES = [(MODEL_PAGE, {"slug": slug}) for slug in [*SLUGS, "deepseek-v3-1", "no-such-model"]] + [
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
    for each in (schema, usual):
        async with sessionmaker(real_db)() as session:
            value = Context(session=session, settings=real_settings, _release=release)
            result = await each.execute(query, variable_values=variables, context_value=value)
        errors = [(e.message, e.path) for e in result.errors or ()]
        answers.append((json.dumps(result.data), errors, result.extensions))
    return answers[0], answers[1]


@pytest.mark.parametrize(("query", "variables"), QUERIES)
async def test_the_same_answers_on_the_real_data(real_db, real_settings, query, variables):
    assert schema.execution_context_class is CompiledQueries
    plain, usual_answer = await _both(real_db, real_settings, query, variables)
    assert plain == usual_answer  # the JSON text: the same values in the same order
    assert plain[1] == []


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


async def _toy(query: str) -> list[tuple[str, list[Any]]]:
    answers = []
    for executor in (CompiledQueries, StrawberryGraphQLCoreExecutionContext):
        toy = strawberry.Schema(query=ToyQuery, execution_context_class=executor)
        result = await toy.execute(query)
        errors = [(e.message, e.path) for e in result.errors or ()]
        answers.append((json.dumps(result.data), errors))
    return answers


async def test_the_same_answers_and_errors_for_values_that_do_not_fit() -> None:
    """Nulls where the schema forbids them, values that do not coerce, an error beside plain
    fields: the short way gives them to the usual way, which answers as it always has."""
    plain, usual_answer = await _toy(
        "{ things { __typename name size count flag colour sizes maybe other { name } } }"
    )
    assert plain == usual_answer
    assert len(plain[1]) == 9  # the ones graphql-core refuses


@pytest.mark.parametrize("case", range(5))
@pytest.mark.parametrize("field", ["points", "requiredPoints"])
async def test_lists_of_plain_objects_answer_as_the_usual_way(field, case) -> None:
    """A null item, a value that does not coerce, an item of another type, a long list."""
    plain, usual_answer = await _toy(f"{{ a: {field}(case: {case}) {{ x label __typename }} }}")
    assert plain == usual_answer


async def test_a_selection_of_the_type_name_only() -> None:
    plain, usual_answer = await _toy("{ points(case: 0) { __typename t: __typename } }")
    assert plain == usual_answer
    assert json.loads(plain[0]) == {"points": [{"__typename": "Point", "t": "Point"}] * 2}
