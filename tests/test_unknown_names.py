"""An unknown GPU, task or model in any argument gets one answer, whatever field it is given to.

The cases are generated from the schema itself: every argument and input field that names a GPU
type, a task or a model (by slug or Hugging Face id), on the root fields and on nested ones, is
sent a name the release does not have, and must answer BAD_USER_INPUT with the message naming
the value, the argument and the field that lists the valid ones. A new argument is classified
below or the test fails; a classified one that skips the check fails its case.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from graphql import (
    GraphQLArgument,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    get_named_type,
    get_nullable_type,
)
from graphql.pyutils import Undefined
from sqlalchemy.ext.asyncio import async_sessionmaker

from db.database import create_engine
from graph.schema.context import Context
from graph.schema.memory import Catalogs
from graph.settings import Settings
from tests.conftest import SCHEMA, app_client
from tests.reports import cost
from tests.test_ranking_api import ranking_url

pytestmark = pytest.mark.anyio
__all__ = ["ranking_url"]  # a fixture, used by name: the synthetic snapshot and text-to-image


@dataclass(frozen=True)
class Name:
    """A kind of name: what the message calls it, the field listing them, a name the data has."""

    called: str
    listed_by: str
    known: str

    @property
    def unknown(self) -> str:
        return f"no-such-{self.called.replace(' ', '-')}"


GPU = Name("GPU", "gpus", "H100")
TASK = Name("task", "tasks", "lm-arena-chat")
SLUG = Name("model slug", "models", "tiny-1b")
MODEL_ID = Name("model id", "models", "acme/Tiny-1B")
ZONE = Name("grid zone", "gridZones", "FRA")

# Every String or ID argument and input field of the schema, by its name: what it names ...
NAMES = {
    "gpu": GPU,
    "gpus": GPU,
    "baseline": GPU,
    "candidate": GPU,
    "task": TASK,
    "model": SLUG,
    "models": SLUG,
    "slug": SLUG,
    "modelId": MODEL_ID,
    "zone": ZONE,
}
# ... or that it names none of them.
OTHERS = {"after", "id", "ids", "configurationId", "configuration"}
# Arguments whose name says otherwise: `baseline` of the planner is a configuration id.
NOT_NAMES = {"Query.deploymentPlan(baseline)"}
# Known values for required input objects (the name tested sits beside them).
INPUTS = {"DemandInput": "{requestsPerSecond: 1}"}
# Nullable lookups of one object by its name or id: an unknown one is null, GraphQL's (and
# Relay's, for `node`) convention, and tested below; every other field answers the error.
LOOKUPS = {"Query.model", "Query.node", "Query.nodes"}
# How a query reaches one object of each type holding such arguments.
REACH = {"Query": "{{ {} }}", "Model": '{{ model(slug: "tiny-1b") {{ {} }} }}'}


@dataclass(frozen=True)
class Case:
    type: str
    field: str
    argument: str  # as the message names it: `gpus`, `filter.gpu`
    name: Name
    query: str
    data: Any  # what null propagation leaves of the answer

    @property
    def path(self) -> list[str]:
        return [self.field] if self.type == "Query" else ["model", self.field]


def _named(arg: GraphQLArgument | GraphQLInputField) -> tuple[str, bool]:
    """The scalar or input type's name of an argument, and whether it is a list."""
    inner = get_nullable_type(arg.type)  # type: ignore[arg-type]
    return get_named_type(inner).name, isinstance(inner, GraphQLList)


Fields = dict[str, GraphQLArgument] | dict[str, GraphQLInputField]


def _names_in(
    prefix: str, fields: Fields, beside: tuple[tuple[str, ...], ...] = ()
) -> Iterator[tuple[str, Name, bool, tuple[tuple[str, ...], ...]]]:
    """(argument path, kind of name, whether a list, and the required fields beside each input
    object on the path) of every name argument, input fields too."""
    for arg_name, arg in fields.items():
        named = get_named_type(arg.type)  # type: ignore[arg-type]
        if isinstance(named, GraphQLInputObjectType):
            others = tuple(_required(named.fields, ""))
            yield from _names_in(f"{prefix}{arg_name}.", named.fields, (*beside, others))
        elif isinstance(named, GraphQLScalarType) and named.name in ("String", "ID"):
            assert arg_name in NAMES or arg_name in OTHERS, (
                f"classify the argument {prefix}{arg_name} in NAMES or OTHERS"
            )
            if arg_name in NAMES:
                yield f"{prefix}{arg_name}", NAMES[arg_name], _named(arg)[1], beside


def _literal(path: str, value: object, beside: tuple[tuple[str, ...], ...] = ()) -> str:
    """The arguments `a.b: value` as GraphQL: `a: {b: value}`, with the required fields of
    each input object on the way (`beside`, outermost first) given known values."""
    text = json.dumps(value)
    parts = path.split(".")
    for part, others in reversed(list(zip(parts[1:], beside, strict=True))):
        others = tuple(o for o in others if not o.startswith(f"{part}:"))
        text = f"{{{', '.join((f'{part}: {text}', *others))}}}"
    return f"{parts[0]}: {text}"


def _required(field_args: Fields, tested: str) -> list[str]:
    """Known values for the field's (or input object's) other arguments with no default."""
    given = []
    for arg_name, arg in field_args.items():
        if arg_name == tested or not isinstance(arg.type, GraphQLNonNull):
            continue
        if arg.default_value is not Undefined:
            continue
        named, is_list = _named(arg)
        if arg_name in NAMES:
            known = NAMES[arg_name].known
            given.append(_literal(arg_name, [known] if is_list else known))
        elif named in ("Int", "Float"):
            given.append(_literal(arg_name, 1))
        elif named in INPUTS:
            given.append(f"{arg_name}: {INPUTS[named]}")
    return given


def _cases() -> list[Case]:
    cases = []
    for type_name, gql_type in sorted(SCHEMA._schema.type_map.items()):
        if type_name.startswith("__") or not isinstance(gql_type, GraphQLObjectType):
            continue
        for field_name, field in gql_type.fields.items():
            named = [
                n
                for n in _names_in("", field.args)
                if f"{type_name}.{field_name}({n[0]})" not in NOT_NAMES
            ]
            if not named or f"{type_name}.{field_name}" in LOOKUPS:
                continue
            assert type_name in REACH, f"add to REACH how a query reaches a {type_name}"
            selection = (
                ""
                if isinstance(get_named_type(field.type), GraphQLScalarType)
                else (" { __typename }")
            )
            for path, name, is_list, beside in named:
                value = [name.known, name.unknown] if is_list else name.unknown
                args = [_literal(path, value, beside)]
                args += _required(field.args, path.split(".")[0])
                query = REACH[type_name].format(f"{field_name}({', '.join(args)}){selection}")
                nulled = None if isinstance(field.type, GraphQLNonNull) else {field_name: None}
                data = nulled if type_name == "Query" else {"model": nulled}
                cases.append(Case(type_name, field_name, path, name, query, data))
    return cases


CASES = _cases()


@pytest.fixture
async def execute(ranking_url: str) -> AsyncIterator[Any]:
    engine = create_engine(ranking_url)
    settings = Settings(database_url=ranking_url, manifest=None)
    catalogs = Catalogs()

    async def run(query: str) -> dict[str, Any]:
        async with async_sessionmaker(engine)() as session:
            context = Context(session=session, settings=settings, catalogs=catalogs)
            result = await SCHEMA.execute(query, context_value=context)
        errors = [
            {"message": e.message, "path": e.path, "extensions": e.extensions}
            for e in result.errors or ()
        ]
        return {"data": result.data, "errors": errors}

    yield run
    await engine.dispose()


def test_the_cases_cover_every_field_the_brief_names() -> None:
    """The walk finds the arguments it must (so that a broken walk cannot pass empty)."""
    found = {f"{c.type}.{c.field}({c.argument})" for c in CASES}
    assert {
        "Query.configurations(filter.gpu)",
        "Query.configurations(filter.task)",
        "Query.configurations(filter.model)",
        "Query.configurations(filter.modelId)",
        "Query.diffusionConfigurations(filter.gpu)",
        "Query.configurationAggregate(filter.gpu)",
        "Query.leaderboard(gpus)",
        "Query.diffusionParetoFrontier(models)",
        "Query.compareGpus(baseline)",
        "Query.fittedCurves(model)",
        "Query.facets(task)",
        "Query.changes(task)",
        "Model.configurations(task)",
        "Model.configurations(gpu)",
        "Model.power(task)",
        "Model.diffusionConfigurations(gpu)",
        "Query.deploymentPlan(gpus)",
        "Query.deploymentPlan(site.gpuHourPrices.gpu)",
        "Query.deploymentPlan(site.zone)",
        "Query.requestImpact(model)",
        "Query.requestImpact(task)",
        "Query.requestImpact(site.zone)",
    } <= found
    assert len(found) == len(CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.query) for c in CASES])
async def test_an_unknown_name_is_the_one_error(execute, case: Case) -> None:
    name = case.name
    message = f"unknown {name.called} {name.unknown!r} in `{case.argument}`; "
    assert await execute(case.query) == {
        "data": case.data,
        "errors": [
            {
                "message": message + f"`{name.listed_by}` lists them",
                "path": case.path,
                "extensions": {"code": "BAD_USER_INPUT"},
            }
        ],
    }


@pytest.mark.parametrize(
    "query",
    [
        '{ model(slug: "no-such-model") { slug } }',
        '{ model(modelId: "acme/No-Such") { slug } }',
        '{ model: node(id: "Model:acme/No-Such") { id } }',
        '{ model: node(id: "Gpu:A100") { id } }',
        '{ model: node(id: "Task:chat") { id } }',
    ],
)
async def test_a_lookup_of_one_unknown_object_is_null(execute, query: str) -> None:
    assert await execute(query) == {"data": {"model": None}, "errors": []}


@pytest.mark.parametrize(
    ("query", "data", "message", "costs"),
    [
        (
            'configurations(filter: {gpu: "A100"}) { totalCount }',
            None,
            "unknown GPU 'A100' in `filter.gpu`; `gpus` lists them",
            (2, 0),
        ),
        (
            'configurations(filter: {task: "chat"}) { totalCount }',
            None,
            "unknown task 'chat' in `filter.task`; `tasks` lists them",
            (2, 0),
        ),
        (
            'model(slug: "tiny-1b") { configurations(task: "chat") { id } }',
            {"model": None},
            "unknown task 'chat' in `task`; `tasks` lists them",
            # model, configurations and 32 ids estimated; the answer holds `model: null`
            (34, 1),
        ),
    ],
)
async def test_the_newcomers_first_queries_over_http(
    ranking_url: str, query: str, data: Any, message: str, costs: tuple[int, int]
) -> None:
    """The three silent answers of issue 18, through the app (and its fast path)."""
    settings = Settings(database_url=ranking_url, manifest=None)
    async with app_client(settings) as (_, client):
        response = await client.post("/graphql", json={"query": f"query First {{ {query} }}"})
        field = query.split("(")[0]
        path = [field] if data is None else [field, "configurations"]
        assert (response.status_code, response.json()) == (
            200,
            {
                "data": data,
                "errors": [
                    {
                        "message": message,
                        "locations": [{"line": 1, "column": 15 if data is None else 40}],
                        "path": path,
                        "extensions": {"code": "BAD_USER_INPUT"},
                    }
                ],
                "extensions": cost(*costs),
            },
        )
