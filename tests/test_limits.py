"""Query limits: each refused with its own code before execution, through the schema and HTTP."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from graphql import get_introspection_query
from strawberry.http import process_result

from graph.settings import Settings
from tests.conftest import SCHEMA as schema
from tests.reports import UNCOSTED

pytestmark = pytest.mark.anyio

ALIASES = "{ " + " ".join(f"g{i}: gpus {{ name }}" for i in range(100)) + " }"
REPEATED = "{ gpus" + " @include(if: true)" * 100 + " { name } }"
DEEP = (
    "{ configurations { nodes { " + "model { configurations { " * 10 + "id" + " } }" * 10 + " } } }"
)
HUGE = "{ gpus { name } }" + " " * 70_000
TOKENS = "{ " + "__typename " * 5_001 + "}"
# What GraphiQL sends, with every option on and graphql-core's deepest type references.
INTROSPECTION = get_introspection_query(
    descriptions=True,
    specified_by_url=True,
    directive_is_repeatable=True,
    schema_description=True,
    input_value_deprecation=True,
    one_of=True,
)


def refused(message: str, code: str, **extensions: Any) -> dict[str, Any]:
    return {
        "data": None,
        "errors": [{"message": message, "extensions": {"code": code}}],
        "extensions": UNCOSTED,
    }


async def answer(query: str, settings: Settings | None = None) -> dict[str, Any]:
    """Through the schema, with no database: these answers come before any execution."""
    context = SimpleNamespace(settings=settings or Settings())
    return dict(process_result(await schema.execute(query, context_value=context)))


@pytest.mark.parametrize(
    ("query", "message", "code"),
    [
        (ALIASES, "The query uses 100 aliases, more than the limit of 30.", "TOO_MANY_ALIASES"),
        (DEEP, "The query nests fields more than 16 deep, the limit.", "QUERY_TOO_DEEP"),
        (HUGE, "The document is 70017 bytes, more than the limit of 65536.", "DOCUMENT_TOO_LARGE"),
        (TOKENS, "The document has more than 5000 tokens, the limit.", "TOO_MANY_TOKENS"),
    ],
)
async def test_each_limit_has_its_code(query: str, message: str, code: str) -> None:
    assert await answer(query) == refused(message, code)


async def test_a_directive_repeated_a_hundred_times() -> None:
    """One answer per limit passed, not one validation error per repeat."""
    assert await answer(REPEATED) == {
        "data": None,
        "errors": [
            {
                "message": "The query uses 100 directives, more than the limit of 50.",
                "extensions": {"code": "TOO_MANY_DIRECTIVES"},
            },
            {
                "message": "@include is used 100 times on field `gpus`, more than the limit of 1.",
                "extensions": {"code": "TOO_MANY_DIRECTIVES"},
            },
        ],
        "extensions": UNCOSTED,
    }
    twice = "{ gpus @include(if: true) @include(if: true) { name } }"
    assert await answer(twice) == refused(
        "@include is used 2 times on field `gpus`, more than the limit of 1.",
        "TOO_MANY_DIRECTIVES",
    )


async def test_the_limits_are_settings() -> None:
    tight = Settings(
        max_document_bytes=10,
        max_tokens=3,
        max_depth=1,
        max_aliases=0,
        max_directives=0,
    )
    assert (await answer("{ gpus { name } }", tight))["errors"][0]["extensions"] == {
        "code": "DOCUMENT_TOO_LARGE"
    }
    loose = tight.model_copy(update={"max_document_bytes": 1000})
    assert await answer("{ gpus { name } }", loose) == refused(
        "The document has more than 3 tokens, the limit.", "TOO_MANY_TOKENS"
    )
    shallow = loose.model_copy(update={"max_tokens": 1000})
    assert await answer("{ a: gpus @skip(if: false) { name } }", shallow) == {
        "data": None,
        "errors": [
            {
                "message": "The query nests fields more than 1 deep, the limit.",
                "extensions": {"code": "QUERY_TOO_DEEP"},
            },
            {
                "message": "The query uses 1 aliases, more than the limit of 0.",
                "extensions": {"code": "TOO_MANY_ALIASES"},
            },
            {
                "message": "The query uses 1 directives, more than the limit of 0.",
                "extensions": {"code": "TOO_MANY_DIRECTIVES"},
            },
        ],
        "extensions": UNCOSTED,
    }


async def test_fragments_count_wherever_they_are_spread() -> None:
    fragments = (
        "{ ...A ...A } fragment A on Query { x: gpus { name } ...B }"
        " fragment B on Query { y: gpus { z: name } }"
    )
    assert await answer(fragments, Settings(max_aliases=5)) == refused(
        "The query uses 6 aliases, more than the limit of 5.", "TOO_MANY_ALIASES"
    )
    deep = "{ ...A } fragment A on Query { models { ...M } } fragment M on Model { tasks { task } }"
    assert await answer(deep, Settings(max_depth=2)) == refused(
        "The query nests fields more than 2 deep, the limit.", "QUERY_TOO_DEEP"
    )


async def test_a_fragment_bomb_is_measured_without_walking_every_path() -> None:
    """Each fragment spreads the next twice: 2**40 aliases, counted in 41 steps."""
    chain = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(40))
    bomb = "{ ...F0 } " + chain + " fragment F40 on Query { a: __typename }"
    assert await answer(bomb) == refused(
        f"The query uses {2**40} aliases, more than the limit of 30.", "TOO_MANY_ALIASES"
    )


async def test_fragments_nested_without_end_are_refused() -> None:
    chain = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} }}" for i in range(100))
    query = "{ ...F0 } " + chain + " fragment F100 on Query { __typename }"
    assert await answer(query) == refused(
        "Fragments are spread inside fragments more than 64 deep.", "QUERY_TOO_DEEP"
    )


async def test_a_fragment_cycle_is_a_validation_error() -> None:
    cycle = "{ ...A } fragment A on Query { gpus { name } ...B } fragment B on Query { ...A }"
    assert await answer(cycle) == {
        "data": None,
        "errors": [
            {
                "message": "Cannot spread fragment 'A' within itself via 'B'.",
                "locations": [{"line": 1, "column": 46}, {"line": 1, "column": 75}],
                "extensions": {"code": "GRAPHQL_VALIDATION_FAILED"},
            }
        ],
        "extensions": UNCOSTED,
    }


async def test_syntax_errors_and_deep_documents_have_codes() -> None:
    assert await answer("{ gpus { name ") == {
        "data": None,
        "errors": [
            {
                "message": "Syntax Error: Expected Name, found <EOF>.",
                "locations": [{"line": 1, "column": 15}],
                "extensions": {"code": "GRAPHQL_PARSE_FAILED"},
            }
        ],
        "extensions": UNCOSTED,
    }
    nested = "{" + "a{" * 300 + "b" + "}" * 300 + "}"
    assert await answer(nested) == {
        "data": None,
        "errors": [
            {
                "message": "Syntax Error: Document is nested too deeply. Parsing aborted.",
                "locations": [{"line": 1, "column": 401}],
                "extensions": {"code": "QUERY_TOO_DEEP"},
            }
        ],
        "extensions": UNCOSTED,
    }


async def test_introspection_passes_the_defaults_and_counts_against_them() -> None:
    answered = await answer(INTROSPECTION)
    assert "errors" not in answered
    assert answered["data"]["__schema"]["queryType"] == {"name": "Query", "kind": "OBJECT"}
    cost = answered["extensions"]["cost"]
    assert 0 < cost["actualQueryCost"] <= cost["requestedQueryCost"] <= 250_000 // 2
    # Its deepest path: __schema types fields args type, then nine ofType, then kind.
    assert await answer(INTROSPECTION, Settings(max_depth=14)) == refused(
        "The query nests fields more than 14 deep, the limit.", "QUERY_TOO_DEEP"
    )
    too_dear = Settings(max_cost=cost["requestedQueryCost"] - 1)
    assert (await answer(INTROSPECTION, too_dear))["errors"][0]["extensions"]["code"] == (
        "QUERY_TOO_COMPLEX"
    )


@pytest.mark.parametrize(
    ("suggestions", "message"),
    [
        (True, "Cannot query field 'gpuz' on type 'Query'. Did you mean 'gpus'?"),
        (False, "Cannot query field 'gpuz' on type 'Query'."),
    ],
)
async def test_field_suggestions_can_be_turned_off(suggestions: bool, message: str) -> None:
    answered = await answer("{ gpuz { name } }", Settings(field_suggestions=suggestions))
    assert answered["errors"] == [
        {
            "message": message,
            "locations": [{"line": 1, "column": 3}],
            "extensions": {"code": "GRAPHQL_VALIDATION_FAILED"},
        }
    ]


async def test_no_suggestions_for_variable_values_either() -> None:
    query = "query ($o: ConfigurationOrder) { configurations(orderBy: $o) { totalCount } }"
    context = SimpleNamespace(settings=Settings(field_suggestions=False))
    result = await schema.execute(
        query, variable_values={"o": {"field": "ENERGY_PER_TOKEN_JOULE"}}, context_value=context
    )
    assert process_result(result) == {
        "data": None,
        "errors": [
            {
                "message": "Variable '$o' has invalid value at .field: Value "
                "'ENERGY_PER_TOKEN_JOULE' does not exist in 'ConfigurationField' enum.",
                "locations": [{"line": 1, "column": 8}],
                "extensions": {"code": "BAD_USER_INPUT"},
            }
        ],
        "extensions": UNCOSTED,
    }


@pytest.mark.parametrize(
    ("query", "message", "code"),
    [
        (ALIASES, "The query uses 100 aliases, more than the limit of 30.", "TOO_MANY_ALIASES"),
        (DEEP, "The query nests fields more than 16 deep, the limit.", "QUERY_TOO_DEEP"),
        (HUGE, "The document is 70017 bytes, more than the limit of 65536.", "DOCUMENT_TOO_LARGE"),
    ],
)
async def test_limits_over_http(client, query: str, message: str, code: str) -> None:
    response = await client.post("/graphql", json={"query": query})
    assert (response.status_code, response.json()) == (200, refused(message, code))


async def test_a_repeated_directive_over_http(client) -> None:
    response = await client.get("/graphql", params={"query": REPEATED})
    assert response.json() == {
        "data": None,
        "errors": [
            {
                "message": "The query uses 100 directives, more than the limit of 50.",
                "extensions": {"code": "TOO_MANY_DIRECTIVES"},
            },
            {
                "message": "@include is used 100 times on field `gpus`, more than the limit of 1.",
                "extensions": {"code": "TOO_MANY_DIRECTIVES"},
            },
        ],
        "extensions": UNCOSTED,
    }


async def test_introspection_over_http(client) -> None:
    response = await client.post("/graphql", json={"query": INTROSPECTION})
    assert response.status_code == 200
    assert "errors" not in response.json()
    assert set(response.json()["extensions"]["cost"]) == {"requestedQueryCost", "actualQueryCost"}
