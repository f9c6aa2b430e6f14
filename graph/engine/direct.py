"""A query answered straight by its compiled plan, without strawberry's pipeline, when the
document is known and its plan is made.

strawberry runs a request through context managers for each stage and each extension, and
builds graphql-core's executor, before its executor class (graph/engine/internals.py) runs
the plan: a third of a model page's time. Here the same stages run in the same order with the
same extensions' hooks (limits, charging, error codes: graph/engine/limits.py, masking.py),
called directly, and the plan runs with resolve infos built as strawberry's executor builds
them (internals.Alone). Whatever does not go exactly as on a success (a refusal, an error, a
variable that does not coerce, a plan that gives way) answers None after every extension has
given back what it charged (`cancel`), and the caller runs the request the usual way, which
answers it as it always has.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Iterable
from typing import Any

from graphql import FragmentDefinitionNode, OperationType
from graphql.execution.values import get_variable_values
from strawberry import Schema
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.graphql import OperationType as AllowedType

from graph.engine import compiled, internals
from graph.engine.limits import QueryLimits
from graph.engine.prepared import Documents, Prepared, small_key
from graph.engine.validation import Limits
from graph.settings import Settings

HOOKS = ("on_operation", "on_parse", "on_validate", "on_execute")


class Direct:
    """The straight way for one schema (`of` says whether it has one)."""

    def __init__(
        self, schema: Schema, extensions: list[type[SchemaExtension]], documents: Documents
    ) -> None:
        self.schema, self.extensions, self.documents = schema, extensions, documents
        self.core = internals.core_schema(schema)

    @classmethod
    def of(cls, schema: Schema) -> Direct | None:
        """None when the schema keeps no documents, or when an extension would see every field
        (a middleware: then no plan runs)."""
        known = _KNOWN.get(schema)
        if known is None:
            extensions: list[type[SchemaExtension]] = [
                e if isinstance(e, type) else type(e) for e in schema.extensions
            ]
            documents = [e.documents for e in extensions if issubclass(e, QueryLimits)]
            straight = documents and not any(e()._implements_resolve() for e in extensions)
            known = _KNOWN[schema] = (cls(schema, extensions, documents[0]) if straight else None,)
        return known[0]

    async def answer(
        self,
        query: str,
        variables: dict[str, Any] | None,
        operation_name: str | None,
        context: Any,
        allowed: Iterable[AllowedType],
    ) -> ExecutionResult | None:
        """The answer, or None: run the request the usual way."""
        settings = getattr(context, "settings", None)
        if not isinstance(settings, Settings):
            return None
        prepared = self.documents.get(query, _limits(settings).tokens)
        if prepared is None:
            return None
        operation = prepared.operation(operation_name)
        if operation is None or operation.operation is not OperationType.QUERY:
            return None
        plan = internals.compiled_plan(prepared, operation)
        if plan is None or AllowedType.QUERY not in allowed:
            return None
        run = _Run(self, query, variables, operation_name, context, allowed)
        try:
            return await run.answer(prepared, operation, plan)
        finally:
            await run.close()


def _limits(settings: Settings) -> Limits:
    limits = _LIMITS.get(id(settings))
    if limits is None or limits[0] is not settings:
        limits = _LIMITS[id(settings)] = (settings, Limits.of(settings))
    return limits[1]


_LIMITS: dict[int, tuple[Settings, Limits]] = {}
_KNOWN: weakref.WeakKeyDictionary[Schema, tuple[Direct | None]] = weakref.WeakKeyDictionary()


class _Run:
    """One request run straight: the extensions' hooks in strawberry's order."""

    def __init__(
        self,
        direct: Direct,
        query: str,
        variables: dict[str, Any] | None,
        operation_name: str | None,
        context: Any,
        allowed: Iterable[AllowedType],
    ) -> None:
        self.direct, self.context = direct, context
        self.execution = ExecutionContext(
            query=query,
            schema=direct.schema,
            allowed_operations=allowed,
            context=context,
            variables=variables,
            provided_operation_name=operation_name,
        )
        self.extensions = [extension() for extension in direct.extensions]
        for extension in self.extensions:
            extension.execution_context = self.execution
        self.open: list[Any] = []  # generators of hooks entered, not yet left
        self.done = False

    async def answer(
        self, prepared: Prepared, operation: Any, plan: compiled.Selection
    ) -> ExecutionResult | None:
        execution = self.execution
        operating = await self.enter("on_operation")
        await self.leave(await self.enter("on_parse"))
        if execution.graphql_document is not prepared.document:
            return None
        await self.leave(await self.enter("on_validate"))
        if execution.pre_execution_errors:
            return None
        coerced = _coerced(self.direct.core, prepared, operation, execution.variables or {})
        if isinstance(coerced, list):
            return None
        executing = await self.enter("on_execute")
        fragments = prepared.once(("fragments",), lambda: _fragments(prepared))
        executor = internals.Alone(self.direct.core, operation, fragments, coerced, self.context)
        try:
            data, state = await compiled.run(plan, executor, None)
        except Exception:  # the usual way reports it (see compiled.Fallback)
            return None
        if hasattr(self.context, "counted_cost"):
            self.context.counted_cost = state.cost
        execution.result = ExecutionResult(data=data, errors=None)
        await self.leave(executing)
        await self.leave(operating)
        self.done = True
        results: dict[str, Any] = {}
        for extension in self.extensions:
            value = extension.get_results()
            results.update(await value if inspect.isawaitable(value) else value)
        return ExecutionResult(data=data, errors=None, extensions=results)

    async def enter(self, hook: str) -> list[Any]:
        entered = []
        for extension in self.extensions:
            if getattr(type(extension), hook) is getattr(SchemaExtension, hook):
                continue
            generator = getattr(extension, hook)()
            self.open.append(generator)
            entered.append(generator)
            await _step(generator)
        return entered

    async def leave(self, generators: list[Any]) -> None:
        for generator in reversed(generators):
            self.open.remove(generator)
            await _step(generator)

    async def close(self) -> None:
        """After an answer given up: every hook closed, every charge given back."""
        for generator in reversed(self.open):
            closing = generator.aclose() if inspect.isasyncgen(generator) else generator.close()
            if inspect.isawaitable(closing):
                await closing
        self.open.clear()
        if not self.done:
            for extension in self.extensions:
                cancel = getattr(extension, "cancel", None)
                if cancel is not None:
                    await cancel()


async def _step(generator: Any) -> None:
    """Run a hook to its next `yield` (or its end)."""
    try:
        if inspect.isasyncgen(generator):
            await generator.__anext__()
        else:
            next(generator)
    except (StopIteration, StopAsyncIteration):
        pass


def _coerced(schema: Any, prepared: Prepared, operation: Any, variables: dict[str, Any]) -> Any:
    """The operation's variables coerced (graphql-core's `get_variable_values`), or the errors
    (a list); remembered per document, operation and small values of the variables, as only
    read (by the plan, and by resolvers through the resolve info)."""

    def coerce() -> Any:
        definitions = operation.variable_definitions or ()
        return get_variable_values(schema, definitions, variables, max_errors=50)

    key = small_key(variables)
    if key is None:
        return coerce()
    return prepared.memos.remember(("variables", id(schema), id(operation), key), coerce)


def _fragments(prepared: Prepared) -> dict[str, FragmentDefinitionNode]:
    return {
        d.name.value: d
        for d in prepared.document.definitions
        if isinstance(d, FragmentDefinitionNode)
    }
