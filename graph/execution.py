"""Execution: strawberry's executor, with plain fields completed in one loop per object
(graph/plain.py) and sub-selections collected once for every request, not once per request."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any, cast

from graphql import (
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    ListValueNode,
    ObjectValueNode,
    VariableNode,
    is_non_null_type,
)
from graphql.execution.collect_fields import CollectedFields, FieldDetails, collect_subfields
from graphql.pyutils import Path
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from graph import plain
from graph.memo import Memo, Same, frozen

# Collected sub-selections by object type, field nodes and (when the document's directives
# read variables) the variables: they depend on nothing else. graphql-core collects them again
# for every request (about a tenth of a model page's time).
_COLLECTED = Memo(4096)
# Per document: whether any of its directives reads a variable.
_READS_VARIABLES = Memo(256)


class PlainObjects(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's execution context; plain fields completed in one loop per object, and
    sub-selections collected once for all requests."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Per execution (sub-executors share them): the collected sub-selections, by type and
        # the identity of the field list (the items of a list share it), as graphql-core keeps
        # them; the plan of each collected selection with its usual fields. Each entry holds
        # what its key is the id of, so that the id is not reused.
        self._collected: dict[tuple[Any, int], tuple[list[FieldDetails], CollectedFields]] = {}
        self._plans: dict[int, tuple[CollectedFields, plain.Plan | None, dict[str, Any]]] = {}
        # A middleware would wrap every resolver, the plain ones too: then take the usual way.
        manager = self.middleware_manager
        self._plain = manager is None or manager.get_field_resolver(_same) is _same
        self._collected_key: Hashable | None = None

    def collect_subfields(
        self, return_type: GraphQLObjectType, field_details_list: list[FieldDetails]
    ) -> CollectedFields:
        key = (return_type, id(field_details_list))
        cached = self._collected.get(key)
        if cached is None:
            collected = self._collect_once(return_type, field_details_list)
            cached = self._collected[key] = (field_details_list, collected)
        return cached[1]

    def _collect_once(
        self, return_type: GraphQLObjectType, field_details_list: list[FieldDetails]
    ) -> CollectedFields:
        if any(
            d.defer_usage is not None or d.fragment_variable_values is not None
            for d in field_details_list
        ):
            return collect_subfields(
                self.schema,
                self.fragments,
                self.variable_values,
                self.operation,
                return_type,
                field_details_list,
                self.hide_suggestions,
            )
        if self._collected_key is None:
            self._collected_key = self._key_of_execution()
        key = (self._collected_key, return_type, *(id(d.node) for d in field_details_list))
        collected: CollectedFields | None = _COLLECTED.peek(key)
        if collected is None:
            collected = collect_subfields(
                self.schema,
                self.fragments,
                self.variable_values,
                self.operation,
                return_type,
                field_details_list,
                self.hide_suggestions,
            )
            if not collected.new_defer_usages and not collected.forbidden_directive_instances:
                _COLLECTED.put(key, collected)
        return collected

    def _key_of_execution(self) -> Hashable:
        """What collecting depends on besides the nodes: the operation (so its document and
        fragments; it is kept alive in the key, so no other document's nodes can take the
        ids of its nodes) and, when directives read them, the variables."""
        operation = Same(self.operation)
        reads = _READS_VARIABLES.get(operation, lambda: _reads_variables(self))
        try:
            variables = frozen(self.variable_values.coerced) if reads else None
        except TypeError:
            variables = Same(object())  # a key no other execution has
        return (operation, self.hide_suggestions, variables)

    def _planned(
        self, return_type: GraphQLObjectType, collected: CollectedFields
    ) -> tuple[plain.Plan | None, dict[str, Any]]:
        """The plan of a collected selection and its usual fields (none with a deferral)."""
        planned = self._plans.get(id(collected))
        if planned is None:
            grouped_field_set, new_defer_usages, _ = collected
            plan = None if new_defer_usages else plain.plan(return_type, grouped_field_set)
            usual = {} if plan is None else {k: grouped_field_set[k] for k in plan.usual}
            planned = self._plans[id(collected)] = (collected, plan, usual)
        return planned[1], planned[2]

    def collect_and_execute_subfields(
        self,
        return_type: GraphQLObjectType,
        field_details_list: list[FieldDetails],
        path: Path,
        result: Any,
        position_context: Any,
    ) -> Any:
        collected = self.collect_subfields(return_type, field_details_list)
        if self._plain and position_context is None:
            plan, usual = self._planned(return_type, collected)
            if plan is not None:
                data = plan.complete(result)
                if data is not None:
                    if not usual:
                        return data
                    rest = self.execute_fields(return_type, result, path, usual, None)
                    if self.is_awaitable(rest):
                        return plain.merged_later(plan, data, rest)
                    return plain.merged(plan, data, cast(dict[str, Any], rest))
        grouped_field_set, new_defer_usages, _ = collected
        return self.execute_collected_subfields(
            return_type, result, path, grouped_field_set, new_defer_usages, position_context
        )

    def complete_iterable_value(
        self,
        item_type: GraphQLOutputType,
        field_details_list: list[FieldDetails],
        info: GraphQLResolveInfo[Any],
        path: Path,
        items: Iterable[Any],
        position_context: Any,
    ) -> Any:
        completed = self._plain_items(item_type, field_details_list, info, items, position_context)
        if completed is not None:
            return completed
        return super().complete_iterable_value(
            item_type, field_details_list, info, path, items, position_context
        )

    def _plain_items(
        self,
        item_type: GraphQLOutputType,
        field_details_list: list[FieldDetails],
        info: GraphQLResolveInfo[Any],
        items: Iterable[Any],
        position_context: Any,
    ) -> list[Any] | None:
        """A list of objects of plain fields only (a table's rows) in one loop, without
        graphql-core's completion of each item; None when some item needs the usual way."""
        non_null = is_non_null_type(item_type)
        object_type = cast(Any, item_type).of_type if non_null else item_type
        if (
            not self._plain
            or position_context is not None
            or not isinstance(object_type, GraphQLObjectType)
            or not isinstance(items, list | tuple)  # read twice if need be: not an iterator
            or any(d.node.directives for d in field_details_list)  # @stream
        ):
            return None
        collected = self.collect_subfields(object_type, field_details_list)
        plan, usual = self._planned(object_type, collected)
        if plan is None or usual:
            return None
        is_type_of = object_type.is_type_of
        completed: list[Any] = []
        for item in items:
            if item is None:
                if non_null:
                    return None
                completed.append(None)
                continue
            if is_type_of is not None and is_type_of(item, info) is not True:
                return None
            data = plan.complete(item)
            if data is None:
                return None
            completed.append(data)
        return completed


def _reads_variables(executor: PlainObjects) -> bool:
    """Whether a directive in the operation or its fragments has a variable in its arguments."""
    stack: list[Any] = [executor.operation, *(f.definition for f in executor.fragments.values())]
    while stack:
        node = stack.pop()
        for directive in getattr(node, "directives", None) or ():
            if any(_has_variable(argument.value) for argument in directive.arguments or ()):
                return True
        selection_set = getattr(node, "selection_set", None)
        if selection_set is not None:
            stack.extend(selection_set.selections)
    return False


def _has_variable(value: Any) -> bool:
    if isinstance(value, VariableNode):
        return True
    if isinstance(value, ListValueNode):
        return any(_has_variable(v) for v in value.values)
    if isinstance(value, ObjectValueNode):
        return any(_has_variable(f.value) for f in value.fields)
    return False


def _same(value: Any) -> Any:
    return value
