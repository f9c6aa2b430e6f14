"""The one way a query is executed: strawberry builds the schema, the engine runs each request.

`Engine.execute` is the whole of a request, in this order: its limits (the request's settings),
its document (read once per process within the size and token limits: graph/engine/limits.py,
prepared.py), the operation it names (strawberry's exceptions where there is none, or where
it is not allowed), its validation, its cost charged (refusals with their codes), its variables
coerced, then its plan run (graph/engine/plan.py, completion.py): every answer, with or without
errors, is built by the plan, once. Its errors are logged as strawberry logs them, then coded
and masked (`coded`), and `extensions.cost` reports what it cost.

`Schema` is strawberry's schema with `execute` answered by its engine, so that the server, the
documents under /api/v1 and every test run the same way.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import strawberry
from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLError,
    OperationDefinitionNode,
    OperationType,
    get_variable_values,
    specified_rules,
)
from strawberry.exceptions import MissingQueryError
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.schema.schema import DEFAULT_ALLOWED_OPERATION_TYPES
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType as AllowedType

from graph import internals
from graph.caches import Budget
from graph.engine import completion, plan, subscribe
from graph.engine.cost import Size
from graph.engine.limits import Account, limits_of, without_suggestions
from graph.engine.prepared import (
    Documents,
    Lines,
    Prepared,
    off_the_loop,
    small_key,
    translate,
)
from graph.engine.validation import Limits
from graph.errors import (
    TIMEOUT_MESSAGE,
    UNAVAILABLE_MESSAGE,
    ApiError,
    Code,
    database_fault,
    internal_error,
)
from graph.settings import Settings

log = logging.getLogger("leadgreen")
RULES = tuple(specified_rules)
# graphql-core's: a client fixes its variables a few at a time.
MAX_VARIABLE_ERRORS = 50
# What a subscription transport runs: subscriptions, and queries (answered once).
SUBSCRIBED = frozenset({AllowedType.SUBSCRIPTION, AllowedType.QUERY})
# A request begun: its limits, its account, its document and the operation it runs (and the
# text the client sent, where its errors are placed; the `operationName` it sent, as the
# document names that operation).
Begun = tuple[Limits, Account, Prepared, OperationDefinitionNode, str, str | None]


class Engine:
    """Executes queries over a strawberry schema: within limits, each by its plan."""

    def __init__(
        self, schema: strawberry.Schema, sizes: Mapping[str, Size], documents: Documents
    ) -> None:
        self.schema, self.core = schema, internals.core_schema(schema)
        self.sizes, self.documents = sizes, documents

    async def execute(
        self,
        query: str | None,
        variables: dict[str, Any] | None = None,
        context: Any = None,
        root_value: Any = None,
        operation_name: str | None = None,
        allowed: Iterable[AllowedType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        """The answer to one request. Raises strawberry's MissingQueryError (no query),
        CannotGetOperationTypeError (no operation by that name) and InvalidOperationTypeError
        (an operation of a type not `allowed`), as strawberry's `Schema.execute` does."""
        begun = await self._begin(
            query, context, operation_name, allowed or DEFAULT_ALLOWED_OPERATION_TYPES
        )
        if isinstance(begun, ExecutionResult):
            return begun
        try:
            return await self._answered(begun, variables, context, root_value, operation_extensions)
        finally:
            begun[1].prepared()  # (the new document's bounds, once its plan is made)

    async def _begin(
        self,
        query: str | None,
        context: Any,
        operation_name: str | None,
        allowed: Iterable[AllowedType],
    ) -> Begun | ExecutionResult:
        """The request's limits and account, its document read and the operation it names (an
        answer when the document cannot be read)."""
        if not query:
            raise MissingQueryError
        limits = limits_of(context)
        account = Account(limits, context)
        try:
            prepared = await account.prepare(self.documents, query)
        except Exception as error:  # past a limit, or not a document (coded already)
            account.prepared()
            if not isinstance(error, GraphQLError):
                error = GraphQLError(str(error), original_error=error)
            report = await account.report(None, None, executed=False)
            return self._answer(None, [error], report, limits.field_suggestions)
        try:
            operation = _operation(prepared, operation_name)
            if AllowedType(operation.operation.value) not in allowed:
                raise InvalidOperationTypeError(AllowedType(operation.operation.value))
        except BaseException:
            account.prepared()
            raise
        named = operation.name.value if operation_name is not None and operation.name else None
        return limits, account, prepared, operation, query, named

    async def _answered(
        self,
        begun: Begun,
        variables: dict[str, Any] | None,
        context: Any,
        root_value: Any,
        operation_extensions: dict[str, Any] | None,
    ) -> ExecutionResult:
        """A query's answer: admitted (validated, charged), then run."""
        limits, account, prepared, operation, query, operation_name = begun
        # strawberry names the operation by the first one's name when the client names none.
        name = operation_name if operation_name is not None else _name(prepared)
        refused = await self._admit(account, prepared, name, operation_name, variables)
        if refused:
            report = await account.report(prepared, name, executed=False)
            return self._answer(None, refused, report, limits.field_suggestions, query, prepared)
        try:
            data, errors, counted = await self._run(
                prepared,
                operation,
                variables or {},
                context,
                root_value,
                operation_extensions,
                account,
            )
        except Exception as error:  # a bug: masked
            data, errors, counted = None, [GraphQLError(str(error), original_error=error)], None
        report = await account.report(prepared, name, True, data, bool(errors), counted)
        return self._answer(data, errors, report, limits.field_suggestions, query, prepared)

    async def _admit(
        self,
        account: Account,
        prepared: Prepared,
        name: str | None,
        operation_name: str | None,
        variables: dict[str, Any] | None,
    ) -> list[GraphQLError]:
        """The operation validated and charged: the errors that refuse it (none: admitted)."""
        try:
            return await account.admit(
                prepared, self.core, RULES, name, operation_name, variables, self.sizes
            )
        except Exception as error:  # a bug here must not reach the client unmasked
            request_id = uuid.uuid4().hex
            log.error("request %s failed checking limits", request_id, exc_info=error)
            body = internal_error(request_id)
            return [GraphQLError(str(body["message"]), extensions=body["extensions"])]

    async def _run(
        self,
        prepared: Prepared,
        operation: OperationDefinitionNode,
        variables: dict[str, Any],
        context: Any,
        root_value: Any,
        extensions: dict[str, Any] | None,
        account: Account | None = None,
    ) -> tuple[dict[str, Any] | None, list[GraphQLError], int | None]:
        """The operation's data, errors and counted cost: its variables coerced, then its
        plan (made off the loop for a large document) run."""
        coerced = self._coerced(prepared, operation, variables)
        if isinstance(coerced, list):
            return None, coerced, None
        core = self.core
        if core.get_root_type(operation.operation) is None:
            message = f"Schema is not configured to execute {operation.operation.value} operation."
            return None, [GraphQLError(message, operation)], None
        if operation.operation is not OperationType.QUERY:  # strawberry builds queries only here
            raise NotImplementedError(f"{operation.operation.value} operations")
        definitions, selection = await self._plan(prepared, operation, coerced)
        if account is not None:
            account.prepared()
        memo = None
        if prepared.once(("introspection", id(operation)), lambda: _introspection(operation)):
            found = small_key(coerced)  # the schema's own fields: the answer is the schema's
            memo = None if found is None else ("introspection answer", id(operation), found)
            answered = None if memo is None else prepared.memos.get(memo)
            if answered is not None:
                return answered[0], [], answered[1]
        run = completion.Run(core, operation, definitions, coerced, context, root_value, extensions)
        data = await completion.execute(selection, run)
        if memo is not None and not run.errors:
            prepared.memos[memo] = (data, run.cost)
        return data, run.errors, run.cost

    async def _plan(
        self, prepared: Prepared, operation: OperationDefinitionNode, coerced: Any
    ) -> tuple[dict[str, FragmentDefinitionNode], completion.Selection]:
        """The document's fragments and the operation's plan (made once, off the loop for a
        large document)."""
        definitions, details = prepared.once(("fragments",), lambda: _fragments(prepared))
        where = plan.place(prepared, operation, details, coerced)
        selection: completion.Selection | None = None if where is None else where[0].get(where[1])
        if selection is None:
            selection = await off_the_loop(
                len(prepared.text), plan.compile_plan, self.core, operation, details, coerced
            )
            if where is not None:
                where[0][where[1]] = selection
        return definitions, selection

    async def subscribe(
        self,
        query: str | None,
        variables: dict[str, Any] | None = None,
        context: Any = None,
        operation_name: str | None = None,
        allowed: Iterable[AllowedType] = SUBSCRIBED,
    ) -> ExecutionResult | AsyncIterator[ExecutionResult]:
        """A subscription's events, each completed by the operation's plan as a query's answer
        is (graph/engine/subscribe.py); or one answer: a query's (the way `execute` answers),
        or the errors that refused the operation before its stream began. Limits and cost are
        a query's: the operation is read, validated and charged once, when it starts."""
        begun = await self._begin(query, context, operation_name, allowed)
        if isinstance(begun, ExecutionResult):
            return begun
        try:
            return await self._subscribed(begun, variables, context)
        finally:
            begun[1].prepared()

    async def _subscribed(
        self,
        begun: Begun,
        variables: dict[str, Any] | None,
        context: Any,
    ) -> ExecutionResult | AsyncIterator[ExecutionResult]:
        """A subscription's events, once it is begun (or the errors that refuse it)."""
        limits, account, prepared, operation, query, operation_name = begun
        if operation.operation is not OperationType.SUBSCRIPTION:
            return await self._answered(begun, variables, context, None, None)
        name = operation_name if operation_name is not None else _name(prepared)
        refused = await self._admit(account, prepared, name, operation_name, variables)
        if refused:
            report = await account.report(prepared, name, executed=False)
            return self._answer(None, refused, report, limits.field_suggestions, query, prepared)
        coerced = self._coerced(prepared, operation, variables or {})
        unrun = await account.report(prepared, name, executed=False)
        if isinstance(coerced, list):
            return self._answer(None, coerced, unrun, limits.field_suggestions, query, prepared)
        if self.core.get_root_type(operation.operation) is None:
            message = "Schema is not configured to execute subscription operation."
            return self._answer(None, [GraphQLError(message, operation)], unrun, True)
        definitions, selection = await self._plan(prepared, operation, coerced)
        source = await subscribe.source(
            self.core, selection, operation, definitions, coerced, context
        )
        if isinstance(source, GraphQLError):
            return self._answer(None, [source], unrun, limits.field_suggestions)

        def answer(
            data: dict[str, Any] | None, errors: list[GraphQLError], counted: int | None
        ) -> ExecutionResult:
            report = account.event(prepared, name, data, bool(errors), counted)
            return self._answer(data, errors, report, limits.field_suggestions, query, prepared)

        return subscribe.events(
            source, selection, self.core, operation, definitions, coerced, context, answer
        )

    def _coerced(
        self, prepared: Prepared, operation: OperationDefinitionNode, variables: dict[str, Any]
    ) -> Any:
        """The operation's variables coerced (graphql-core's `get_variable_values`), or their
        errors (a list); remembered per document, operation and the small values of the
        variables it declares, as only read (by the plan, and by resolvers through infos)."""
        definitions = operation.variable_definitions or ()

        def coerce() -> Any:
            return get_variable_values(
                self.core, definitions, variables, max_errors=MAX_VARIABLE_ERRORS
            )

        if not definitions:
            return prepared.once(("no variables", id(operation)), coerce)
        declared = {
            d.variable.name.value: variables.get(d.variable.name.value) for d in definitions
        }
        key = small_key((declared, [name in variables for name in declared]))
        if key is None:
            return coerce()
        return prepared.memos.remember(("variables", id(operation), key), coerce)

    def _answer(
        self,
        data: dict[str, Any] | None,
        errors: list[GraphQLError],
        extensions: dict[str, Any],
        suggestions: bool,
        text: str | None = None,
        prepared: Prepared | None = None,
    ) -> ExecutionResult:
        """The result: its errors logged as strawberry logs them, then coded and masked (and
        placed in `text` when it was prepared as another text with the same tokens)."""
        if errors:
            if text is not None and prepared is not None and prepared.text != text:
                errors = [relocated(error, prepared.text, text) for error in errors]
            self.schema.process_errors(errors)
            if not suggestions:
                without_suggestions(errors)
            errors = [coded(error) for error in errors]
        return ExecutionResult(data=data, errors=errors or None, extensions=extensions)


_INTROSPECTION = frozenset({"__schema", "__type", "__typename"})


def _introspection(operation: OperationDefinitionNode) -> bool:
    """Whether the operation asks the schema about itself only (its root fields `__schema`,
    `__type`, `__typename`): its answer depends on the schema and its variables alone."""
    return all(
        isinstance(selection, FieldNode) and selection.name.value in _INTROSPECTION
        for selection in operation.selection_set.selections
    )


def relocated(error: GraphQLError, prepared: str, text: str) -> GraphQLError:
    """`error`, found in the document as first sent (`prepared`), at its place in `text`."""
    if not error.positions:
        return error
    positions = [translate(p, prepared, text) for p in error.positions]
    if any(p is None for p in positions):
        return error
    return GraphQLError(
        error.message,
        source=Lines(text),
        positions=[p for p in positions if p is not None],
        path=error.path,
        original_error=error.original_error,
        extensions=error.extensions,
    )


def _operation(prepared: Prepared, name: str | None) -> OperationDefinitionNode:
    """The operation strawberry runs: the one named (by the name the client's text gives it:
    `Prepared.aliases`), else the first."""
    own = name if prepared.aliases is None or name is None else prepared.aliases.get(name)
    for definition in prepared.document.definitions:
        if isinstance(definition, OperationDefinitionNode) and (
            name is None or (definition.name is not None and definition.name.value == own)
        ):
            return definition
    raise CannotGetOperationTypeError(name)


def _name(prepared: Prepared) -> str | None:
    """The first operation's name (None when it has none)."""
    for definition in prepared.document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            return definition.name.value if definition.name else None
    return None


def _fragments(prepared: Prepared) -> tuple[dict[str, FragmentDefinitionNode], Any]:
    """The document's fragments by name, and as graphql-core's collection takes them."""
    definitions = {
        d.name.value: d
        for d in prepared.document.definitions
        if isinstance(d, FragmentDefinitionNode)
    }
    return definitions, internals.fragment_details(definitions)


def _bad_variable(error: GraphQLError) -> bool:
    """A variable value that does not fit its type: a request error, with graphql-core's own
    error as the original (a field's errors have a path)."""
    return error.path is None and isinstance(error.original_error, GraphQLError)


def _expected(error: GraphQLError) -> bool:
    # Syntax and validation errors have no original error; ours carry a code.
    return (
        error.original_error is None
        or isinstance(error.original_error, ApiError)
        or _bad_variable(error)
    )


def _code(error: GraphQLError) -> str:
    if isinstance(error.original_error, ApiError):
        return error.original_error.code
    return "BAD_USER_INPUT" if _bad_variable(error) else "GRAPHQL_VALIDATION_FAILED"


def coded(error: GraphQLError) -> GraphQLError:
    """The error as the client sees it: with its code, or masked behind a request id (the
    database being away, or too slow, is said as such, without its details)."""
    if _expected(error):
        if error.extensions is None or "code" not in error.extensions:
            error.extensions = {**(error.extensions or {}), "code": _code(error)}
        return error
    fault = database_fault(error.original_error)
    if fault is not None:
        log.warning("database fault at %s: %r", error.path, error.original_error)
        message = UNAVAILABLE_MESSAGE if fault is Code.DATABASE_UNAVAILABLE else TIMEOUT_MESSAGE
        extensions: dict[str, object] = {"code": str(fault)}
    else:
        request_id = uuid.uuid4().hex
        log.error("request %s failed at %s", request_id, error.path, exc_info=error.original_error)
        body = internal_error(request_id)
        message, extensions = str(body["message"]), dict(body["extensions"])
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        extensions=extensions,
    )


class Schema(strawberry.Schema):
    """strawberry's schema (its types, resolvers and introspection), executed by its engine:
    `execute` is `Engine.execute`. `sizes` bound the lists of the cost estimate
    (graph/engine/cost.py); `documents` keeps the documents it runs."""

    def __init__(
        self,
        query: type,
        *,
        subscription: type | None = None,
        types: Iterable[type] = (),
        config: Any = None,
        sizes: Mapping[str, Size] | None = None,
        documents: Documents | None = None,
        **options: Any,
    ) -> None:
        # `options`: a subclass's schema's own (strawberry.federation.Schema's version).
        super().__init__(
            query=query, subscription=subscription, types=list(types), config=config, **options
        )
        if documents is None:
            documents = Documents(Budget(Settings.model_construct().cache_max_bytes).documents)
        self.engine = Engine(self, sizes or {}, documents)

    async def execute(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[AllowedType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        return await self.engine.execute(
            query,
            variable_values,
            context_value,
            root_value,
            operation_name,
            allowed_operation_types,
            operation_extensions,
        )

    async def subscribe(  # type: ignore[override]
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult | AsyncIterator[ExecutionResult]:
        """`Engine.subscribe`: a subscription's events, or one answer."""
        return await self.engine.subscribe(query, variable_values, context_value, operation_name)

    def execute_sync(self, *args: Any, **kwargs: Any) -> ExecutionResult:
        """Not taken: the engine runs resolvers that await (use `execute`)."""
        raise NotImplementedError("LeadGreen's schema executes asynchronously: await execute()")
