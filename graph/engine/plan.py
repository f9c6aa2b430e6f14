"""A query's plan: its selections decided once per document, as graphql-jit does.

graphql-core's executor decides, for every value it completes, what it could decide once: the
field's definition and resolver, its arguments, how to complete a value of its type, the
selection on each object type. A plan decides them when a document first runs: for each
selection on an object type, its plain fields in one generated function (graph/engine/plain.py)
and every other field as a step that reads its attribute or calls its resolver (straight where
strawberry's wrapper would change nothing: graph/internals.py) and completes the value by a
function made for the field's type (graph/engine/completion.py, which runs plans).

Every query takes a plan, introspection included. Arguments without variables are read once;
@include and @skip are applied while selections are collected, so where they read variables a
plan is made per set of variables (kept while they are small). A value of an interface or a
union is completed by the selection on its runtime type, each possible type's made beforehand.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, MutableMapping
from typing import Any

from graphql import (
    FieldNode,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    ListValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    VariableNode,
    default_field_resolver,
    get_argument_values,
    is_abstract_type,
    is_leaf_type,
    is_list_type,
    is_non_null_type,
)

from graph import internals
from graph.engine import completion, plain
from graph.engine.completion import Complete, Field, Selection
from graph.engine.prepared import Prepared, small_key


def compile_plan(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: Any,
    variables: Any,
) -> Selection:
    """The plan of a query or subscription operation: the selection on its root type
    (graphql-core's fragment details, the coerced variables); a subscription's plan completes
    each event. Touches nothing shared: a worker thread may run it."""
    root = schema.get_root_type(operation.operation)
    assert root is not None  # the engine checks the schema has the operation's root type
    compiler = _Compiler(schema, operation, fragments, variables)
    return compiler.selection(
        root, internals.collect_fields(schema, fragments, variables, root, operation)
    )


def place(
    prepared: Prepared, operation: OperationDefinitionNode, fragments: Any, variables: Any
) -> tuple[MutableMapping[Hashable, Any], Hashable] | None:
    """Where an operation's plan is kept, and under which key: with its document where it
    depends on the document only; among the document's few memos where its directives read
    the variables (None: too large to keep a plan for)."""
    reads = prepared.once(
        ("reads variables", id(operation)), lambda: reads_variables(operation, fragments)
    )
    if not reads:
        return prepared.derived, ("plan", id(operation))
    values = small_key(variables.coerced)
    return None if values is None else (prepared.memos, ("plan", id(operation), values))


class _Compiler:
    def __init__(
        self, schema: GraphQLSchema, operation: Any, fragments: Any, variables: Any
    ) -> None:
        self.schema, self.operation = schema, operation
        self.fragments, self.variables = fragments, variables

    def selection(self, type_: GraphQLObjectType, collected: Any) -> Selection:
        grouped = collected[0]
        plan = plain.plan(type_, grouped, internals.plain_attribute)
        every = tuple(
            field
            for field in (self.field(type_, key, details) for key, details in grouped.items())
            if field is not None
        )
        if plan is None:
            return Selection(type_, None, every, every, None)
        rest = tuple(field for field in every if field.key in plan.usual)
        return Selection(type_, plan, rest, every, tuple(grouped) if rest else None)

    def subfields(self, type_: GraphQLObjectType, details: list[Any]) -> Selection:
        collected = internals.collect_subfields(
            self.schema, self.fragments, self.variables, self.operation, type_, details
        )
        return self.selection(type_, collected)

    def field(self, parent: GraphQLObjectType, key: str, details: list[Any]) -> Field | None:
        node: FieldNode = details[0].node
        name = node.name.value
        definition = self.schema.get_field(parent, name)
        if definition is None:  # graphql-core leaves it out of the answer
            return None
        attribute = internals.plain_attribute(definition)
        resolve: internals.Resolve | None = None
        resolver_info = False
        if definition.subscribe is not None:  # a subscription's root field: its event
            attribute, resolve = None, _event
        elif attribute is None:
            resolve, resolver_info = internals.resolver(definition, self.schema) or (
                _default_resolver,
                True,
            )
        fragment_variables = details[0].fragment_variable_values
        nodes = [d.node for d in details]
        complete, reads = self.completion(definition.type, details, nodes, f"{parent}.{name}")
        return Field(
            key,
            name,
            parent,
            definition,
            nodes,
            attribute,
            resolve,
            self.arguments(definition, node, fragment_variables),
            fragment_variables,
            complete,
            resolver_info or reads,
        )

    def arguments(self, definition: Any, node: FieldNode, fragment_variables: Any) -> Any:
        """The field's arguments when no variable is among them (None: read per request)."""
        if not (definition.args or node.arguments):
            return {}
        if fragment_variables is not None or any(
            has_variable(a.value) for a in node.arguments or ()
        ):
            return None
        try:
            return get_argument_values(definition, node, self.variables)
        except Exception:  # read per request, where the field reports it
            return None

    def completion(
        self, type_: GraphQLOutputType, details: list[Any], nodes: list[FieldNode], where: str
    ) -> tuple[Complete, bool]:
        """How to complete a value of the type, and whether that reads the resolve info."""
        inner: Any = type_.of_type if is_non_null_type(type_) else type_
        if is_leaf_type(inner):
            return completion.leaf(type_, where), False
        if is_list_type(inner):
            return self.items(type_, inner.of_type, details, nodes, where)
        if is_abstract_type(inner):
            selections = {
                t.name: self.subfields(t, details) for t in self.schema.get_possible_types(inner)
            }
            return completion.abstract(type_, selections, nodes, where, self.schema), True
        return self.an_object(type_, self.subfields(inner, details), nodes, where)

    def an_object(
        self, type_: GraphQLOutputType, selection: Selection, nodes: list[FieldNode], where: str
    ) -> tuple[Complete, bool]:
        if (
            selection.plan is not None
            and not selection.fields
            and selection.type.is_type_of is None
        ):
            return completion.plain_object(type_, selection, where), False
        return (
            completion.an_object(type_, selection, nodes, where),
            selection.type.is_type_of is not None,
        )

    def items(
        self,
        type_: GraphQLOutputType,
        item_type: GraphQLOutputType,
        details: list[Any],
        nodes: list[FieldNode],
        where: str,
    ) -> tuple[Complete, bool]:
        """A list: its items completed one by one, or all at once where they all fit (leaves,
        or objects of plain fields only)."""
        inner: Any = item_type.of_type if is_non_null_type(item_type) else item_type
        quick: completion.Quick | None = None
        if is_leaf_type(inner):
            item, reads = completion.leaf(item_type, where), False
            quick = completion.leaves(item_type)
        elif isinstance(inner, GraphQLObjectType):
            selection = self.subfields(inner, details)
            item, reads = self.an_object(item_type, selection, nodes, where)
            if selection.plan is not None and not selection.fields:
                quick, reads = (
                    completion.rows(selection, item_type),
                    reads or inner.is_type_of is not None,
                )
        else:
            item, reads = self.completion(item_type, details, nodes, where)
        return completion.items(type_, item, nodes, where, quick), reads


def _event(source: Any, _info: Any, _arguments: dict[str, Any]) -> Any:
    """A subscription root field's value in one event's execution: the event (graphql-core's
    `resolve` of such a field, as strawberry makes it)."""
    return source


def _default_resolver(source: Any, info: Any, arguments: dict[str, Any]) -> Any:
    """graphql-core's default resolver, for a field that has none of its own."""
    return default_field_resolver(source, info, **arguments)


def reads_variables(
    operation: OperationDefinitionNode, fragments: Mapping[str, Any], any_directive: bool = False
) -> bool:
    """Whether a directive in the operation or its fragments (graphql-core's fragment details,
    by name) has a variable in its arguments (or, with `any_directive`, is there at all)."""
    stack: list[Any] = [operation, *(f.definition for f in fragments.values())]
    while stack:
        node = stack.pop()
        for directive in getattr(node, "directives", None) or ():
            if any_directive or any(has_variable(a.value) for a in directive.arguments or ()):
                return True
        selection_set = getattr(node, "selection_set", None)
        if selection_set is not None:
            stack.extend(selection_set.selections)
    return False


def has_variable(value: Any) -> bool:
    """Whether a value (an argument's) holds a variable."""
    if isinstance(value, VariableNode):
        return True
    if isinstance(value, ListValueNode):
        return any(has_variable(v) for v in value.values)
    if isinstance(value, ObjectValueNode):
        return any(has_variable(f.value) for f in value.fields)
    return False
