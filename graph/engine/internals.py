"""Everything LeadGreen takes from strawberry's and graphql-core's internals, in one module.

strawberry 0.341 and graphql-core 3.3 (pinned in pyproject.toml) are used here beyond their
public API, and nowhere else:

- `CompiledQueries`, strawberry's execution context running a query by its compiled plan
  (graph/engine/compiled.py): it overrides graphql-core 3.3's `execute_operation`, resets its
  `collected_errors` and uses `graphql.execution.collect_fields`; `Alone` builds resolve infos
  as strawberry's executor does, for a plan run without one (graph/engine/direct.py);
- `plain_attribute`: whether strawberry resolves a field by reading an attribute (from where
  strawberry keeps a field's definition);
- `provided_operation_name`: the operation name the client sent (strawberry fills in one);
- `core_schema`: the graphql-core schema under a strawberry schema;
- `EXTRA_RULES`: strawberry's own validation rules, which a custom validation must add;

tests/test_internals.py fails when the fast path stops being taken.
"""

from __future__ import annotations

from typing import Any, cast

from graphql import (
    GraphQLObjectType,
    OperationType,
)
from graphql.execution.collect_fields import (
    CollectedFields,
    FieldDetails,
    collect_fields,
)
from graphql.execution.executor import CollectedErrors
from graphql.pyutils import Path
from graphql.type import GraphQLField, GraphQLSchema
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.schema.schema import (
    StrawberryGraphQLCoreExecutionContext,
    _OperationContextAwareGraphQLResolveInfo,
)
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule
from strawberry.types.base import StrawberryOptional
from strawberry.types.field import StrawberryField

from graph.engine import compiled, completion, plain
from graph.engine.prepared import INLINE_CHARS, Prepared, off_the_loop

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


class _StrawberryFields:
    """What a compiled plan asks of a field (graph.engine.compiled.Fields), from strawberry."""

    attribute = staticmethod(plain_attribute)

    @staticmethod
    def awaits(field: GraphQLField) -> bool:
        definition = field.extensions.get("strawberry-definition")
        return not isinstance(definition, StrawberryField) or definition.is_async

    @staticmethod
    def resolver(field: GraphQLField, schema: GraphQLSchema) -> completion.Resolve:
        """The field's resolver function called straight, where strawberry's wrapper would only
        pass it the arguments unchanged (see `direct_resolver`); else the wrapper."""
        assert field.resolve is not None
        return direct_resolver(field, schema) or completion.usual(field.resolve)


FIELDS = _StrawberryFields()
# Argument types strawberry hands to a resolver as graphql-core coerced them.
_AS_THEY_ARE = (str, int, float, bool)


def direct_resolver(field: GraphQLField, schema: GraphQLSchema) -> completion.Resolve | None:
    """A strawberry field's resolver function, called as strawberry's wrapper calls it
    (`get_arguments`: the source as `self`, `root` or `parent`, a strawberry Info as `info`,
    the arguments by their Python names), for a field whose wrapper would do nothing else: no
    field extensions (permissions are one), no exception handlers in the schema, and arguments
    that are built-in scalars, which strawberry's `convert_argument` returns unchanged. None for
    any other field (its wrapper runs)."""
    definition = field.extensions.get("strawberry-definition")
    strawberry_schema = getattr(schema, "_strawberry_schema", None)
    if (
        not isinstance(definition, StrawberryField)
        or definition.base_resolver is None
        or definition.extensions
        or strawberry_schema is None
        or strawberry_schema.exception_handlers
    ):
        return None
    config = strawberry_schema.config
    names: dict[str, str] = {}
    for argument in definition.arguments:
        type_ = argument.type
        if type(type_) is StrawberryOptional:
            type_ = type_.of_type
        if type_ not in _AS_THEY_ARE:
            return None
        names[config.name_converter.from_argument(argument)] = argument.python_name
    if set(names) != set(field.args):
        return None
    resolver, info_class = definition.base_resolver, config.info_class
    with_self = resolver.self_parameter is not None
    as_source = [p.name for p in (resolver.parent_parameter, resolver.root_parameter) if p]
    info_name = resolver.info_parameter.name if resolver.info_parameter else None

    def call(source: Any, info: Any, arguments: dict[str, Any]) -> Any:
        kwargs = {names[name]: value for name, value in arguments.items()}
        for name in as_source:
            kwargs[name] = source
        if info_name is not None:
            kwargs[info_name] = info_class(_raw_info=info, _field=definition)
        return resolver(source, **kwargs) if with_self else resolver(**kwargs)

    return call


def provided_operation_name(execution_context: Any) -> str | None:
    """The operation name the client sent (strawberry fills in the first operation's name)."""
    name: str | None = getattr(execution_context, "_provided_operation_name", None)
    return name


def core_schema(schema: Any) -> GraphQLSchema:
    """The graphql-core schema of a strawberry schema."""
    core: GraphQLSchema = schema._schema
    return core


class CompiledQueries(StrawberryGraphQLCoreExecutionContext):
    """Strawberry's execution context, running a query by its compiled plan when it has one
    (and the usual way when the plan gives way, see graph.engine.compiled.Fallback)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        prepared = getattr(self.context_value, "prepared", None)
        self._prepared = (
            prepared
            if isinstance(prepared, Prepared)
            and any(d is self.operation for d in prepared.document.definitions)
            else None
        )

    def execute_operation(self, serially: bool | None = None) -> Any:
        prepared = self._prepared
        if (
            prepared is not None
            and len(prepared.text) > INLINE_CHARS
            and _plan_key(self.operation, self.hide_suggestions) not in prepared.derived
        ):
            return self._compiled_off_the_loop(serially)
        plan = self._compiled()
        if plan is None:
            return super().execute_operation(serially)
        return self._run_compiled(plan, serially)

    async def _compiled_off_the_loop(self, serially: bool | None) -> Any:
        """A large document's first run: its plan is compiled in the documents' worker thread
        (as its validation was), so that the event loop keeps answering meanwhile."""
        plan = await off_the_loop(len(self._prepared.text), self._compiled)  # type: ignore[union-attr]
        if plan is None:
            result = super().execute_operation(serially)
            return await result if self.is_awaitable(result) else result
        return await self._run_compiled(plan, serially)

    def _compiled(self) -> compiled.Selection | None:
        """The query's plan: compiled once per document, or per request where directives read
        its variables (None: the usual way)."""
        root, operation, prepared = self.schema.query_type, self.operation, self._prepared
        manager = self.middleware_manager  # it would wrap every resolver: the usual way
        if root is None or self.abort_signal is not None or operation.operation is not QUERY:
            return None
        if manager is not None and manager.get_field_resolver(_same) is not _same:
            return None
        key = None
        if prepared is not None:
            key = prepared.collection_key(
                operation, self.fragments, self.variable_values.coerced, self.hide_suggestions
            )
        if key is None or key[-1] is not None:  # kept only where variables change nothing
            return self._compile(root)
        plan: compiled.Selection | None = prepared.once(  # type: ignore[union-attr]
            _plan_key(operation, self.hide_suggestions), lambda: self._compile(root)
        )
        return plan

    def _compile(self, root: GraphQLObjectType) -> compiled.Selection | None:
        collected = collect_fields(
            self.schema, self.fragments, self.variable_values, root, self.operation
        )
        return compiled.compile_query(self, root, collected, FIELDS)

    async def _run_compiled(self, plan: compiled.Selection, serially: bool | None) -> Any:
        try:
            data, run = await compiled.run(plan, self, self.root_value)
        except Exception:  # the usual way reports it (see compiled.Fallback)
            data = None
        if data is None:
            self.collected_errors = CollectedErrors()
            result = super().execute_operation(serially)
            return await result if self.is_awaitable(result) else result
        if hasattr(self.context_value, "counted_cost"):
            self.context_value.counted_cost = run.cost
        return self.build_response(data)

    def planned(
        self, return_type: GraphQLObjectType, collected: CollectedFields
    ) -> plain.Plan | None:
        """The plan of a collected selection's plain fields (by type and field nodes)."""
        grouped_field_set, new_defer_usages, _ = collected
        if new_defer_usages:
            return None
        nodes = tuple(id(d.node) for details in grouped_field_set.values() for d in details)

        def make() -> plain.Plan | None:
            return plain.plan(return_type, grouped_field_set, plain_attribute)

        if self._prepared is None:
            return make()
        plan: plain.Plan | None = self._prepared.once(("plan", return_type.name, nodes), make)
        return plan


class Alone:
    """What a compiled plan that runs alone (graph.engine.compiled's `alone`) needs of an
    executor: the variables, and resolve infos as strawberry's executor builds them (without
    graphql-core's async helpers and abort signal, which LeadGreen's resolvers do not use)."""

    __slots__ = ("context", "fragments", "operation", "schema", "variable_values")
    is_awaitable = staticmethod(optimized_is_awaitable)

    def __init__(
        self, schema: GraphQLSchema, operation: Any, fragments: Any, variables: Any, context: Any
    ) -> None:
        self.schema, self.operation, self.fragments = schema, operation, fragments
        self.variable_values, self.context = variables, context

    def build_resolve_info(
        self, field_def: GraphQLField, field_nodes: list[Any], parent_type: Any, path: Path
    ) -> Any:
        return _OperationContextAwareGraphQLResolveInfo(
            field_nodes[0].name.value,
            field_nodes,
            field_def.type,
            parent_type,
            path,
            self.schema,
            self.fragments,
            None,
            self.operation,
            self.variable_values.coerced,
            self.context,
            optimized_is_awaitable,
            None,
            None,
            cast(Any, None),  # strawberry's when no operation extensions are given
        )


QUERY = OperationType.QUERY


def compiled_plan(prepared: Prepared, operation: Any) -> compiled.Selection | None:
    """The plan `CompiledQueries` made and kept for an operation of a prepared document (as
    strawberry runs it: with suggestions), if it did."""
    plan: compiled.Selection | None = prepared.derived.get(_plan_key(operation, False))
    return plan


def _plan_key(operation: Any, hide_suggestions: bool) -> tuple[Any, ...]:
    return ("compiled", id(operation), hide_suggestions)


def _same(value: Any) -> Any:
    return value
