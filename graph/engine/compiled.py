"""Queries compiled into plans that build their answer directly, as graphql-jit does.

graphql-core executes each field in several calls (a resolve info, the resolver, a completion
by its type, an error boundary), deciding each time what it could have decided once. A compiled
query is its selections, decided once per document: for each selection on an object type, the
plain fields in one function (graph/engine/plain.py) and every other field as a step that reads
its attribute or calls its resolver (with graphql-core's arguments and resolve info, as
graphql-core would) and completes the value with a function written for the field's type.

Compiled: queries whose fields are the schema's own (no introspection) and
whose selections graphql-core collects without deferral (@include and @skip are applied while
collecting: where they read variables, the plan is made for the request). A value of an
abstract type (an interface, a union) is completed by the selection on its runtime type, each
possible type's compiled beforehand. Only fields whose resolvers are coroutines (and what holds
them) are awaited; the rest runs in plain calls.

A plan answers only when nothing goes wrong. On any error (a resolver raising, a null where the
schema forbids one, a value that does not coerce) it raises `Fallback` and the executor runs the
query again the usual way, which reports the error, located, as it always has: resolvers only
read, so running them again changes nothing but the time taken. A plan counts its answer's cost
(each object's fields) as it builds it, which graph/engine/actual_cost.py would otherwise walk.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from graphql import (
    FieldNode,
    GraphQLObjectType,
    GraphQLOutputType,
    get_argument_values,
    is_abstract_type,
    is_leaf_type,
    is_list_type,
    is_non_null_type,
)
from graphql.pyutils import Path, is_iterable

from graph.engine.completion import (
    Complete,
    Executor,
    Fallback,
    Field,
    Fields,
    Run,
    Selection,
    abstract,
    leaf,
    object_later,
    object_now,
    plain_object,
    rows,
    run,
)
from graph.engine.shape import has_variable

__all__ = ["Fallback", "Selection", "compile_query", "run"]


# Directives graphql-core applies while collecting a selection (a plan is made per request where
# they read variables): what they leave is plain fields.
COLLECTED = frozenset({"include", "skip"})


def compile_query(
    executor: Executor, root: GraphQLObjectType, collected: Any, fields: Fields
) -> Selection | None:
    """The plan of a query whose root fields graphql-core collected; None when it takes none."""
    try:
        return _Compiler(executor, fields).selection(root, collected)
    except Fallback:
        return None


class _Compiler:
    def __init__(self, executor: Executor, fields: Fields) -> None:
        self.executor, self.fields = executor, fields

    def selection(self, type_: GraphQLObjectType, collected: Any) -> Selection:
        grouped, new_defer_usages, forbidden = collected
        if new_defer_usages or forbidden:
            raise Fallback
        plan = self.executor.planned(type_, collected)
        rest = grouped if plan is None else {key: grouped[key] for key in plan.usual}
        fields = tuple(self.field(type_, key, details) for key, details in rest.items())
        return Selection(type_, plan, fields, tuple(grouped), any(f.awaits for f in fields))

    def field(self, parent: GraphQLObjectType, key: str, details: list[Any]) -> Field:
        node: FieldNode = details[0].node
        definition = parent.fields.get(node.name.value)
        if definition is None or any(
            d.fragment_variable_values is not None
            or any(x.name.value not in COLLECTED for x in d.node.directives or ())
            for d in details
        ):
            raise Fallback  # introspection, or what graphql-core alone knows how to run
        attribute = self.fields.attribute(definition)
        if attribute is None and definition.resolve is None:
            raise Fallback
        arguments: dict[str, Any] | None = {}
        if definition.args or node.arguments:
            arguments = None
            if not any(has_variable(a.value) for a in node.arguments or ()):
                arguments = get_argument_values(definition, node, self.executor.variable_values)
        in_place = leaf(definition.type) if _is_leafy(definition.type) else None
        complete, awaits, reads = (
            (None, False, False) if in_place else self.completion(definition.type, details)
        )
        return Field(
            key,
            definition,
            [d.node for d in details],
            attribute,
            None
            if attribute is not None
            else self.fields.resolver(definition, self.executor.schema),
            arguments,
            in_place,
            complete,
            awaits or (attribute is None and self.fields.awaits(definition)),
            needs_info=attribute is None or reads,
        )

    def completion(
        self, type_: GraphQLOutputType, details: list[Any]
    ) -> tuple[Complete, bool, bool]:
        """How to complete a value of a type that is not a leaf, whether that awaits, and
        whether it reads the path and the resolve info it is given (None else)."""
        non_null = is_non_null_type(type_)
        inner: Any = type_.of_type if non_null else type_  # type: ignore[union-attr]
        reads = True
        if is_list_type(inner):
            complete, awaits, reads = self.items(inner.of_type, details)
        elif is_abstract_type(inner):
            selections = {
                t.name: self.selection(t, self.executor.collect_subfields(t, details))
                for t in self.executor.schema.get_possible_types(inner)
            }
            awaits = any(s.awaits for s in selections.values())
            complete = abstract(inner, selections)
        elif isinstance(inner, GraphQLObjectType):
            selection = self.selection(inner, self.executor.collect_subfields(inner, details))
            awaits = selection.awaits
            if selection.plan is not None and not selection.fields and inner.is_type_of is None:
                return plain_object(selection.plan, non_null), False, False
            complete = partial(object_later if awaits else object_now, selection)
        else:
            raise Fallback

        def nullable(value: Any, path: Any, info: Any, state: Run) -> Any:
            if value is None:
                if non_null:
                    raise Fallback
                return None
            return complete(value, path, info, state)

        return nullable, awaits, reads

    def items(
        self, item_type: GraphQLOutputType, details: list[Any]
    ) -> tuple[Complete, bool, bool]:
        non_null = is_non_null_type(item_type)
        inner: Any = item_type.of_type if non_null else item_type  # type: ignore[union-attr]
        if isinstance(inner, GraphQLObjectType):
            selection = self.selection(inner, self.executor.collect_subfields(inner, details))
            if selection.plan is not None and not selection.fields:
                return rows(selection, non_null), False, inner.is_type_of is not None
        item, awaits, reads = self.completion(item_type, details)

        def complete(value: Any, path: Any, info: Any, state: Run) -> Any:
            if not is_iterable(value):
                raise Fallback
            if not reads:
                return [item(v, None, None, state) for v in value]
            return [item(v, Path(path, i, None), info, state) for i, v in enumerate(value)]

        async def complete_later(value: Any, path: Any, info: Any, state: Run) -> Any:
            items = complete(value, path, info, state)
            is_awaitable = state.executor.is_awaitable
            return [await v if is_awaitable(v) else v for v in items]

        return (complete_later, True, reads) if awaits else (complete, False, reads)


def _is_leafy(type_: Any) -> bool:
    while is_non_null_type(type_) or is_list_type(type_):
        type_ = type_.of_type
    return is_leaf_type(type_)
