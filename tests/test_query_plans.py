"""A query's plan (graph/engine/plan.py, completion.py) answers exactly as strawberry with
graphql-core's executor answers: the same data in the same order, the same errors (message,
locations, path, extensions, masked where unexpected) at the same paths, each resolver called
once. On a toy schema made to go wrong (async and sync resolvers, abstract types, nulls where
the schema forbids them, values that do not coerce, resolvers that raise, a permission) and on
LeadGreen's schema over the synthetic data, with requests Hypothesis writes: variables,
@include and @skip, aliases, inline and named fragments, introspection, wrong arguments and
variables. Each answer without errors was built by its plan's quick completions alone."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from types import SimpleNamespace
from typing import Any

import pytest
import strawberry
from hypothesis import HealthCheck, given, settings
from strawberry.extensions import SchemaExtension
from strawberry.permission import BasePermission

from db.database import close_quietly, sessionmaker
from graph import internals
from graph.engine import completion
from graph.engine.cost import actual_cost
from graph.engine.execution import Schema, coded
from graph.schema.context import Context
from graph.schema.costs import LIST_SIZES
from graph.schema.federation import FEDERATION_VERSION, Federated
from graph.schema.memory import Catalogs
from graph.schema.query import Query
from graph.schema.subscription import Subscription
from graph.schema.types.model import ImageConfiguration, VideoConfiguration
from graph.server.documents import MODEL_PAGE
from graph.settings import Settings
from tests.conftest import SCHEMA
from tests.queries import Request, requests

pytestmark = pytest.mark.anyio
CALLS: Counter[str] = Counter()


class Coded(SchemaExtension):
    """strawberry's own pipeline with LeadGreen's error codes and masking (as MaskErrors
    would): the reference the engine's answers are compared with."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = [coded(error) for error in result.errors]


@dataclass
class Watched:
    """What the engine did: plans run, and values completed one by one because a quick
    completion (plain fields, rows, leaves) did not take them."""

    runs: int = 0
    refits: list[str] = field(default_factory=list)

    def clear(self) -> None:
        self.runs, self.refits = 0, []


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> Watched:
    seen = Watched()
    # Both ways log every error with its traceback: hundreds of examples' worth of them.
    for name in ("strawberry.execution", "leadgreen"):
        monkeypatch.setattr(logging.getLogger(name), "disabled", True)
    execute, by_field, by_item = (
        completion.execute,
        completion.field_by_field,
        completion.item_by_item,
    )

    async def run(*args: Any) -> Any:
        seen.runs += 1
        return await execute(*args)

    def field_by_field(selection: Any, *args: Any) -> Any:
        seen.refits.append(selection.type.name)
        return by_field(selection, *args)

    def item_by_item(*args: Any) -> Any:
        seen.refits.append("items")
        return by_item(*args)

    monkeypatch.setattr(completion, "execute", run)
    monkeypatch.setattr(completion, "field_by_field", field_by_field)
    monkeypatch.setattr(completion, "item_by_item", item_by_item)
    return seen


# Limits no generated request reaches: these tests compare execution, test_limits.py the limits.
WIDE_LIMITS = {
    "max_aliases": 10_000,
    "max_directives": 10_000,
    "max_repeated_directives": 100,
    "max_cost": 10**9,
    "max_fields": 100_000,
    "max_field_merges": 10**6,
}
WIDE = Settings.model_construct(**WIDE_LIMITS)


def answer(result: Any) -> tuple[str, list[dict[str, Any]]]:
    """The data as JSON text (its order too) and the errors as a client gets them, the
    request id of a masked error left out (it is new each time)."""
    errors = []
    for error in result.errors or ():
        formatted = dict(error.formatted)
        if "requestId" in (formatted.get("extensions") or {}):
            formatted["extensions"] = {**formatted["extensions"], "requestId": "-"}
        errors.append(formatted)
    return json.dumps(result.data), errors


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
        CALLS["must"] += 1
        return None  # type: ignore[return-value]

    @strawberry.field
    def raises(self) -> str | None:
        CALLS["raises"] += 1
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
        CALLS["failing"] += 1
        raise RuntimeError("nothing here")


SHELF = """label shout(times: 2) s: shout(suffix: $suffix)
    books { name pages weight ratings __typename }
    owner { name age friends(first: 1) { name } } nested neighbour { label neighbour { label } }
    things { __typename name ... on Book { pages } ... on Person { age } } __typename
    where w: where(upper: true, atMost: 2.5) parentLabel(size: LARGE)
    guarded g: guarded(note: $suffix) cover { title colours } back { colours t: title }"""


OURS = Schema(ToyQuery, types=[Book, Person])
STRAWBERRYS = strawberry.Schema(query=ToyQuery, types=[Book, Person], extensions=[Coded])
TOY_VALUES = {
    "case": [*sorted(BROKEN), "unknown"],
    "labels": [["a"], ["a", "last"], []],
    "note": ["-", "secret"],
}


async def _toy(request: Request) -> tuple[Any, Any]:
    """(ours, strawberry's) for the request, each resolver's calls counted for ours."""
    CALLS.clear()
    context = SimpleNamespace(settings=WIDE)
    before = asyncio.all_tasks()
    ours = await OURS.execute(
        request.query, request.variables, context, operation_name=request.operation_name
    )
    calls = dict(CALLS)
    reference = await STRAWBERRYS.execute(
        request.query, request.variables, context, operation_name=request.operation_name
    )
    await settled(before)
    return (answer(ours), calls), answer(reference)


async def settled(before: set[asyncio.Task[Any]]) -> None:
    """Resolvers a failed sibling left running (both executors let them settle) run to their
    end now, not when the test's loop closes: that would cancel them unstarted, and the
    resolvers' coroutines they hold would be reported as never awaited."""
    await asyncio.gather(*(asyncio.all_tasks() - before), return_exceptions=True)


def _request(query: str, variables: Any = None) -> Request:
    return Request(query, variables or {}, None)


@pytest.mark.parametrize("case", sorted(BROKEN))
async def test_the_same_answers_and_errors_on_the_toy_schema(case, watched) -> None:
    query = f"query ($suffix: String!) {{ shelf(case: {json.dumps(case)}) {{ {SHELF} }} }}"
    (ours, _calls), reference = await _toy(_request(query, {"suffix": "?"}))
    assert ours == reference
    assert (ours[1] == []) == (case in FINE)
    if case in FINE:  # answered by the quick completions alone
        assert watched.refits == []


@pytest.mark.parametrize(
    ("selection", "resolver"),
    [
        ("failing { label }", "failing"),
        ("shelf { must }", "must"),
        ("shelf { raises label }", "raises"),
        ("shelves { raises }", "raises"),
    ],
)
async def test_a_resolvers_error_is_reported_once_and_nothing_runs_twice(
    selection, resolver
) -> None:
    (ours, calls), reference = await _toy(_request(f"{{ {selection} }}"))
    assert ours == reference and ours[1]
    assert calls == {resolver: 2 if selection.startswith("shelves") else 1}


def test_resolvers_are_called_straight_where_strawberrys_wrapper_would_change_nothing() -> None:
    """Built-in scalar arguments, `self`, `info` and `root` go straight to the resolver; an enum
    or a list argument, or a permission (a field extension), go through strawberry's wrapper."""
    core = internals.core_schema(OURS)
    fields = {**core.query_type.fields, **core.get_type("Shelf").fields}  # type: ignore[union-attr]
    straight = {name for name, f in fields.items() if internals.straight_resolver(f, core)}
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
        internals.straight_resolver(parent.fields[name], model_page)  # type: ignore[union-attr]
        for parent, name in [
            (root, "model"),
            (root, "source"),
            (model, "configurations"),
            (model, "curves"),
            (model, "power"),
        ]
    )


async def test_directives_fragments_and_introspection_are_planned(watched) -> None:
    for query in (
        "{ shelves { label @include(if: true) } __schema { queryType { name } } }",
        '{ __type(name: "Shelf") { name fields { name type { kind ofType { name } } } } }',
        "{ shelves { label @skip(if: false) ...B } } fragment B on Shelf { books { name } }",
    ):
        watched.clear()
        ours, reference = await _toy(_request(query))
        assert ours[0] == reference and reference[1] == []
        assert (watched.runs, watched.refits) == (1, [])


# Examples per run: a few in the quick loop, many more in scripts/test's slow step.
QUICK, AT_LENGTH = 40, 500
EXAMPLES = {"deadline": None, "suppress_health_check": list(HealthCheck)}
TOY_REQUESTS = requests(internals.core_schema(OURS), TOY_VALUES, depth=3)


# Introspection-only requests already answered, per schema: their answer is kept with their
# document (in that schema's documents).
ASKED: dict[str, set[tuple[str, str, str | None]]] = {"toy": set(), "leadgreen": set()}


def _runs(request: Request, schema: str) -> int:
    """The plan runs a request without errors takes: none for an introspection-only operation
    asked before (graph/engine/execution.py keeps its answer), else one."""
    from graphql import OperationDefinitionNode, parse

    from graph.engine.execution import _introspection
    from graph.engine.prepared import significant

    operations = [
        d for d in parse(request.query).definitions if isinstance(d, OperationDefinitionNode)
    ]
    chosen = next(
        o
        for o in operations
        if request.operation_name is None or (o.name and o.name.value == request.operation_name)
    )
    if not _introspection(chosen):
        return 1
    key = (significant(request.query), repr(request.variables), request.operation_name)
    if key in ASKED[schema]:
        return 0
    ASKED[schema].add(key)
    return 1


def _the_same_on_the_toy_schema(request: Request, watched: Watched) -> None:
    watched.clear()
    (ours, _calls), reference = asyncio.run(_toy(request))
    assert ours == reference, request
    if not ours[1]:
        assert (watched.runs, watched.refits) == (_runs(request, "toy"), []), request


@settings(max_examples=QUICK, **EXAMPLES)
@given(request=TOY_REQUESTS)
def test_the_same_answers_for_any_request_on_the_toy_schema(request, watched) -> None:
    _the_same_on_the_toy_schema(request, watched)


@pytest.mark.slow
@settings(max_examples=AT_LENGTH, **EXAMPLES)
@given(request=TOY_REQUESTS)
def test_the_same_answers_for_many_requests_on_the_toy_schema(request, watched) -> None:
    _the_same_on_the_toy_schema(request, watched)


# strawberry's own pipeline over LeadGreen's types, with LeadGreen's codes and masking: the
# same federation schema (its `_entities`, its SDL's directives), executed by graphql-core.
REFERENCE = Federated(
    query=Query,
    subscription=Subscription,
    types=[ImageConfiguration, VideoConfiguration],
    extensions=[Coded],
    federation_version=FEDERATION_VERSION,
)
REFERENCE.add_demand_control(LIST_SIZES, Settings.model_construct().default_page_size)
REFERENCE.describe_federation()
# Required arguments and others, given values the synthetic data has (and some it has not).
VALUES = {
    "slug": ["tiny-1b", "mixture-8x2b", "no-such-model"],
    "model": ["tiny-1b", "acme/Tiny-1B", "nope"],
    "models": [["tiny-1b"], ["tiny-1b", "mixture-8x2b"], ["nope"]],
    "gpu": ["H100", "B200", "A100"],
    "gpus": [["H100"], ["B200", "H100"]],
    "task": ["lm-arena-chat", "lm-arena-chat", "text-to-image", "chat"],
    "release": [1, 1, 1, 1, 1, 2],
    "from": [1],
    "to": [1],
    "first": [0, 1, 2, 50],
    "batchSize": [8, 24.5, 1000],
    "batchSizes": [[8, 24.5, 1000]],
    "name": ["Model", "Gpu", "Query", "Nope"],
    # `_entities`: representations of each entity by each key, of no such object, and not
    # representations at all (each its own error).
    "representations": [
        [{"__typename": "Gpu", "name": "H100"}, {"__typename": "Task", "id": "Task:gpqa"}],
        [{"__typename": "Model", "id": "Model:acme/Tiny-1B"}, {"__typename": "Gpu", "id": "x"}],
        [{"__typename": "Task", "name": "lm-arena-chat"}, {"__typename": "Release", "id": "x"}],
        [{"__typename": "Configuration", "id": "Configuration:x"}, {"__typename": "Nope"}],
        [{"__typename": "Gpu", "name": "B200", "id": "Gpu:B200"}, 5, {"name": "H100"}],
        [],
    ],
}


async def _on_both(engine: Any, settings: Settings, request: Request) -> tuple[Any, Any, Any]:
    """(ours, its extensions, strawberry's) for the request over the synthetic data, each
    from a catalog of its own: both read the same rows in the same order, so that where two
    sibling resolvers fail, the same one fails first."""
    results = []
    before = asyncio.all_tasks()
    for schema in (SCHEMA, REFERENCE):
        context = Context(None, settings, catalogs=Catalogs(), sessions=sessionmaker(engine))
        try:
            results.append(
                await schema.execute(
                    request.query,
                    request.variables,
                    context,
                    operation_name=request.operation_name,
                )
            )
        finally:  # then closed as the server closes it (an error may have cancelled SQL)
            await settled(before)
            if context.session is not None:
                await close_quietly(context.session)
    ours, reference = results
    return answer(ours), ours, answer(reference)


LEADGREEN_REQUESTS = requests(internals.core_schema(SCHEMA), VALUES, depth=3)


@settings(max_examples=QUICK, **EXAMPLES)
@given(request=LEADGREEN_REQUESTS)
def test_the_same_answers_as_strawberry_for_any_request(request, synthetic_data, watched) -> None:
    """Requests over LeadGreen's whole schema (three levels deep) on the synthetic data; the
    cost each answer reports is the one its plan counted, as walking the answer finds it."""
    _the_same_on_leadgreens_schema(request, synthetic_data, watched)


@pytest.mark.slow
@settings(max_examples=AT_LENGTH, **EXAMPLES)
@given(request=LEADGREEN_REQUESTS)
def test_the_same_answers_as_strawberry_for_many_requests(request, synthetic_data, watched):
    _the_same_on_leadgreens_schema(request, synthetic_data, watched)


def _the_same_on_leadgreens_schema(request: Request, synthetic_data: Any, watched: Watched) -> None:
    runner, engine, settings = synthetic_data
    watched.clear()
    ours, result, reference = runner.run(
        _on_both(engine, settings.model_copy(update=WIDE_LIMITS), request)
    )
    assert ours == reference, request
    if ours[1]:
        return
    assert (watched.runs, watched.refits) == (_runs(request, "leadgreen"), []), request
    prepared = SCHEMA.engine.documents.get(request.query, WIDE.max_tokens)
    cost = result.extensions["cost"]
    assert cost["actualQueryCost"] == actual_cost(prepared, request.operation_name, result.data)


async def test_the_model_page_is_planned_and_counts_its_cost(
    synthetic_db, settings, watched
) -> None:
    catalogs = Catalogs()
    async with sessionmaker(synthetic_db)() as session:
        context = Context(session=session, settings=settings, catalogs=catalogs)
        result = await SCHEMA.execute(MODEL_PAGE, {"slug": "tiny-1b"}, context_value=context)
    assert result.errors is None and watched.refits == []
    assert result.extensions is not None
    cost = result.extensions["cost"]
    assert 100 < cost["actualQueryCost"] <= cost["requestedQueryCost"]
    # The same as walking the answer afterwards.
    prepared = SCHEMA.engine.documents.get(MODEL_PAGE, settings.max_tokens)
    assert actual_cost(prepared, None, result.data) == cost["actualQueryCost"]
