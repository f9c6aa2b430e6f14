"""Everything LeadGreen takes from strawberry's and graphql-core's internals, in one module.

strawberry 0.341 and graphql-core 3.3 (pinned in pyproject.toml) are used here beyond their
public API, and nowhere else:

- `PlainObjects`, strawberry's execution context with plain fields completed in one loop per
  object (graph/engine/plain.py) and sub-selections collected once for every request: it
  overrides graphql-core 3.3's `collect_subfields`, `collect_and_execute_subfields` and
  `complete_iterable_value` and uses `graphql.execution.collect_fields`;
- `plain_attribute`: whether strawberry resolves a field by reading an attribute (from where
  strawberry keeps a field's definition);
- `provided_operation_name`: the operation name the client sent (strawberry fills in one);
- `core_schema`: the graphql-core schema under a strawberry schema;
- `EXTRA_RULES`: strawberry's own validation rules, which a custom validation must add;
- `graphiql_page`: strawberry's GraphiQL page, with our default query put in.

tests/test_internals.py fails when the fast path stops being taken.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterable
from typing import Any, cast

from graphql import (
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    is_non_null_type,
)
from graphql.execution.collect_fields import CollectedFields, FieldDetails, collect_subfields
from graphql.pyutils import Path
from graphql.type import GraphQLField, GraphQLSchema
from strawberry.http.ides import get_graphql_ide_html
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule
from strawberry.types.field import StrawberryField

from graph.engine import plain
from graph.engine.prepared import Prepared, small_key
from graph.engine.shape import reads_variables

__all__ = ["FieldDetails"]
# strawberry's validation rules beyond graphql-core's specified ones.
EXTRA_RULES = (MaybeNullValidationRule, OneOfInputValidationRule)


def plain_attribute(field: GraphQLField) -> str | None:
    """The Python attribute a field reads, when strawberry resolves it by reading just that
    (no resolver of its own, the default resolver); None otherwise."""
    definition = field.extensions.get("strawberry-definition")
    if (
        not isinstance(definition, StrawberryField)
        or not definition.is_basic_field
        or definition.default_resolver is not getattr
        or not getattr(field.resolve, "_is_default", False)
    ):
        return None
    return definition.python_name


def provided_operation_name(execution_context: Any) -> str | None:
    """The operation name the client sent (strawberry fills in the first operation's name)."""
    name: str | None = getattr(execution_context, "_provided_operation_name", None)
    return name


_EXAMPLE = re.compile(r"const EXAMPLE_QUERY = `.*?`;", re.S)


def graphiql_page(query: str) -> str:
    """Strawberry's GraphiQL page with `query` as its default tab."""
    example = json.dumps(query)
    return _EXAMPLE.sub(lambda _: f"const EXAMPLE_QUERY = {example};", get_graphql_ide_html())


def core_schema(schema: Any) -> GraphQLSchema:
    """The graphql-core schema of a strawberry schema."""
    core: GraphQLSchema = schema._schema
    return core


# Sub-selections are collected once per document (graphql-core collects them again for every
# request: about a tenth of a model page's time) by object type, field nodes and, when the
# document's directives read variables, the variables: they depend on nothing else. They are
# kept in the prepared document the context carries (QueryLimits puts it there); without one,
# nothing is kept across requests.


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
        prepared = getattr(self.context_value, "prepared", None)
        self._prepared = (
            prepared
            if isinstance(prepared, Prepared)
            and any(d is self.operation for d in prepared.document.definitions)
            else None
        )

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
        memo = None if self._prepared is None else self._prepared.memos
        collected: CollectedFields | None = None if memo is None else memo.get(key)
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
            if (
                memo is not None
                and self._collected_key is not UNKEPT
                and not collected.new_defer_usages
                and not collected.forbidden_directive_instances
            ):
                memo[key] = collected
        return collected

    def _key_of_execution(self) -> Hashable:
        """What collecting depends on besides the nodes: the operation (the prepared document
        holds its nodes, so their ids are not reused while it lives) and, when directives
        read them, the variables (UNKEPT when they are too large to keep as a key)."""
        if self._prepared is None:
            return UNKEPT
        operation = self.operation
        reads = self._prepared.once(
            ("reads variables", id(operation)),
            lambda: reads_variables(self.operation, self.fragments),
        )
        variables = small_key(self.variable_values.coerced) if reads else None
        if reads and variables is None:
            return UNKEPT
        return ("collected", id(operation), self.hide_suggestions, variables)

    def _planned(
        self, return_type: GraphQLObjectType, collected: CollectedFields
    ) -> tuple[plain.Plan | None, dict[str, Any]]:
        """The plan of a collected selection and its usual fields (none with a deferral)."""
        planned = self._plans.get(id(collected))
        if planned is None:
            grouped_field_set, new_defer_usages, _ = collected
            plan = None if new_defer_usages else self._plan(return_type, grouped_field_set)
            usual = {} if plan is None else {k: grouped_field_set[k] for k in plan.usual}
            planned = self._plans[id(collected)] = (collected, plan, usual)
        return planned[1], planned[2]

    def _plan(self, return_type: GraphQLObjectType, grouped_field_set: Any) -> plain.Plan | None:
        """The plan of a selection: built once per document (by type and field nodes)."""
        if self._prepared is None:
            return plain.plan(return_type, grouped_field_set, plain_attribute)
        nodes = tuple(id(d.node) for details in grouped_field_set.values() for d in details)
        plan: plain.Plan | None = self._prepared.once(
            ("plan", return_type.name, nodes),
            lambda: plain.plan(return_type, grouped_field_set, plain_attribute),
        )
        return plan

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


UNKEPT = ("not kept",)


def _same(value: Any) -> Any:
    return value
