"""Compiled queries (graph/engine/compiled.py) answer exactly as strawberry's usual executor:
the same data in the same order, the same errors at the same paths, the same cost. On a toy
schema made to go wrong (async and sync resolvers, abstract types, nulls where the schema
forbids them, values that do not coerce, resolvers that raise, arguments from literals and
variables) and on LeadGreen's schema over the synthetic data, with queries Hypothesis writes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from enum import Enum
from typing import Any

import pytest
import strawberry
from graphql import (
    GraphQLObjectType,
    Undefined,
    get_named_type,
    is_abstract_type,
    is_leaf_type,
    is_non_null_type,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strawberry.permission import BasePermission
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from db.engine import sessionmaker
from graph.engine import compiled, internals
from graph.engine.actual_cost import actual_cost
from graph.engine.internals import CompiledQueries
from graph.schema import build_schema
from graph.schema.catalogs import Catalogs
from graph.schema.context import Context
from graph.server.documents import MODEL_PAGE
from graph.server.execute import close_quietly
from graph.settings import Settings
from tests.conftest import SCHEMA

pytestmark = pytest.mark.anyio
USUAL = build_schema()
USUAL.execution_context_class = StrawberryGraphQLCoreExecutionContext


@pytest.fixture
def fallbacks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The compiled runs that gave way to the usual executor, with why."""
    seen: list[str] = []
    run = compiled.run

    async def watched(*args: Any) -> Any:
        try:
            return await run(*args)
        except Exception as error:
            seen.append(type(error).__name__)
            raise

    monkeypatch.setattr(compiled, "run", watched)
    yield seen


# A toy schema made to go wrong.
@strawberry.enum
class Size(Enum):
    SMALL = "small"
    LARGE = "large"


class Allowed(BasePermission):
    message = "not allowed"

    def has_permission(self, source: Any, info: strawberry.Info, **kwargs: Any) -> bool:
        return kwargs.get("note") != "secret"


@strawberry.interface
class Named:
    name: str


@strawberry.type
class Book(Named):
    pages: int
    weight: float
    ratings: list[float | None] | None


@strawberry.type
class Person(Named):
    age: int | None

    @strawberry.field
    def friends(self, first: int = 2) -> list[Person]:
        return [Person(name=f"{self.name}'s friend {i}", age=i) for i in range(first)]


@strawberry.type
class Cover:
    title: str
    colours: list[str]


@strawberry.type
class Shelf:
    label: str
    cover: Cover | None
    back: Cover
    books: list[Book]
    owner: Person | None
    nested: list[list[int | None]]

    @strawberry.field
    def shout(self, times: int = 1, suffix: str = "!") -> str:
        return self.label.upper() * times + suffix

    @strawberry.field
    async def neighbour(self) -> Shelf | None:
        await asyncio.sleep(0)
        return None if self.label == "last" else _shelf("last")

    @strawberry.field
    def must(self) -> int:
        return None  # type: ignore[return-value]

    @strawberry.field
    def raises(self) -> str | None:
        raise ValueError(f"no value on {self.label}")

    @strawberry.field
    def things(self) -> list[Named]:
        return [*self.books, *([self.owner] if self.owner else [])]

    @strawberry.field
    def where(
        self, info: strawberry.Info, upper: bool = False, at_most: float | None = None
    ) -> str:
        text = f"{info.field_name} at {info.path.key} of {self.label} ({at_most})"
        return text.upper() if upper else text

    @strawberry.field
    def parent_label(self, root: Shelf, size: Size = Size.SMALL) -> str:
        return f"{root.label} {size.value}"

    @strawberry.field(permission_classes=[Allowed])
    def guarded(self, note: str = "-") -> str:
        return f"{self.label} {note}"


def _shelf(label: str, **changes: Any) -> Shelf:
    values: dict[str, Any] = {
        "label": label,
        "books": [
            Book(name=f"{label} {i}", pages=100 + i, weight=0.5 * i, ratings=[4.5, None])
            for i in range(3)
        ],
        "owner": Person(name=f"owner of {label}", age=None),
        "nested": [[1, None], [], [3]],
        "cover": None,
        "back": Cover(title=f"back of {label}", colours=["red"]),
    }
    values.update(changes)
    return Shelf(**values)


BROKEN = {
    "ok": {},
    "bad_page": {"books": [Book(name="b", pages="many", weight=1, ratings=None)]},  # type: ignore[arg-type]
    "inf_weight": {"books": [Book(name="b", pages=1, weight=float("inf"), ratings=None)]},
    "int_weight": {"books": [Book(name="b", pages=1, weight=2, ratings=[3])]},
    "null_book": {"books": [None]},
    "nan_rating": {"books": [Book(name="b", pages=1, weight=1.0, ratings=[float("nan")])]},
    "no_label": {"label": None},
    "big_int": {"nested": [[2**40]]},
    "covered": {"cover": Cover(title="front", colours=["blue", "green"])},
    "no_back": {"back": None},
    "bad_back": {"back": Cover(title="b", colours=None)},  # type: ignore[arg-type]
}

FINE = ("ok", "covered", "int_weight")  # the cases answered without an error


@strawberry.type
class ToyQuery:
    @strawberry.field
    async def shelf(self, case: str = "ok") -> Shelf | None:
        await asyncio.sleep(0)
        return _shelf(case, **BROKEN[case])

    @strawberry.field
    def shelves(self, labels: list[str] | None = None) -> list[Shelf]:
        return [_shelf(label) for label in labels or ["a", "b"]]

    @strawberry.field
    def failing(self) -> Shelf:
        raise RuntimeError("nothing here")


def _toy(executor: type) -> strawberry.Schema:
    return strawberry.Schema(query=ToyQuery, types=[Book, Person], execution_context_class=executor)


TOYS = (_toy(CompiledQueries), _toy(StrawberryGraphQLCoreExecutionContext))
SHELF = """label shout(times: 2) s: shout(suffix: $suffix)
    books { name pages weight ratings __typename }
    owner { name age friends(first: 1) { name } } nested neighbour { label neighbour { label } }
    things { __typename name ... on Book { pages } ... on Person { age } } __typename
    where w: where(upper: true, atMost: 2.5) parentLabel(size: LARGE)
    guarded g: guarded(note: $suffix) cover { title colours } back { colours t: title }"""


async def _answers(
    schemas: tuple[strawberry.Schema, ...], query: str, variables: Any, context: Any = None
) -> list[tuple[str, list[Any], Any]]:
    answers = []
    for schema in schemas:
        result = await schema.execute(query, variable_values=variables, context_value=context)
        errors = [(e.message, e.path) for e in result.errors or ()]
        answers.append((json.dumps(result.data), errors, result.extensions))
    return answers


@pytest.mark.parametrize("case", sorted(BROKEN))
async def test_the_same_answers_and_errors_on_the_toy_schema(case, fallbacks) -> None:
    query = f"query ($suffix: String!) {{ shelf(case: {json.dumps(case)}) {{ {SHELF} }} }}"
    compiled_answer, usual_answer = await _answers(TOYS, query, {"suffix": "?"})
    assert compiled_answer == usual_answer
    assert (compiled_answer[1] == []) == (case in FINE)
    assert (fallbacks == []) == (case in FINE)  # compiled, or given way to the usual way


@pytest.mark.parametrize(
    "selection",
    ["failing { label }", "shelf { must }", "shelf { raises label }", "shelves { raises }"],
)
async def test_errors_from_resolvers_are_reported_the_usual_way(selection, fallbacks) -> None:
    compiled_answer, usual_answer = await _answers(TOYS, f"{{ {selection} }}", None)
    assert compiled_answer == usual_answer
    assert compiled_answer[1] and len(fallbacks) == 1


def test_resolvers_are_called_straight_where_strawberrys_wrapper_would_change_nothing() -> None:
    """Built-in scalar arguments, `self`, `info` and `root` go straight to the resolver; an enum
    or a list argument, or a permission (a field extension), go through strawberry's wrapper."""
    core = internals.core_schema(TOYS[0])
    fields = {**core.query_type.fields, **core.get_type("Shelf").fields}  # type: ignore[union-attr]
    straight = {name for name, f in fields.items() if internals.direct_resolver(f, core)}
    assert straight == {
        "shelf",
        "failing",
        "shout",
        "neighbour",
        "must",
        "raises",
        "things",
        "where",
    }
    model_page = internals.core_schema(SCHEMA)
    root, model = model_page.query_type, model_page.get_type("Model")
    assert all(
        internals.direct_resolver(parent.fields[name], model_page)  # type: ignore[union-attr]
        for parent, name in [
            (root, "model"),
            (root, "source"),
            (model, "configurations"),
            (model, "curves"),
            (model, "power"),
        ]
    )


async def test_what_a_plan_does_not_take_runs_the_usual_way(fallbacks) -> None:
    """Directives and introspection are not compiled: no plan is run at all."""
    for query in (
        "{ shelves { label @include(if: true) } __schema { queryType { name } } }",
        '{ __type(name: "Shelf") { name } }',
        "{ shelves { label @skip(if: false) } }",
    ):
        compiled_answer, usual_answer = await _answers(TOYS, query, None)
        assert compiled_answer == usual_answer and compiled_answer[1] == []
    assert fallbacks == []


def _selection(draw: Any, type_: Any, depth: int, arguments: dict[tuple[str, str], str]) -> str:
    """A selection on `type_` drawn from its fields (with aliases, repeats and fragments)."""
    names = [
        name
        for name, field in type_.fields.items()
        if (type_.name, name) in arguments
        or all(
            not is_non_null_type(a.type) or a.default_value is not Undefined
            for a in field.args.values()
        )
    ]
    chosen = draw(st.lists(st.sampled_from(sorted(names)), min_size=1, max_size=4))
    parts = []
    for i, name in enumerate(chosen):
        field = type_.fields[name]
        named = get_named_type(field.type)
        head = draw(st.sampled_from(["", f"a{i}: "])) + name + arguments.get((type_.name, name), "")
        if is_leaf_type(named):
            parts.append(head)
        elif depth == 0:
            continue
        elif is_abstract_type(named):
            possible = sorted(t.name for t in _SCHEMAS.possible(named))
            on = draw(st.sampled_from(possible))
            inner = _selection(draw, _SCHEMAS.type(on), depth - 1, arguments)
            parts.append(f"{head} {{ __typename ... on {on} {{ {inner} }} }}")
        elif isinstance(named, GraphQLObjectType):
            inner = _selection(draw, named, depth - 1, arguments)
            parts.append(f"{head} {{ {inner} }}")
    if draw(st.booleans()) or not parts:
        parts.append("__typename")
    if draw(st.booleans()):
        return f"... on {type_.name} {{ {' '.join(parts)} }}"
    return " ".join(parts)


class _Schemas:
    schema = internals.core_schema(SCHEMA)

    def possible(self, abstract: Any) -> Any:
        return self.schema.get_possible_types(abstract)

    def type(self, name: str) -> Any:
        return self.schema.get_type(name)


_SCHEMAS = _Schemas()
# Required arguments, given values the synthetic data has.
ARGUMENTS = {
    ("Query", "compareModels"): '(models: ["tiny-1b"])',
    ("Query", "changes"): "(from: 1, to: 1)",
    ("Query", "deploymentPlan"): "(demand: {requestsPerSecond: 10})",
    ("FittedMetric", "estimate"): "(batchSize: 8)",
    ("FittedMetric", "estimates"): "(batchSizes: [8, 24.5, 1000])",
}


async def _on_both(engine: Any, settings: Settings, query: str) -> list[Any]:
    catalogs = Catalogs()
    answers = []
    for schema in (SCHEMA, USUAL):
        context = Context(None, settings, catalogs=catalogs, sessions=sessionmaker(engine))
        try:
            result = await schema.execute(query, context_value=context)
        finally:  # as the server closes it (an error may have cancelled a resolver's SQL)
            if context.session is not None:
                await close_quietly(context.session)
        errors = [(e.message, e.path) for e in result.errors or ()]
        answers.append((json.dumps(result.data), errors, result.extensions))
    return answers


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_same_answers_as_the_usual_executor_for_any_query(data, synthetic_data) -> None:
    """Queries over LeadGreen's whole schema (three levels deep) on the synthetic data."""
    runner, engine, settings = synthetic_data
    query = "{ " + _selection(data.draw, _SCHEMAS.schema.query_type, 3, ARGUMENTS) + " }"
    compiled_answer, usual_answer = runner.run(_on_both(engine, settings, query))
    assert compiled_answer == usual_answer, query


async def test_the_model_page_is_compiled_and_counts_its_cost(
    synthetic_db, settings, fallbacks
) -> None:
    catalogs = Catalogs()
    async with sessionmaker(synthetic_db)() as session:
        context = Context(session=session, settings=settings, catalogs=catalogs)
        result = await SCHEMA.execute(MODEL_PAGE, {"slug": "tiny-1b"}, context_value=context)
    assert result.errors is None and fallbacks == []
    assert context.counted_cost is not None and context.counted_cost > 100
    assert result.extensions is not None
    cost = result.extensions["cost"]
    assert cost["actualQueryCost"] == context.counted_cost <= cost["requestedQueryCost"]
    # The same as walking the answer afterwards.
    assert actual_cost(context.prepared, None, result.data) == context.counted_cost
