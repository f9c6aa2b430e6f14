"""Library internals are used in graph/internals.py alone, they are where that module reads
them, and the fast path through them is taken: if an upgrade turns it off silently (a renamed
attribute, a moved definition), these fail before the benchmark does."""

from __future__ import annotations

import ast
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from graphql import get_introspection_query, parse
from graphql.execution.executor import Executor

from db.database import sessionmaker
from graph import internals
from graph.engine import completion, plan
from graph.engine.prepared import INLINE_CHARS
from graph.schema.context import Context
from graph.schema.memory import Catalogs
from graph.server.documents import MODEL_PAGE
from tests.conftest import ROOT, SCHEMA

pytestmark = pytest.mark.anyio
OURS = ("analysis", "db", "graph")
HOME = "graph/internals.py"
# A named tuple's API: public, underscored so as not to clash with its fields.
NAMED_TUPLE = frozenset({"_asdict", "_field_defaults", "_fields", "_make", "_replace"})


def _private(name: str) -> bool:
    """A name that starts with an underscore and is not a dunder (`__init__`)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined(tree: ast.AST) -> set[str]:
    """The private names a module defines: functions, classes, globals, attributes it
    assigns, fields and slots of its classes, names it imports as."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
        elif isinstance(node, ast.alias) and node.asname:
            found.add(node.asname)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
        ):
            found.update(
                c.value
                for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
    return {name for name in found if _private(name)}


def _used(tree: ast.AST, ours: set[str]) -> set[str]:
    """The private names of libraries a module uses: imported from them, read as attributes
    (also by getattr and the like), or passed as keywords, where no module of ours defines
    the name."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in OURS:
                continue
            found.update(part for part in node.module.split(".") if _private(part))
            found.update(alias.name for alias in node.names if _private(alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in OURS:
                    found.update(part for part in alias.name.split(".") if _private(part))
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Call):
            found.update(k.arg for k in node.keywords if k.arg)
            if (
                isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
            ):
                found.add(node.args[1].value)
    return {name for name in found if _private(name) and name not in ours | NAMED_TUPLE}


def scan(files: dict[str, str]) -> dict[str, set[str]]:
    """Per file (path: source), the private names of libraries it uses."""
    trees = {path: ast.parse(source) for path, source in files.items()}
    ours = set().union(*(_defined(tree) for tree in trees.values()))
    found = {path: _used(tree, ours) for path, tree in trees.items()}
    return {path: names for path, names in found.items() if names}


def _sources() -> dict[str, str]:
    return {
        path.relative_to(ROOT).as_posix(): path.read_text()
        for package in OURS
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.relative_to(ROOT).as_posix() != HOME
    }


def test_no_private_name_of_a_library_is_used_outside_internals() -> None:
    assert scan(_sources()) == {}


def test_the_scan_finds_each_kind_of_use() -> None:
    """Imported, read, by getattr, as a keyword; not our own names, nor a named tuple's."""
    assert scan(
        {
            "a.py": "from strawberry.schema.schema import _Info\n"
            "import strawberry.schema._graphql_core\n"
            "core = schema._schema\n"
            "getattr(resolve, '_is_default', False)\n"
            "Info(_raw_info=info)\n",
            "b.py": "class Mine:\n"
            "    _kept = 0\n"
            "    def __init__(self):\n"
            "        self._seen = 1\n"
            "m = Mine()\n"
            "m._kept, m._seen, parts._replace(scheme='https'), m.__class__\n",
        }
    ) == {"a.py": {"_Info", "_graphql_core", "_schema", "_is_default", "_raw_info"}}


def test_the_internals_are_where_they_were() -> None:
    """What graph/internals.py reads of strawberry's and graphql-core's: the graphql-core
    schema, a plain field's attribute, strawberry's own validation rules, its resolve info
    (every field named), graphql-core's collection of fields, the name converter's hook."""
    core = internals.core_schema(SCHEMA)
    gpu, model = core.get_type("Gpu"), core.get_type("Model")
    assert gpu is not None and model is not None
    assert internals.plain_attribute(gpu.fields["tdpWatts"]) == "tdp_watts"  # type: ignore[attr-defined]
    assert internals.plain_attribute(model.fields["curves"]) is None  # type: ignore[attr-defined]
    assert [rule.__name__ for rule in internals.EXTRA_RULES] == [
        "MaybeNullValidationRule",
        "OneOfInputValidationRule",
    ]
    operation = parse("{ gpus { name } }").definitions[0]
    info = internals.resolve_info(
        field_name="gpus",
        field_nodes=[],
        return_type=None,
        parent_type=core.query_type,
        path=None,
        schema=core,
        fragments={},
        root_value=None,
        operation=operation,
        variable_values={"v": 1},
        context="the context",
        is_awaitable=completion.is_awaitable,
        operation_extensions={"e": 2},
    )
    assert (info.context, info.variable_values, info.operation_extensions) == (
        "the context",
        {"v": 1},
        {"e": 2},
    )
    collected = internals.collect_fields(
        core, internals.fragment_details({}), _no_variables(), core.query_type, operation
    )
    assert list(collected[0]) == ["gpus"]
    names = internals.CachedNames({})
    assert (names.apply_naming_config("tdp_watts"), names.converted) == (
        "tdpWatts",
        {"tdp_watts": "tdpWatts"},
    )


def _no_variables() -> Any:
    from graphql import get_variable_values

    return get_variable_values(internals.core_schema(SCHEMA), (), {})


def unused(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("graphql-core's executor ran")


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(_leaves(v) for v in value) if value and isinstance(value[0], dict) else 1
    return 1


async def test_plain_fields_are_completed_together_and_graphql_cores_executor_is_unused(
    synthetic_db, settings, monkeypatch
) -> None:
    """The model page: only fields with resolvers or selections of their own (model,
    configurations, curves, points, power, gpu, source, release ...) are resolved one by one,
    no value is completed again field by field, and graphql-core's executor never runs."""
    resolved: list[str] = []
    refits: list[str] = []
    resolve, by_field = completion.resolve, completion.field_by_field

    def counted(field: Any, *args: Any) -> Any:
        resolved.append(field.key)
        return resolve(field, *args)

    def refit(selection: Any, *args: Any) -> Any:
        refits.append(selection.type.name)
        return by_field(selection, *args)

    monkeypatch.setattr(completion, "resolve", counted)
    monkeypatch.setattr(completion, "field_by_field", refit)
    monkeypatch.setattr(Executor, "execute_field", unused)
    async with sessionmaker(synthetic_db)() as session:
        context = Context(session=session, settings=settings, catalogs=Catalogs())
        result = await SCHEMA.execute(MODEL_PAGE, {"slug": "tiny-1b"}, context_value=context)
    assert result.errors is None and result.data is not None
    assert _leaves(result.data) > 100
    assert 0 < len(resolved) < 40 and refits == []


async def test_introspection_is_planned_too(monkeypatch) -> None:
    """GraphiQL's introspection query: answered by a plan, as graphql-core answers it."""
    monkeypatch.setattr(Executor, "execute_field", unused)
    result = await SCHEMA.execute(get_introspection_query(descriptions=True))
    assert result.errors is None and result.data is not None
    assert result.data["__schema"]["queryType"] == {"kind": "OBJECT", "name": "Query"}


async def test_a_large_documents_plan_is_made_off_the_event_loop(
    synthetic_db, settings, monkeypatch
) -> None:
    """A document past INLINE_CHARS is planned once, in the documents' worker thread; a small
    one on the loop (it takes well under a millisecond)."""
    threads: list[str] = []
    original = plan.compile_plan

    def recorded(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(*args)

    monkeypatch.setattr(plan, "compile_plan", recorded)
    # Texts no other test sends: the documents (and their plans) are kept per schema.
    unique = uuid.uuid4().hex  # (each backend's run too)
    # (in its tokens: texts differing only in comments are one document)
    large = MODEL_PAGE.rstrip()[:-1] + f" u{unique}: __typename }}"
    small = f"query Small {{ gpus {{ name }} u{unique}: __typename }}"
    assert len(large) > INLINE_CHARS >= len(small)
    catalogs = Catalogs()
    async with sessionmaker(synthetic_db)() as session:
        for document, variables in ((large, {"slug": "tiny-1b"}),) * 2 + ((small, {}),):
            context = Context(session=session, settings=settings, catalogs=catalogs)
            result = await SCHEMA.execute(document, variables, context_value=context)
            assert result.errors is None and result.data is not None
    assert [name.startswith("leadgreen-documents") for name in threads] == [True, False]


def test_internals_are_a_leaf() -> None:
    """graph/internals.py imports libraries only (the layers would let it import db), so
    that the engine, the schema and the server may all use it."""
    tree = ast.parse(Path(ROOT / HOME).read_text())
    imported = {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    } | {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert imported.isdisjoint({*OURS, "tests"})
