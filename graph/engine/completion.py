"""Completing values by a compiled plan (graph/engine/compiled.py makes plans): the plan's
parts, and the functions that run them.

Every function here answers exactly what graphql-core would, or raises `Fallback` where
graphql-core would report an error (or where it does something a plan does not).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from graphql import (
    FieldNode,
    GraphQLField,
    GraphQLObjectType,
    Undefined,
    get_argument_values,
    is_list_type,
    is_non_null_type,
)
from graphql.pyutils import Path, is_iterable

from graph.engine import plain


class Fallback(Exception):
    """The query must run the usual way: something went wrong, or a plan does not take it."""


class Runner(Protocol):
    """What a plan uses of the executor running it: the variables, resolve infos (as
    strawberry's executor builds them) and `is_awaitable` (graph/engine/internals.py's)."""

    variable_values: Any

    def build_resolve_info(
        self, field_def: GraphQLField, field_nodes: list[FieldNode], parent_type: Any, path: Path
    ) -> Any: ...
    def is_awaitable(self, value: Any) -> bool: ...


class Executor(Runner, Protocol):
    """What compiling a plan uses of the executor: the schema, collected selections and the
    plans of their plain fields."""

    schema: Any

    def collect_subfields(self, return_type: GraphQLObjectType, details: list[Any]) -> Any: ...
    def planned(self, return_type: GraphQLObjectType, collected: Any) -> plain.Plan | None: ...


class Fields(Protocol):
    """What a plan needs to know of a field beyond graphql-core's definition (strawberry's)."""

    def attribute(self, field: GraphQLField) -> str | None:
        """The attribute the field only reads (as plain.Attribute); None otherwise."""

    def awaits(self, field: GraphQLField) -> bool:
        """Whether the field's resolver may answer an awaitable."""

    def resolver(self, field: GraphQLField, schema: Any) -> Resolve:
        """How to call the field's resolver with graphql-core's arguments (as `Resolve`)."""


class Run:
    """One execution of a plan: its executor, and the answer's cost so far."""

    __slots__ = ("cost", "executor")

    def __init__(self, executor: Runner) -> None:
        self.executor = executor
        self.cost = 0


# A field's resolver called with (source, resolve info, graphql-core's arguments by name).
Resolve = Callable[[Any, Any, dict[str, Any]], Any]


def usual(resolve: Callable[..., Any]) -> Resolve:
    """graphql-core's call of a field's `resolve`."""

    def call(source: Any, info: Any, arguments: dict[str, Any]) -> Any:
        return resolve(source, info, **arguments)

    return call


# How a value is completed: (value, path, the field's resolve info, run) -> the answer, which
# is awaitable where the completion awaits something.
Complete = Callable[[Any, Any, Any, Run], Any]


@dataclass(slots=True, eq=False)
class Field:
    """A field that is not plain: how to get its value, and how to complete it."""

    key: str
    definition: GraphQLField
    nodes: list[FieldNode]
    attribute: str | None  # read this attribute; None: call the resolver
    resolve: Resolve | None  # the resolver (None where the attribute is read)
    arguments: dict[str, Any] | None  # the same for every request; None: read per request
    leaf: Callable[[Any], Any] | None  # a leaf or a list of leaves: completed in place
    complete: Complete | None  # anything else
    awaits: bool  # the resolver, or the completion, may answer an awaitable
    needs_info: bool


@dataclass(slots=True, eq=False)
class Selection:
    """A selection on one object type."""

    type: GraphQLObjectType
    plan: plain.Plan | None
    fields: tuple[Field, ...]
    order: tuple[str, ...]
    awaits: bool


async def run(selection: Selection, executor: Runner, root: Any) -> tuple[dict[str, Any], Run]:
    """The answer's data (Fallback when the usual way must answer instead)."""
    state = Run(executor)
    if selection.awaits:
        return await object_later(selection, root, None, None, state), state
    return object_now(selection, root, None, None, state), state


def rows(selection: Selection, non_null: bool) -> Complete:
    """Objects of plain fields only (a table's rows), each completed by one call."""
    plan, is_type_of = selection.plan, selection.type.is_type_of
    assert plan is not None

    def rows(value: Any, path: Any, info: Any, state: Run) -> list[Any]:
        done = (
            plain.rows(plan, value, is_type_of, info, non_null)
            if isinstance(value, list | tuple)
            else None
        )
        if done is None:
            raise Fallback
        state.cost += done[1]
        return done[0]

    return rows


def plain_object(plan: plain.Plan, non_null: bool) -> Complete:
    """An object of plain fields only, of a type without `is_type_of`: one call, which reads
    neither the path nor the resolve info."""
    complete = plan.complete

    def one(value: Any, path: Any, info: Any, state: Run) -> Any:
        if value is None:
            if non_null:
                raise Fallback
            return None
        data = complete(value)
        if data is None:
            raise Fallback
        state.cost += len(data)
        return data

    return one


def _start(selection: Selection, source: Any, info: Any) -> dict[str, Any]:
    """The object's plain fields, after checking it is of the selection's type."""
    type_ = selection.type
    if type_.is_type_of is not None and type_.is_type_of(source, info) is not True:
        raise Fallback
    if selection.plan is None:
        return {}
    data = selection.plan.complete(source)
    if data is None:
        raise Fallback
    return data


def _value(
    field: Field, source: Any, path: Path | None, parent: Any, state: Run
) -> tuple[Any, Any]:
    """The field's value (awaitable where its resolver answers one) and its resolve info (None
    where the field does not need one: `path` is None then)."""
    info = None
    if path is not None:
        info = state.executor.build_resolve_info(field.definition, field.nodes, parent, path)
    if field.attribute is not None:
        return getattr(source, field.attribute), info
    arguments = field.arguments
    if arguments is None:
        arguments = get_argument_values(
            field.definition, field.nodes[0], state.executor.variable_values
        )
    return field.resolve(source, info, arguments), info  # type: ignore[misc]


def _finish(selection: Selection, data: dict[str, Any], state: Run) -> dict[str, Any]:
    if selection.plan is not None and selection.fields:
        data = {key: data[key] for key in selection.order}
    state.cost += len(data)
    return data


def object_now(selection: Selection, source: Any, path: Any, info: Any, state: Run) -> Any:
    data = _start(selection, source, info)
    for field in selection.fields:
        at = Path(path, field.key, selection.type.name) if field.needs_info else None
        value, field_info = _value(field, source, at, selection.type, state)
        if isinstance(value, Exception) or state.executor.is_awaitable(value):
            _close(value)
            raise Fallback
        if field.leaf is not None:
            data[field.key] = field.leaf(value)
        else:
            assert field.complete is not None
            data[field.key] = field.complete(value, at, field_info, state)
    return _finish(selection, data, state)


async def object_later(selection: Selection, source: Any, path: Any, info: Any, state: Run) -> Any:
    data = _start(selection, source, info)
    is_awaitable = state.executor.is_awaitable
    for field in selection.fields:
        at = Path(path, field.key, selection.type.name) if field.needs_info else None
        value, field_info = _value(field, source, at, selection.type, state)
        if is_awaitable(value):
            value = await value
        if isinstance(value, Exception):
            raise Fallback
        if field.leaf is not None:
            data[field.key] = field.leaf(value)
        else:
            assert field.complete is not None
            completed = field.complete(value, at, field_info, state)
            data[field.key] = await completed if is_awaitable(completed) else completed
    return _finish(selection, data, state)


def _close(value: Any) -> None:
    """An awaitable that will not be awaited: closed, so that it does not warn."""
    close = getattr(value, "close", None)
    if callable(close) and not isinstance(value, Exception):
        close()


def abstract(type_: Any, selections: dict[str, Selection]) -> Complete:
    """A value of an interface or a union, completed by the selection on its runtime type (as
    graphql-core finds it: the abstract type's `resolve_type`)."""
    resolve_type = type_.resolve_type

    def complete(value: Any, path: Any, info: Any, state: Run) -> Any:
        name = None if resolve_type is None else resolve_type(value, info, type_)
        selection = selections.get(name) if isinstance(name, str) else None
        if selection is None:  # an awaitable, a type, no type: graphql-core knows
            _close(name)
            raise Fallback
        run = object_later if selection.awaits else object_now
        return run(selection, value, path, info, state)

    return complete


def leaf(type_: Any) -> Callable[[Any], Any]:
    """Complete a leaf, or a list of them, as graphql-core does (Fallback where it errs)."""
    non_null = is_non_null_type(type_)
    inner = type_.of_type if non_null else type_
    if is_list_type(inner):
        item = leaf(inner.of_type)

        def complete(value: Any) -> Any:
            if value is None:
                if non_null:
                    raise Fallback
                return None
            if isinstance(value, Exception) or not is_iterable(value):
                raise Fallback
            return [item(v) for v in value]

        return complete
    coerce = inner.coerce_output_value

    def complete_leaf(value: Any) -> Any:
        if value is None:
            if non_null:
                raise Fallback
            return None
        if isinstance(value, Exception):
            raise Fallback
        coerced = coerce(value)
        if coerced is None or coerced is Undefined:
            raise Fallback
        return coerced

    return complete_leaf
