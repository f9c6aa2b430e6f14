"""LeadGreen as a Federation 2 subgraph: `_entities` and `_service` through the engine, the
demand-control directives of its SDL against the server's own cost, and (mark `federation`)
a real Apollo Gateway composing it with a second subgraph (federation/prices.mjs: a price for
each GPU type, by its `name` key) and answering a query that needs both."""

from __future__ import annotations

import contextlib
import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from graphql import (
    DocumentNode,
    FieldNode,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    SelectionSetNode,
    build_ast_schema,
    get_named_type,
    is_composite_type,
    is_object_type,
    parse,
    value_from_ast_untyped,
)

from graph.engine.cost import DEFAULT_LIST_SIZE
from graph.schema.costs import LIST_SIZES, list_size_of, sized_by_first
from graph.schema.federation import LINKED_DEFINITIONS
from tests.conftest import ROOT, SCHEMA
from tests.live import serving, stop
from tests.test_cost import requested_cost

pytestmark = pytest.mark.anyio
FEDERATION = ROOT / "federation"

ENTITIES = """query Entities($r: [_Any!]!) { _entities(representations: $r) { __typename
  ... on Gpu { name memoryGb } ... on Task { id displayName } ... on Model { slug }
  ... on Configuration { gpuModel numGpus } ... on Release { number } } }"""


def _error(index: int, message: str) -> dict[str, Any]:
    return {
        "message": message,
        "locations": [{"line": 1, "column": 32}],
        "path": ["_entities", index],
        "extensions": {"code": "BAD_REPRESENTATION"},
    }


async def test_each_representation_resolves_or_fails_alone(synthetic_db, client) -> None:
    representations: list[Any] = [
        {"__typename": "Gpu", "name": "H100"},
        {"__typename": "Gpu", "id": "Gpu:B200"},
        {"__typename": "Task", "name": "lm-arena-chat"},
        {"__typename": "Model", "id": "Model:acme/Tiny-1B"},
        {"__typename": "Release", "id": "Release:nope"},
        {"__typename": "Gpu", "name": "A100"},  # no such GPU: null, as node(id:) answers
        {"__typename": "Model", "id": "Gpu:H100"},  # an id of another type: null
        {"__typename": "Nope", "id": "x"},
        {"__typename": "Gpu", "foo": "H100"},
        {"__typename": "Gpu", "id": "Gpu:H100", "name": "H100"},
        {"__typename": "Task", "name": 7},
        {"id": "Gpu:H100"},
        5,
    ]
    response = await client.post(
        "/graphql", json={"query": ENTITIES, "variables": {"r": representations}}
    )
    body = response.json()
    assert response.status_code == 200
    assert body["data"] == {
        "_entities": [
            {"__typename": "Gpu", "name": "H100", "memoryGb": 80.0},
            {"__typename": "Gpu", "name": "B200", "memoryGb": 180.0},
            {"__typename": "Task", "id": "Task:lm-arena-chat", "displayName": "LLM Chat"},
            {"__typename": "Model", "slug": "tiny-1b"},
            *[None] * 9,
        ]
    }
    assert body["errors"] == [
        _error(
            7,
            "`representations[7]`: `Nope` is not an entity of this subgraph; its entities are "
            "`Configuration`, `Gpu`, `Model`, `Release`, `Task`",
        ),
        _error(
            8,
            "`representations[8]`: a `Gpu` is found by exactly one of its keys (`id`, `name`), "
            "not by `foo`",
        ),
        _error(
            9,
            "`representations[9]`: a `Gpu` is found by exactly one of its keys (`id`, `name`), "
            "not by `id`, `name`",
        ),
        _error(10, "`representations[10]`: `Task.name` is a string, not 7"),
        _error(11, "`representations[11]` has no `__typename` string"),
        _error(
            12,
            "`representations[12]` is not an object: a representation is {__typename, <key>}",
        ),
    ]


async def test_a_configuration_entity(synthetic_db, client) -> None:
    found = await client.post(
        "/graphql", json={"query": "{ configurations(first: 1) { nodes { id } } }"}
    )
    id = found.json()["data"]["configurations"]["nodes"][0]["id"]
    response = await client.post(
        "/graphql",
        json={"query": ENTITIES, "variables": {"r": [{"__typename": "Configuration", "id": id}]}},
    )
    assert response.json()["data"] == {
        "_entities": [{"__typename": "Configuration", "gpuModel": "H100", "numGpus": 1}]
    }


def test_entities_cost_one_element_per_representation() -> None:
    query = (
        "query($r: [_Any!]!) { _entities(representations: $r) { ... on Gpu { name tdpWatts } } }"
    )
    for count in (0, 1, 7, 300):
        representations = [{"__typename": "Gpu", "name": "H100"}] * count
        assert requested_cost(query, {"r": representations}) == 1 + count * 2


async def test_entities_past_the_cost_limit_are_refused(synthetic_db, settings) -> None:
    from tests.test_cost import run

    tight = settings.model_copy(update={"max_cost": 500})
    query = "query($r: [_Any!]!) { _entities(representations: $r) { ... on Gpu { name } } }"
    answer = await run(
        synthetic_db, tight, query, {"r": [{"__typename": "Gpu", "name": "H100"}] * 600}
    )
    assert answer["errors"] == [
        {
            "message": "The query costs 601, more than the limit of 500.",
            "extensions": {"code": "QUERY_TOO_COMPLEX", "cost": 601, "maxCost": 500},
        }
    ]


async def test_the_service_sdl_is_the_schema_file(synthetic_db, client) -> None:
    response = await client.post("/graphql", json={"query": "{ _service { sdl } }"})
    sdl = response.json()["data"]["_service"]["sdl"]
    # schema.graphql adds the definitions of the directives linked, for tools that read it.
    assert f"{sdl}\n\n{LINKED_DEFINITIONS}\n" == (ROOT / "schema.graphql").read_text()
    assert "directive @" not in sdl
    assert sdl.startswith(
        'schema @link(url: "https://specs.apollo.dev/federation/v2.9", '
        'import: ["@cost", "@key", "@listSize"]) {'
    )
    for entity, keys in [
        ("Configuration", ["id"]),
        ("Gpu", ["id", "name"]),
        ("Model", ["id"]),
        ("Release", ["id"]),
        ("Task", ["id", "name"]),
    ]:
        written = "".join(f' @key(fields: "{key}", resolvable: true)' for key in keys)
        (line,) = [line for line in sdl.splitlines() if line.startswith(f"type {entity} ")]
        assert line.endswith(f"Node{written} {{"), line


# --- demand control: the SDL's figures against the server's ---------------------------------


def _sdl_schema() -> GraphQLSchema:
    """The schema as a gateway reads the SDL (its directives on each field's AST)."""
    return build_ast_schema(parse(SCHEMA.as_str()), assume_valid_sdl=True)


def _directives(field: Any) -> dict[str, dict[str, Any]]:
    node = field.ast_node
    return {
        d.name.value: {a.name.value: value_from_ast_untyped(a.value) for a in d.arguments}
        for d in ((node.directives or ()) if node else ())
    }


def test_every_list_the_server_sizes_has_that_size_in_the_sdl() -> None:
    schema = _sdl_schema()
    for coordinate, size in LIST_SIZES.items():
        type_name, name = coordinate.split(".")
        parent = schema.get_type(type_name)
        if not is_object_type(parent):  # an interface's: the SDL's are on its types' fields
            continue
        field = parent.fields[name]  # type: ignore[union-attr]
        directives = _directives(field)
        if sized_by_first(size):  # the field above slices it by its `first`
            assert "listSize" not in directives, coordinate
            above = [
                (t.name, f, _directives(d)["listSize"])
                for t in schema.type_map.values()
                if is_object_type(t)
                for f, d in t.fields.items()
                if get_named_type(d.type).name == type_name
            ]
            assert above == [
                (
                    "Query",
                    "deploymentPlan",
                    {
                        "assumedSize": size({}, {}),
                        "slicingArguments": ["first"],
                        "sizedFields": [name],
                        "requireOneSlicingArgument": False,
                    },
                )
            ]
        else:
            # A list of leaves costs 1 whatever its length, as the server charges it.
            leaves = not is_composite_type(get_named_type(field.type))
            assumed = 1 if leaves else list_size_of(size)
            assert directives["listSize"] == {"assumedSize": assumed}, coordinate
    assert list_size_of(LIST_SIZES["Query.nodes"]) == DEFAULT_LIST_SIZE


def test_every_leaf_field_costs_one_and_every_list_is_sized() -> None:
    schema = _sdl_schema()
    for type_ in schema.type_map.values():
        if not is_object_type(type_) or type_.name.startswith("__"):
            continue
        for name, field in type_.fields.items():
            directives = _directives(field)
            composite = is_composite_type(get_named_type(field.type))
            assert ("cost" in directives) is not composite, (type_.name, name)
            if not composite:
                assert directives["cost"] == {"weight": 1}
            if "[" in str(field.type) and name not in ("nodes", "edges"):
                assert "listSize" in directives or (
                    sized_by_first(LIST_SIZES[f"{type_.name}.{name}"])
                ), (type_.name, name)


def ibm_cost(
    schema: GraphQLSchema,
    document: DocumentNode,
) -> int:
    """A gateway's estimate of a query (IBM's cost specification, as Apollo's router reads it):
    a field's weight (`@cost`, else 1 for an object and 0 for a leaf) plus its selection's,
    times its list size (`@listSize`: the slicing argument, else assumedSize; a size the field
    above gives by `sizedFields`)."""

    def selection(node: SelectionSetNode, type_: Any, sized: dict[str, int]) -> int:
        total = 0
        for item in node.selections:
            if isinstance(item, InlineFragmentNode):
                inner = (
                    schema.get_type(item.type_condition.name.value)
                    if item.type_condition
                    else type_
                )
                total += selection(item.selection_set, inner, {})
                continue
            assert isinstance(item, FieldNode)
            if item.name.value == "__typename":
                continue
            field = type_.fields[item.name.value]
            directives = _directives(field)
            named = get_named_type(field.type)
            weight = directives.get("cost", {}).get("weight", int(is_composite_type(named)))
            arguments = {
                a.name.value: int(a.value.value)
                for a in item.arguments or ()
                if isinstance(a.value, IntValueNode)
            }
            size, below = 1, {}
            listing = directives.get("listSize", {})
            if item.name.value in sized:
                size = sized[item.name.value]
            elif listing:
                sliced = [
                    arguments[a] for a in listing.get("slicingArguments") or () if a in arguments
                ]
                count = sliced[0] if sliced else listing["assumedSize"]
                if listing.get("sizedFields"):
                    below = {name: count for name in listing["sizedFields"]}
                else:
                    size = count
            inner = selection(item.selection_set, named, below) if item.selection_set else 0
            total += size * (weight + inner)
        return total

    operation = document.definitions[0]
    return selection(operation.selection_set, schema.query_type, {})  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("query", "server", "gateway"),
    [
        # Without lists of objects, the same figure: every field 1.
        ('{ model(slug: "tiny-1b") { slug name } }', 1 + 2, 1 + 2),
        ('{ model(slug: "tiny-1b") { slug gpuHours: paramsB } source { licence } }', 5, 5),
        # A list of n objects: the server charges the field once and its selection n times;
        # a gateway charges each element as an object too, n - 1 more (docs/federation.md).
        ("{ gpus { name memoryGb } }", 1 + 4 * 2, 4 * (1 + 2)),
        (
            "{ releases { number identityChecks { rows } } }",
            1 + 16 * (1 + (1 + 8 * 1)),
            16 * (1 + 1 + 8 * (1 + 1)),
        ),
        # A page: `first` slices the connection's nodes; 50 (the default page) without it.
        (
            "{ configurations(first: 5) { totalCount nodes { id } } }",
            1 + 1 + (1 + 5),
            1 + 1 + 5 * 2,
        ),
        ("{ configurations { nodes { id } } }", 1 + (1 + 50), 1 + 50 * 2),
        # `task: null` asks for every task: the SDL assumes that, the server charges one task.
        ('{ model(slug: "x") { configurations { id } } }', 1 + (1 + 32), 1 + 64 * (1 + 1)),
    ],
)
def test_a_gateway_estimate_is_made_of_the_servers_figures(
    query: str, server: int, gateway: int
) -> None:
    assert requested_cost(query, None) == server
    assert ibm_cost(_sdl_schema(), parse(query)) == gateway


# --- a real gateway (mark federation) ---------------------------------------------------------


def _npm_ci() -> None:
    """The federation dir's packages, from its lock file, when they are missing or older."""
    installed = FEDERATION / "node_modules" / ".package-lock.json"
    lock = FEDERATION / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=FEDERATION,
            check=True,
            timeout=300,
        )


@contextlib.contextmanager
def _node(arguments: list[str], log: Path, timeout: float = 120) -> Iterator[str]:
    """A node program of federation/ running; the URL its "ready <url>" line gives. Stopped,
    by its own process id, when the block ends."""
    with log.open("w") as errors:
        process = subprocess.Popen(
            ["node", *arguments], cwd=FEDERATION, stdout=subprocess.PIPE, stderr=errors, text=True
        )
    lines: queue.Queue[str] = queue.Queue()
    stdout = process.stdout
    assert stdout is not None

    def read() -> None:
        for line in stdout:
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + timeout
        url = None
        while url is None and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
                url = line.split()[1] if line.startswith("ready ") else None
            if process.poll() is not None and lines.empty():
                break
        if url is None:
            raise AssertionError(f"node {arguments[0]} did not start: {log.read_text()[-3000:]}")
        yield url
    finally:
        stop(process)  # type: ignore[arg-type]
        reader.join(5)
        stdout.close()


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[str]:
    """LeadGreen (synthetic data), the prices subgraph and the gateway composing them, each on
    a free port of 127.0.0.1; the gateway's URL. Every process stopped after the test."""
    _npm_ci()
    with (
        serving(tmp_path) as port,
        _node(["prices.mjs"], tmp_path / "prices.log") as prices,
        _node(
            ["gateway.mjs", f"leadgreen=http://127.0.0.1:{port}/graphql", f"prices={prices}"],
            tmp_path / "gateway.log",
        ) as url,
    ):
        yield url


@pytest.mark.federation
def test_a_gateway_answers_from_both_subgraphs(gateway: str) -> None:
    query = """{ leaderboard(task: "lm-arena-chat") { entries { model { slug }
      configuration { numGpus gpu { name memoryGb priceUsdPerHour } } } } }"""
    response = httpx.post(gateway, json={"query": query}, timeout=30)
    assert response.status_code == 200
    assert response.json() == {
        "data": {
            "leaderboard": {
                "entries": [
                    {
                        "model": {"slug": "tiny-1b"},
                        "configuration": {
                            "numGpus": 1,
                            "gpu": {"name": "H100", "memoryGb": 80, "priceUsdPerHour": 2.5},
                        },
                    },
                    {
                        "model": {"slug": "mixture-8x2b"},
                        "configuration": {
                            "numGpus": 2,
                            "gpu": {"name": "H100", "memoryGb": 80, "priceUsdPerHour": 2.5},
                        },
                    },
                ]
            }
        }
    }
    both = httpx.post(gateway, json={"query": "{ gpus { name priceUsdPerHour } }"}, timeout=30)
    assert both.json() == {
        "data": {
            "gpus": [
                {"name": "B200", "priceUsdPerHour": 6.25},
                {"name": "H100", "priceUsdPerHour": 2.5},
            ]
        }
    }
