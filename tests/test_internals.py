"""The fast path through strawberry's and graphql-core's internals is taken: if an upgrade turns
it off silently (a renamed hook, a moved definition), these fail before the benchmark does."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from graphql.execution.executor import Executor

from db.engine import sessionmaker
from graph.engine import internals
from graph.schema.catalogs import Catalogs
from graph.schema.context import Context
from graph.server.documents import MODEL_PAGE
from tests.conftest import SCHEMA

pytestmark = pytest.mark.anyio


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(_leaves(v) for v in value) if value and isinstance(value[0], dict) else 1
    return 1


async def test_plain_fields_do_not_go_through_graphql_core_one_by_one(
    synthetic_db, settings, monkeypatch
) -> None:
    calls = 0
    original = Executor.execute_field

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Executor, "execute_field", counted)
    catalogs = Catalogs()
    async with sessionmaker(synthetic_db)() as session:
        context = Context(session=session, settings=settings, catalogs=catalogs)
        result = await SCHEMA.execute(MODEL_PAGE, {"slug": "tiny-1b"}, context_value=context)
    assert result.errors is None and result.data is not None
    leaves = _leaves(result.data)
    assert leaves > 100
    # Only fields with resolvers or selections of their own (model, configurations, curves,
    # points, power, gpu, source, release ...) are executed one by one: no leaf is.
    assert calls < 40
    assert context.prepared is not None  # the executor found its memos


def test_the_internals_are_where_they_were() -> None:
    """What internals.py reads of strawberry's: a plain field's attribute, the operation name
    the client sent, the graphql-core schema, strawberry's own validation rules."""
    core = internals.core_schema(SCHEMA)
    gpu = core.get_type("Gpu")
    assert gpu is not None
    assert internals.plain_attribute(gpu.fields["tdpWatts"]) == "tdp_watts"  # type: ignore[attr-defined]
    model = core.get_type("Model")
    assert internals.plain_attribute(model.fields["curves"]) is None  # type: ignore[attr-defined]
    assert [rule.__name__ for rule in internals.EXTRA_RULES] == [
        "MaybeNullValidationRule",
        "OneOfInputValidationRule",
    ]
    assert internals.provided_operation_name(object()) is None


async def test_a_large_documents_plan_is_compiled_off_the_event_loop(
    synthetic_db, settings, monkeypatch
) -> None:
    """A document past INLINE_CHARS is compiled once, in the documents' worker thread; a small
    one on the loop (it takes well under a millisecond)."""
    threads: list[str] = []
    original = internals.compiled.compile_query

    def recorded(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(*args)

    monkeypatch.setattr(internals.compiled, "compile_query", recorded)
    # Texts no other test sends: the documents (and their plans) are kept per schema.
    unique = uuid.uuid4().hex  # (each backend's run too)
    large, small = f"{MODEL_PAGE}\n# {unique}", f"query Small {{ gpus {{ name }} }} # {unique}"
    assert len(large) > internals.INLINE_CHARS >= len(small)
    catalogs = Catalogs()
    async with sessionmaker(synthetic_db)() as session:
        for document, variables in ((large, {"slug": "tiny-1b"}),) * 2 + ((small, {}),):
            context = Context(session=session, settings=settings, catalogs=catalogs)
            result = await SCHEMA.execute(document, variables, context_value=context)
            assert result.errors is None and result.data is not None
    assert [name.startswith("leadgreen-documents") for name in threads] == [True, False]
