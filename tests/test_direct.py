"""A known document answered straight (graph/engine/direct.py) answers as strawberry does: the
same data, errors and cost, for any query; and a client pays what the usual way charges, once,
whichever way answers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strawberry.types.graphql import OperationType

from db.engine import sessionmaker
from graph.engine.direct import Direct
from graph.schema.catalogs import Catalogs
from graph.server.documents import MODEL_PAGE
from graph.server.execute import RequestContext, close_quietly
from graph.server.ratelimit import CostBucket
from tests.conftest import SCHEMA
from tests.test_compiled import _SCHEMAS, ARGUMENTS, _selection

QUERY = (OperationType.QUERY,)


def _context(engine: Any, settings: Any, catalogs: Catalogs, bucket: Any = None) -> Any:
    return RequestContext(
        session=None,
        sessions=sessionmaker(engine),
        settings=settings,
        catalogs=catalogs,
        client="someone",
        cost_bucket=bucket,
    )


async def _close(context: Any) -> None:
    """As the server closes it (an error may have cancelled a resolver's SQL)."""
    if context.session is not None:
        await close_quietly(context.session)


def _answer(result: Any) -> tuple[str, list[Any], Any]:
    errors = [(e.message, e.path) for e in result.errors or ()]
    return json.dumps(result.data), errors, result.extensions


async def _both(engine: Any, settings: Any, query: str, variables: Any) -> tuple[Any, Any]:
    """(straight, usual): the usual way first, which compiles the document's plan."""
    catalogs = Catalogs()
    answers = []
    for straight in (False, True):
        context = _context(engine, settings, catalogs)
        try:
            direct = Direct.of(SCHEMA)
            assert direct is not None
            result = (
                await direct.answer(query, dict(variables), None, context, QUERY)
                if straight
                else await SCHEMA.execute(query, variables, context_value=context)
            )
        finally:
            await _close(context)
        answers.append(None if result is None else _answer(result))
    return answers[1], answers[0]


def test_the_model_page_is_answered_straight_as_strawberry_answers_it(synthetic_data) -> None:
    runner, engine, settings = synthetic_data
    straight, usual = runner.run(_both(engine, settings, MODEL_PAGE, {"slug": "tiny-1b"}))
    assert straight == usual and usual[1] == []
    assert usual[2]["cost"]["actualQueryCost"] > 100


def test_what_fails_is_given_back_to_the_usual_way(synthetic_data) -> None:
    runner, engine, settings = synthetic_data
    for query, variables in (
        # The resolver refuses: the plan gives way.
        ('{ leaderboard(task: "text-to-image") { task { name } } }', {}),
        (MODEL_PAGE, {"slug": 12}),  # a variable that does not coerce
        ("query Q($n: Int) { models { slug } }", {"n": "x"}),
        ("{ models { slug } } { tasks { name } }", {}),  # two anonymous operations
    ):
        straight, usual = runner.run(_both(engine, settings, query, variables))
        assert (straight, bool(usual[1])) == (None, True), (query, usual)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_query_is_answered_straight_as_strawberry_answers_it(data, synthetic_data) -> None:
    runner, engine, settings = synthetic_data
    query = "{ " + _selection(data.draw, _SCHEMAS.schema.query_type, 2, ARGUMENTS) + " }"
    straight, usual = runner.run(_both(engine, settings, query, {}))
    if straight is not None:  # answered straight: exactly as strawberry answers
        assert straight == usual, query
    else:  # given back: only where strawberry's answer has errors, or no plan was made
        assert usual[1] or "__schema" in query or "__type" in query, query


async def _paid(engine: Any, settings: Any, query: str, variables: Any, straight: bool) -> float:
    """What a client has left of a fresh bucket after the query is run twice (the second time
    straight, or the usual way again)."""
    bucket = CostBucket(10_000, 0.000001)
    settings = settings.model_copy(update={"rate_limit": True})
    catalogs = Catalogs()
    for attempt in range(2):
        context = _context(engine, settings, catalogs, bucket)
        try:
            direct = Direct.of(SCHEMA)
            assert direct is not None
            result = None
            if straight and attempt == 1:
                result = await direct.answer(query, dict(variables), None, context, QUERY)
            if result is None:
                context.prepared = context.counted_cost = None
                await SCHEMA.execute(query, variables, context_value=context)
        finally:
            await _close(context)
    return bucket.available("someone", 0.0)


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        (MODEL_PAGE, {"slug": "tiny-1b"}),
        ("query ($t: String!) { leaderboard(task: $t) { task { name } } }", {"t": "text-to-image"}),
    ],
    ids=["answered straight", "given back"],
)
def test_a_client_pays_the_same_whichever_way_answers(synthetic_data, query, variables) -> None:
    runner, engine, settings = synthetic_data
    runner.run(_both(engine, settings, query, variables))  # a known document: no fee to read it
    usual = runner.run(_paid(engine, settings, query, variables, straight=False))
    straight = runner.run(_paid(engine, settings, query, variables, straight=True))
    assert straight == pytest.approx(usual, abs=0.01)
    assert (usual < 10_000) == ("slug" in variables)  # an answer costs; a refusal gives it back
