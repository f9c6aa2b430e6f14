"""Running a query's plan (graph/engine/plan.py makes plans): each field resolved and its value
completed, and every error located, nulled and reported, as graphql-core's executor does.

The plan decided once per document what graphql-core's executor decides for every value: which
resolver to call and with which arguments, how to complete a value of the field's type, the
selection on each object type. What runs per request is graphql-core's algorithm, step for
step and in its order: sibling fields whose resolvers answer awaitables are awaited together
(gathered, the others cancelled when one fails; left to settle when a sibling fails before
them), a field error nulls the nearest nullable field above it, and an error under a nulled
position is not reported. Messages, locations and paths are graphql-core's own.

Two things are quicker: plain fields (graph/engine/plain.py) are completed per object by one
generated function, and objects of plain fields only (a table's rows) by one call each. When a
value does not fit (a null where the schema forbids one, a value that does not coerce), that
value alone is completed again field by field or item by item, which reports its error as
graphql-core does: a plain field only reads an attribute, so nothing is resolved twice.

Not taken: async iterables as list values (graphql-core's @stream; LeadGreen's resolvers answer
lists), middleware and an abort signal (the engine passes neither).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from inspect import CO_ITERABLE_COROUTINE, CORO_CREATED, getcoroutinestate
from types import CoroutineType, GeneratorType
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLField,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    Undefined,
    default_type_resolver,
    get_argument_values,
    is_non_null_type,
    is_object_type,
    located_error,
)
from graphql.pyutils import Path, inspect, is_iterable

from graph import internals
from graph.engine import plain

# Types whose values are never awaitable: most values, checked first (as strawberry does).
_PLAIN = frozenset({type(None), bool, int, float, str, bytes, list, tuple, dict, set, frozenset})
# Classes whose values are neither an error nor a null: the built-in ones, and each class
# found to be neither (a class does not become an exception later), up to a bound.
_VALUES = {bool, int, float, str, list, tuple, dict}
_MOST_VALUE_TYPES = 1000


def is_awaitable(value: Any) -> bool:
    """graphql-core's `is_awaitable`, quicker for the common values."""
    if type(value) in _PLAIN:
        return False
    return (
        isinstance(value, CoroutineType)
        or (
            isinstance(value, GeneratorType)
            and bool(value.gi_code.co_flags & CO_ITERABLE_COROUTINE)
        )
        or hasattr(value, "__await__")
    )


class Run:
    """One execution of a plan: what resolvers are given, the errors reported, the answer's
    cost (each object's fields, counted as it is built) and the awaitables left to settle."""

    __slots__ = (
        "background",
        "context",
        "cost",
        "errors",
        "extensions",
        "fragments",
        "nulled",
        "operation",
        "root_value",
        "schema",
        "variables",
    )

    def __init__(
        self,
        schema: GraphQLSchema,
        operation: Any,
        fragments: dict[str, FragmentDefinitionNode],
        variables: Any,
        context: Any,
        root_value: Any = None,
        extensions: dict[str, Any] | None = None,
    ) -> None:
        self.schema, self.operation, self.fragments = schema, operation, fragments
        self.variables, self.context, self.root_value = variables, context, root_value
        self.extensions = extensions
        self.errors: list[GraphQLError] = []
        self.nulled: set[Path | None] = set()
        self.background: set[asyncio.Future[Any]] = set()
        self.cost = 0

    def info(self, field: Field, path: Path) -> Any:
        """The field's resolve info, as strawberry's executor builds it."""
        return internals.resolve_info(
            field_name=field.name,
            field_nodes=field.nodes,
            return_type=field.definition.type,
            parent_type=field.parent,
            path=path,
            schema=self.schema,
            fragments=self.fragments,
            root_value=self.root_value,
            operation=self.operation,
            variable_values=self.variables.coerced,
            context=self.context,
            is_awaitable=is_awaitable,
            operation_extensions=self.extensions,
        )

    def add(self, error: GraphQLError, path: Path | None) -> None:
        """Report an error that nulled `path`, unless an error nulled a position above it."""
        nulled = self.nulled
        if None in nulled:
            return
        at = path
        while at is not None:
            if at in nulled:
                return
            at = at.prev
        nulled.add(path)
        self.errors.append(error)

    def settle(self, awaitables: list[Awaitable[Any]]) -> None:
        """Let awaitables a failed sibling left behind run to their end, unawaited."""
        future = asyncio.gather(*awaitables, return_exceptions=True)
        self.background.add(future)
        future.add_done_callback(self.background.discard)


# How a value is completed: (value, path, the field's resolve info or None, run) -> the answer,
# awaitable where the completion awaits something. It raises what graphql-core's
# `complete_value` raises; the field or list item it completes reports it.
Complete = Callable[[Any, Path, Any, Run], Any]
# Items of a list completed at once when they all fit: (items, info, run) -> answers or None.
Quick = Callable[[list[Any] | tuple[Any, ...], Any, Run], list[Any] | None]


@dataclass(slots=True, eq=False)
class Field:
    """A field of a selection: how to get its value, and how to complete it."""

    key: str
    name: str
    parent: GraphQLObjectType
    definition: GraphQLField
    nodes: list[FieldNode]
    attribute: str | None  # read this attribute; None: call `resolve`
    resolve: internals.Resolve | None
    arguments: dict[str, Any] | None  # the same for every request; None: read per request
    fragment_variables: Any  # graphql-core's fragment variables of the first node
    complete: Complete
    needs_info: bool  # whether the resolver or the completion reads the resolve info


@dataclass(slots=True, eq=False)
class Selection:
    """A selection on one object type: its plain fields completed by one call (`plan`), the
    others one by one (`fields`), and every field one by one when a value does not fit."""

    type: GraphQLObjectType
    plan: plain.Plan | None
    fields: tuple[Field, ...]
    every: tuple[Field, ...]
    order: tuple[str, ...] | None  # the response keys, where plain fields come first


async def execute(selection: Selection, run: Run) -> dict[str, Any] | None:
    """The operation's data (None when an error nulled it), its errors in `run.errors`."""
    try:
        data = fields(selection, run.root_value, None, run)
        if is_awaitable(data):
            data = await data
    except GraphQLError as error:
        run.add(error, None)
        return None
    result: dict[str, Any] = data
    return result


def resolve(field: Field, source: Any, parent: Path | None, run: Run) -> Any:
    """graphql-core's `execute_field`: the field's value completed (awaitable where that
    awaits), None where it failed (reported), or its error raised where the field is non-null."""
    path = Path(parent, field.key, field.parent.name)
    info = run.info(field, path) if field.needs_info else None
    try:
        if field.attribute is not None:
            value = getattr(source, field.attribute)
        else:
            arguments = field.arguments
            if arguments is None:
                arguments = get_argument_values(
                    field.definition, field.nodes[0], run.variables, field.fragment_variables
                )
            value = field.resolve(source, info, arguments)  # type: ignore[misc]
        if is_awaitable(value):
            return _resolved_later(field, value, path, info, run)
        completed = field.complete(value, path, info, run)
        if is_awaitable(completed):
            return _completed_later(completed, field.definition.type, field.nodes, path, run)
        return completed
    except Exception as raw:
        return failed(raw, field.definition.type, field.nodes, path, run)


def failed(
    raw: Exception, type_: GraphQLOutputType, nodes: list[FieldNode], path: Path, run: Run
) -> Any:
    """graphql-core's `handle_field_error`: the error located, raised on where the position
    is non-null, else reported (its position nulled)."""
    error = located_error(raw, nodes, path.as_list())
    if is_non_null_type(type_):
        raise error
    run.add(error, path)
    return None


async def _resolved_later(field: Field, value: Any, path: Path, info: Any, run: Run) -> Any:
    try:
        completed = field.complete(await value, path, info, run)
        if is_awaitable(completed):
            completed = await completed
        return completed
    except Exception as raw:
        return failed(raw, field.definition.type, field.nodes, path, run)


async def _completed_later(
    completed: Awaitable[Any],
    type_: GraphQLOutputType,
    nodes: list[FieldNode],
    path: Path,
    run: Run,
) -> Any:
    try:
        return await completed
    except Exception as raw:
        return failed(raw, type_, nodes, path, run)


def fields(selection: Selection, source: Any, path: Path | None, run: Run) -> Any:
    """graphql-core's `execute_fields`: the selection's fields of `source`, in its order."""
    plan = selection.plan
    if plan is None:
        return each_field(selection.fields, source, path, run, None)
    data = plan.complete(source)
    if data is None:
        return field_by_field(selection, source, path, run)
    if not selection.fields:
        run.cost += len(data)
        return data
    return each_field(selection.fields, source, path, run, data, selection.order)


def each_field(
    steps: tuple[Field, ...],
    source: Any,
    path: Path | None,
    run: Run,
    data: dict[str, Any] | None,
    order: tuple[str, ...] | None = None,
) -> Any:
    data = {} if data is None else data
    pending: list[str] = []
    try:
        for field in steps:
            value = data[field.key] = resolve(field, source, path, run)
            if is_awaitable(value):
                pending.append(field.key)
    except Exception:
        if pending:
            run.settle([data[key] for key in pending])
        raise
    if order is not None:
        data = {key: data[key] for key in order}
    if pending:
        return _gathered(data, pending, run)
    run.cost += len(data)
    return data


def field_by_field(selection: Selection, source: Any, path: Path | None, run: Run) -> Any:
    """An object whose plain fields' function did not take it (a null where the schema forbids
    one, a value that does not coerce): every field one by one, which reports the error."""
    return each_field(selection.every, source, path, run, None)


async def gather_with_cancel(*awaitables: Awaitable[Any]) -> list[Any]:
    """graphql-core's `gather_with_cancel`, in its order (the others cancelled when one fails,
    as soon as asyncio's gather would), which also closes what a task cancelled before its
    first step was handed: the resolvers' coroutines it would have awaited, which Python
    reports as never awaited when they are dropped unstarted. A cancelled request does not
    cancel them at once, as asyncio's gather does, but here, where they are closed first."""
    futures = [asyncio.ensure_future(each) for each in awaitables]
    waiter = asyncio.get_running_loop().create_future()
    left = len(futures)

    def done(future: asyncio.Future[Any]) -> None:
        nonlocal left
        if waiter.done():
            return
        if future.cancelled():
            waiter.set_exception(asyncio.CancelledError())
        elif future.exception() is not None:
            waiter.set_exception(future.exception())  # type: ignore[arg-type]
        else:
            left -= 1
            if not left:
                waiter.set_result(None)

    for future in futures:
        future.add_done_callback(done)
    try:
        await waiter
    except BaseException:
        for future in futures:
            if not future.done():
                if isinstance(future, asyncio.Task):
                    close_unstarted(future.get_coro())
                future.cancel()
        await asyncio.gather(*futures, return_exceptions=True)
        raise
    return [future.result() for future in futures]


def close_unstarted(coroutine: Any) -> None:
    """Close a coroutine that has not started, and the unstarted coroutines it was handed (as
    arguments, or in a dict or list argument: the fields or items it would have gathered)."""
    if not isinstance(coroutine, CoroutineType) or getcoroutinestate(coroutine) != CORO_CREATED:
        return
    for argument in coroutine.cr_frame.f_locals.values():  # type: ignore[union-attr]
        if isinstance(argument, dict):
            argument = list(argument.values())
        for each in argument if isinstance(argument, list) else (argument,):
            close_unstarted(each)
    coroutine.close()


async def _gathered(data: dict[str, Any], keys: list[str], run: Run) -> dict[str, Any]:
    if len(keys) == 1:
        data[keys[0]] = await data[keys[0]]
    else:
        data.update(zip(keys, await gather_with_cancel(*(data[k] for k in keys)), strict=True))
    run.cost += len(data)
    return data


def _null_or_raised(value: Any, non_null: bool, where: str) -> bool:
    """graphql-core's start of `complete_value`: an error given as the value raised, a null
    refused where the schema forbids one (`where`: the field, as `Type.field`); True for a
    null that stands."""
    if value.__class__ in _VALUES:  # most values: neither an error nor a null
        return False
    if isinstance(value, Exception):
        raise value
    if value is None or value is Undefined:
        if non_null:
            raise TypeError(f"Cannot return null for non-nullable field {where}.")
        return True
    if len(_VALUES) < _MOST_VALUE_TYPES:
        _VALUES.add(value.__class__)
    return False


def leaf(type_: GraphQLOutputType, where: str) -> Complete:
    """A scalar or an enum (`where`: the field, as `Type.field`), coerced as graphql-core
    coerces it."""
    non_null = is_non_null_type(type_)
    inner: Any = type_.of_type if non_null else type_  # type: ignore[union-attr]
    coerce = inner.coerce_output_value

    def complete(value: Any, path: Path, info: Any, run: Run) -> Any:
        if _null_or_raised(value, non_null, where):
            return None
        coerced = coerce(value)
        if coerced is None or coerced is Undefined:
            raise TypeError(
                f"Expected `{inspect(inner)}.coerce_output_value({inspect(value)})` to return"
                f" non-nullable value, returned: {inspect(coerced)}"
            )
        return coerced

    return complete


def items(
    type_: GraphQLOutputType,
    item: Complete,
    nodes: list[FieldNode],
    where: str,
    quick: Quick | None,
) -> Complete:
    """A list, each item completed by `item` (all at once by `quick` when they all fit)."""
    non_null = is_non_null_type(type_)
    inner: Any = type_.of_type if non_null else type_  # type: ignore[union-attr]
    item_type = inner.of_type

    def complete(value: Any, path: Path, info: Any, run: Run) -> Any:
        if value.__class__ is list or value.__class__ is tuple:
            pass
        elif _null_or_raised(value, non_null, where):
            return None
        elif not is_iterable(value):
            raise GraphQLError(f"Expected Iterable, but did not find one for field '{where}'.")
        if quick is not None and (value.__class__ is list or value.__class__ is tuple):
            done = quick(value, info, run)
            if done is not None:
                return done
            return item_by_item(value, item, item_type, nodes, path, info, run)
        return each_item(value, item, item_type, nodes, path, info, run)

    return complete


def each_item(
    value: Iterable[Any],
    item: Complete,
    item_type: GraphQLOutputType,
    nodes: list[FieldNode],
    path: Path,
    info: Any,
    run: Run,
) -> Any:
    """graphql-core's `complete_iterable_value`."""
    completed: list[Any] = []
    pending: list[int] = []
    iterator = iter(value)
    index = 0
    try:
        for each in iterator:
            at = Path(path, index, None)
            if is_awaitable(each):
                completed.append(_item_later(each, item, item_type, nodes, at, info, run))
                pending.append(index)
            else:
                try:
                    done = item(each, at, info, run)
                    if is_awaitable(done):
                        done = _completed_later(done, item_type, nodes, at, run)
                        pending.append(index)
                except Exception as raw:
                    done = failed(raw, item_type, nodes, at, run)
                completed.append(done)
            index += 1
    except Exception:
        awaitables = [completed[i] for i in pending]
        awaitables.extend(_awaitables_left(iterator))
        if awaitables:
            run.settle(awaitables)
        raise
    if not pending:
        return completed
    return _gathered_items(completed, pending)


def item_by_item(
    value: list[Any] | tuple[Any, ...],
    item: Complete,
    item_type: GraphQLOutputType,
    nodes: list[FieldNode],
    path: Path,
    info: Any,
    run: Run,
) -> Any:
    """Items not all taken at once (one does not fit): one by one, which reports the error."""
    return each_item(value, item, item_type, nodes, path, info, run)


def _awaitables_left(iterator: Iterator[Any]) -> list[Any]:
    found: list[Any] = []
    with suppress(Exception):
        found.extend(each for each in iterator if is_awaitable(each))
    return found


async def _item_later(
    value: Any,
    item: Complete,
    item_type: GraphQLOutputType,
    nodes: list[FieldNode],
    path: Path,
    info: Any,
    run: Run,
) -> Any:
    try:
        completed = item(await value, path, info, run)
        if is_awaitable(completed):
            completed = await completed
        return completed
    except Exception as raw:
        return failed(raw, item_type, nodes, path, run)


async def _gathered_items(completed: list[Any], indices: list[int]) -> list[Any]:
    if len(indices) == 1:
        completed[indices[0]] = await completed[indices[0]]
    else:
        results = await gather_with_cancel(*(completed[i] for i in indices))
        for index, result in zip(indices, results, strict=True):
            completed[index] = result
    return completed


def leaves(item_type: GraphQLOutputType) -> Quick:
    """Items that are leaves, all coerced at once (None when one does not fit)."""
    non_null = is_non_null_type(item_type)
    inner: Any = item_type.of_type if non_null else item_type  # type: ignore[union-attr]
    coerce = inner.coerce_output_value

    def quick(value: list[Any] | tuple[Any, ...], info: Any, run: Run) -> list[Any] | None:
        return plain.coerced_items(value, coerce, non_null)

    return quick


def rows(selection: Selection, item_type: GraphQLOutputType) -> Quick:
    """Items that are objects of plain fields only (a table's rows), each by one call."""
    plan, is_type_of = selection.plan, selection.type.is_type_of
    non_null = is_non_null_type(item_type)
    assert plan is not None

    def quick(value: list[Any] | tuple[Any, ...], info: Any, run: Run) -> list[Any] | None:
        done = plain.rows(plan, value, is_type_of, info, non_null)
        if done is None:
            return None
        run.cost += done[1]
        return done[0]

    return quick


def an_object(
    type_: GraphQLOutputType, selection: Selection, nodes: list[FieldNode], where: str
) -> Complete:
    """A value of an object type: its selection's fields."""
    non_null = is_non_null_type(type_)

    def complete(value: Any, path: Path, info: Any, run: Run) -> Any:
        if _null_or_raised(value, non_null, where):
            return None
        return of_type(selection, nodes, value, path, info, run)

    return complete


def plain_object(type_: GraphQLOutputType, selection: Selection, where: str) -> Complete:
    """A value of an object type without `is_type_of` whose selection is plain fields only:
    one call, which reads neither the path nor the resolve info unless the value does not
    fit."""
    non_null = is_non_null_type(type_)
    assert selection.plan is not None
    complete_plain = selection.plan.complete

    def complete(value: Any, path: Path, info: Any, run: Run) -> Any:
        if _null_or_raised(value, non_null, where):
            return None
        data = complete_plain(value)
        if data is None:
            return field_by_field(selection, value, path, run)
        run.cost += len(data)
        return data

    return complete


def of_type(
    selection: Selection, nodes: list[FieldNode], value: Any, path: Path, info: Any, run: Run
) -> Any:
    """graphql-core's `complete_object_value`: the type's `is_type_of` asked, then the fields."""
    is_type_of = selection.type.is_type_of
    if is_type_of is not None:
        fits = is_type_of(value, info)
        if is_awaitable(fits):
            return _of_type_later(fits, selection, nodes, value, path, run)
        if not fits:
            raise _not_of_type(selection.type, value, nodes)
    return fields(selection, value, path, run)


async def _of_type_later(
    fits: Any,
    selection: Selection,
    nodes: list[FieldNode],
    value: Any,
    path: Path,
    run: Run,
) -> Any:
    if not await fits:
        raise _not_of_type(selection.type, value, nodes)
    data = fields(selection, value, path, run)
    return await data if is_awaitable(data) else data


def _not_of_type(type_: GraphQLObjectType, value: Any, nodes: list[FieldNode]) -> GraphQLError:
    return GraphQLError(f"Expected value of type '{type_}' but got: {inspect(value)}.", nodes)


def abstract(
    type_: GraphQLOutputType,
    selections: dict[str, Selection],
    nodes: list[FieldNode],
    where: str,
    schema: GraphQLSchema,
) -> Complete:
    """A value of an interface or a union: completed by the selection on the object type the
    abstract type's `resolve_type` names, as graphql-core finds and checks it."""
    non_null = is_non_null_type(type_)
    inner: Any = type_.of_type if non_null else type_  # type: ignore[union-attr]
    resolve_type = inner.resolve_type or default_type_resolver

    def selection_of(name: Any, value: Any) -> Selection:
        selection = selections.get(name) if isinstance(name, str) else None
        if selection is None:
            raise _not_resolved(inner, name, value, nodes, where, schema)
        return selection

    async def later(name: Any, value: Any, path: Path, info: Any, run: Run) -> Any:
        completed = of_type(selection_of(await name, value), nodes, value, path, info, run)
        return await completed if is_awaitable(completed) else completed

    def complete(value: Any, path: Path, info: Any, run: Run) -> Any:
        if _null_or_raised(value, non_null, where):
            return None
        name = resolve_type(value, info, inner)
        if is_awaitable(name):
            return later(name, value, path, info, run)
        return of_type(selection_of(name, value), nodes, value, path, info, run)

    return complete


def _not_resolved(
    type_: Any,
    name: Any,
    value: Any,
    nodes: list[FieldNode],
    where: str,
    schema: GraphQLSchema,
) -> GraphQLError:
    """graphql-core's `ensure_valid_runtime_type` errors."""
    if name is None:
        return GraphQLError(
            f"Abstract type '{type_}' must resolve to an Object type at runtime for field"
            f" '{where}'. Either the '{type_}' type should provide a 'resolve_type' function"
            " or each possible type should provide an 'is_type_of' function.",
            nodes,
        )
    if not isinstance(name, str):
        return GraphQLError(
            f"Abstract type '{type_}' must resolve to an Object type at runtime for field"
            f" '{where}' with value {inspect(value)}, received '{inspect(name)}', which is not"
            " a valid Object type name.",
            nodes,
        )
    runtime = schema.get_type(name)
    if runtime is None:
        return GraphQLError(
            f"Abstract type '{type_}' was resolved to a type '{name}' that does not exist"
            " inside the schema.",
            nodes,
        )
    if not is_object_type(runtime):
        return GraphQLError(
            f"Abstract type '{type_}' was resolved to a non-object type '{name}'.", nodes
        )
    return GraphQLError(
        f"Runtime Object type '{runtime}' is not a possible type for '{type_}'.", nodes
    )
