"""Query cost: estimated from the document before execution, counted on the answer after it.

Every field costs 1. A field of an object type adds its selection's cost once; a list of
objects adds it once per element: a connection's `nodes` and `edges` by its page size (`first`,
else the default page size, at most the maximum), every other list by the bound in
`LIST_SIZES`, taken from the largest list in the 2026-02-16 data and rounded up. GitHub and
Shopify cost their queries the same way. The actual cost applies the same rule to the lists
the answer really holds (a plan counts it as it builds the answer: graph/engine/completion.py;
an answer with errors is walked). `report` is the one shape every answer reports them in
(`extensions.cost`, docs/keys.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLCompositeType,
    GraphQLError,
    GraphQLField,
    GraphQLIncludeDirective,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLSkipDirective,
    InlineFragmentNode,
    SchemaMetaFieldDef,
    SelectionNode,
    SelectionSetNode,
    TypeMetaFieldDef,
    TypeNameMetaFieldDef,
    get_argument_values,
    get_directive_values,
    get_named_type,
    get_nullable_type,
    get_operation_ast,
    get_variable_values,
    is_abstract_type,
    is_enum_type,
    is_input_object_type,
    is_interface_type,
    is_list_type,
    is_object_type,
    type_from_ast,
)

from graph.caches import Bounded
from graph.engine.prepared import Prepared, small_key

Arguments = Mapping[str, Any]
# The size of a list field from its own arguments and those of the field above it.
Size = Callable[[Arguments, Arguments], int]


def fixed(size: int) -> Size:
    return lambda _args, _parent: size


def per_task(one: int, every: int) -> Size:
    """For fields answering for one task unless `task: null` asks for every task."""
    return lambda args, _parent: every if "task" in args and args["task"] is None else one


def length_of(argument: str) -> Size:
    """As many elements as the list argument has."""
    return lambda args, _parent: len(args.get(argument) or ())


def tasks_of_changes(args: Arguments, parent: Arguments) -> int:
    return 8 if parent.get("task") is None else 1


DEFAULT_LIST_SIZE = 50
# A field with a `first` argument is a connection: these lists of it hold one page.
PAGE_LISTS = frozenset({"nodes", "edges"})


@dataclass(frozen=True)
class Pages:
    default: int
    maximum: int

    def size(self, first: object) -> int:
        asked = self.default if not isinstance(first, int) else first
        return max(0, min(asked, self.maximum))


# The introspection sizes of each schema lately costed, by identity (one per app).
_INTROSPECTION: Bounded[int, tuple[GraphQLSchema, dict[str, Size]]] = Bounded(
    64 * 1024, lambda _sizes: 4096
)


def introspection_sizes(schema: GraphQLSchema) -> dict[str, Size]:
    """Introspection lists, from the schema's own counts; per type, the mean over every type.

    `types { fields { args { name } } }` then costs what it answers for the whole schema.
    """
    known = _INTROSPECTION.get(id(schema))
    if known is None or known[0] is not schema:
        known = _INTROSPECTION[id(schema)] = (schema, _introspection_sizes(schema))
    return known[1]


def _introspection_sizes(schema: GraphQLSchema) -> dict[str, Size]:
    types = list(schema.type_map.values())
    outputs = [t for t in types if is_object_type(t) or is_interface_type(t)]
    fields = [f for t in outputs for f in t.fields.values()]

    def mean(total: int, over: int) -> Size:
        return fixed(max(1, math.ceil(total / max(over, 1))))

    def count(items: list[Any], attribute: str) -> int:
        return sum(len(getattr(item, attribute, None) or ()) for item in items)

    abstract = [t for t in types if is_abstract_type(t)]
    return {
        "__Schema.types": fixed(len(types)),
        "__Schema.directives": fixed(len(schema.directives)),
        "__Type.fields": mean(len(fields), len(types)),
        "__Type.inputFields": mean(
            count([t for t in types if is_input_object_type(t)], "fields"), len(types)
        ),
        "__Type.enumValues": mean(
            count([t for t in types if is_enum_type(t)], "values"), len(types)
        ),
        "__Type.interfaces": mean(count(outputs, "interfaces"), len(types)),
        "__Type.possibleTypes": mean(
            sum(len(schema.get_possible_types(t)) for t in abstract),
            len(types),
        ),
        "__Field.args": mean(count(fields, "args"), len(fields)),
        "__Directive.args": mean(count(list(schema.directives), "args"), len(schema.directives)),
    }


def _applies(
    schema: GraphQLSchema,
    node: InlineFragmentNode | FragmentDefinitionNode,
    type_: GraphQLObjectType,
) -> bool:
    if node.type_condition is None:
        return True
    condition = type_from_ast(schema, node.type_condition)
    if condition is type_:
        return True
    return is_abstract_type(condition) and schema.is_sub_type(condition, type_)


def _definition(schema: GraphQLSchema, parent: GraphQLObjectType, name: str) -> GraphQLField | None:
    if name == "__typename":
        return TypeNameMetaFieldDef
    if parent is schema.query_type and name in ("__schema", "__type"):
        return SchemaMetaFieldDef if name == "__schema" else TypeMetaFieldDef
    field: GraphQLField | None = parent.fields.get(name)
    return field


class Requested:
    """The cost of an operation before it runs, for these variables.

    Costs are kept per selection, type, page size and arguments above: a fragment spread in many
    places is walked once.
    """

    def __init__(
        self,
        schema: GraphQLSchema,
        document: DocumentNode,
        variables: Any,
        pages: Pages,
        sizes: Mapping[str, Size],
    ) -> None:
        self.schema, self.variables, self.pages = schema, variables, pages
        self.fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        self.sizes = {**introspection_sizes(schema), **sizes}
        self._costs: dict[tuple[Any, ...], int] = {}

    def selection(
        self,
        sets: tuple[SelectionSetNode, ...],
        type_: GraphQLCompositeType,
        page: int | None,
        above: Arguments,
    ) -> int:
        key = (tuple(map(id, sets)), type_.name, page, repr(above))
        if key not in self._costs:
            objects = (
                [type_]
                if isinstance(type_, GraphQLObjectType)
                else self.schema.get_possible_types(type_)
            )
            self._costs[key] = max(
                (self._on(sets, t, page, above) for t in objects),
                default=0,
            )
        return self._costs[key]

    def _on(
        self,
        sets: tuple[SelectionSetNode, ...],
        type_: GraphQLObjectType,
        page: int | None,
        above: Arguments,
    ) -> int:
        fields: dict[str, list[FieldNode]] = {}
        for selection_set in sets:
            self._collect(selection_set, type_, fields, set())
        return sum(self._field(type_, nodes, page, above) for nodes in fields.values())

    def _field(
        self, parent: GraphQLObjectType, nodes: list[FieldNode], page: int | None, above: Arguments
    ) -> int:
        name = nodes[0].name.value
        definition = _definition(self.schema, parent, name)
        sets = tuple(n.selection_set for n in nodes if n.selection_set is not None)
        if definition is None or not sets:
            return 1
        args = get_argument_values(definition, nodes[0], self.variables)
        size = 1
        if is_list_type(get_nullable_type(definition.type)):
            if page is not None and name in PAGE_LISTS:
                size = page
            else:
                size = self.sizes.get(f"{parent.name}.{name}", fixed(DEFAULT_LIST_SIZE))(
                    args, above
                )
        inner = self.pages.size(args.get("first")) if "first" in definition.args else None
        named = cast(GraphQLCompositeType, get_named_type(definition.type))  # it has fields
        return 1 + size * self.selection(sets, named, inner, args)

    def _collect(
        self,
        node: SelectionSetNode,
        type_: GraphQLObjectType,
        fields: dict[str, list[FieldNode]],
        spread: set[str],
    ) -> None:
        for selection in node.selections:
            if not self._included(selection):
                continue
            if isinstance(selection, FieldNode):
                key = selection.alias.value if selection.alias else selection.name.value
                fields.setdefault(key, []).append(selection)
            elif isinstance(selection, InlineFragmentNode):
                if _applies(self.schema, selection, type_):
                    self._collect(selection.selection_set, type_, fields, spread)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in spread:
                spread.add(selection.name.value)
                fragment = self.fragments.get(selection.name.value)
                if fragment is not None and _applies(self.schema, fragment, type_):
                    self._collect(fragment.selection_set, type_, fields, spread)

    def _included(self, node: SelectionNode) -> bool:
        if not node.directives:
            return True
        skip = get_directive_values(GraphQLSkipDirective, node, self.variables)
        include = get_directive_values(GraphQLIncludeDirective, node, self.variables)
        return not (skip and skip["if"]) and not (include and not include["if"])


def requested_cost(
    prepared: Prepared,
    schema: GraphQLSchema,
    operation_name: str | None,
    variables: Mapping[str, Any] | None,
    pages: Pages,
    sizes: Mapping[str, Size],
) -> int | None:
    """The operation's estimated cost; None when its variables do not fit (execution says why).

    Remembered per document, operation, the values of the variables the operation declares
    (when they are small) and page sizes: a page asked for again costs a dict lookup.
    """
    operation = prepared.operation(operation_name)
    root = schema.get_root_type(operation.operation) if operation else None
    if operation is None or root is None:
        return None
    declared = {
        name: (variables or {}).get(name)
        for name in (d.variable.name.value for d in operation.variable_definitions or ())
    }

    def estimate() -> int | None:
        values = get_variable_values(
            schema, operation.variable_definitions or (), dict(variables or {})
        )
        if isinstance(values, list):
            return None
        try:
            return Requested(schema, prepared.document, values, pages, sizes).selection(
                (operation.selection_set,), root, None, {}
            )
        except GraphQLError:  # e.g. null for a non-null argument
            return None

    key = small_key((operation_name, declared, pages.default, pages.maximum))
    if key is None:
        return estimate()
    cost: int | None = prepared.costs.remember(key, estimate)
    return cost


class ResultShape:
    """The fields of a selection that have selections of their own, by response key.

    The result holds only what applied, so fragments count whatever their type condition.
    Built as far as a result goes, once per document and operation.
    """

    __slots__ = ("_children", "fragments", "sets")

    def __init__(
        self,
        fragments: Mapping[str, FragmentDefinitionNode],
        sets: tuple[SelectionSetNode, ...],
    ) -> None:
        self.fragments, self.sets = fragments, sets
        self._children: dict[str, ResultShape] | None = None

    def children(self) -> dict[str, ResultShape]:
        if self._children is None:
            found: dict[str, list[SelectionSetNode]] = {}
            for selection_set in self.sets:
                self._collect(selection_set, found, set())
            self._children = {
                key: ResultShape(self.fragments, tuple(sets)) for key, sets in found.items() if sets
            }
        return self._children

    def _collect(
        self, node: SelectionSetNode, found: dict[str, list[SelectionSetNode]], spread: set[str]
    ) -> None:
        for selection in node.selections:
            if isinstance(selection, FieldNode):
                key = selection.alias.value if selection.alias else selection.name.value
                subs = found.setdefault(key, [])
                if selection.selection_set is not None:
                    subs.append(selection.selection_set)
            elif isinstance(selection, InlineFragmentNode):
                self._collect(selection.selection_set, found, spread)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in spread:
                spread.add(selection.name.value)
                fragment = self.fragments.get(selection.name.value)
                if fragment is not None:
                    self._collect(fragment.selection_set, found, spread)

    def count(self, value: Mapping[str, Any]) -> int:
        """Each field of the object 1, plus the cost of each object below it."""
        total = len(value)
        for key, child in self.children().items():
            if key in value:
                total += child.count_value(value[key])
        return total

    def count_value(self, value: Any) -> int:
        if isinstance(value, Mapping):
            return self.count(value)
        if isinstance(value, list):
            if not self.children():  # objects of leaves (a table's rows): each its field count
                return sum(
                    len(item) if isinstance(item, Mapping) else self.count_value(item)
                    for item in value
                )
            return sum(self.count_value(item) for item in value)
        return 0


def _shape(prepared: Prepared, operation_name: str | None) -> ResultShape | None:
    operation = get_operation_ast(prepared.document, operation_name)
    if operation is None:
        return None
    fragments = {
        d.name.value: d
        for d in prepared.document.definitions
        if isinstance(d, FragmentDefinitionNode)
    }
    return ResultShape(fragments, (operation.selection_set,))


def actual_cost(prepared: Prepared, operation_name: str | None, data: Any) -> int:
    """The cost of the result: each field 1, each object's fields once per object. A field
    without a selection counts 1 whatever its value, so only objects are walked."""
    if not isinstance(data, Mapping):
        return 0
    shape = prepared.memos.remember(
        ("result shape", operation_name), lambda: _shape(prepared, operation_name)
    )
    return 0 if shape is None else cast(ResultShape, shape).count(data)


def report(
    requested: int | None, actual: int | None, throttle: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """An answer's `extensions`: its cost, as GitHub and Shopify report it. `requested`: the
    estimate charged before it ran (None: the request ended before its cost was estimated);
    `actual`: the cost of what the answer holds (None: nothing ran); `throttle`: the state of
    the bucket that was charged (`throttle_status`), when one was."""
    cost: dict[str, Any] = {"requestedQueryCost": requested, "actualQueryCost": actual}
    if throttle is not None:
        cost["throttleStatus"] = throttle
    return {"cost": cost}


def throttle_status(capacity: int, available: float, restore_rate: float) -> dict[str, Any]:
    """A bucket's state as `extensions.cost.throttleStatus` says it: its capacity, the whole
    points it holds, and the points it regains a second."""
    return {
        "maximumAvailable": capacity,
        "currentlyAvailable": math.floor(available),
        "restoreRate": restore_rate,
    }
