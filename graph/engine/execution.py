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
from collections.abc import Iterable, Mapping
from typing import Any

import strawberry
from graphql import (
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
from graph.engine import completion, plan
from graph.engine.cost import Size
from graph.engine.limits import Account, limits_of, without_suggestions
from graph.engine.prepared import Documents, Prepared, off_the_loop, small_key
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
        if not query:
            raise MissingQueryError
        limits = limits_of(context)
        account = Account(limits, context)
        try:
            prepared = await account.prepare(self.documents, query)
        except Exception as error:  # past a limit, or not a document (coded already)
            if not isinstance(error, GraphQLError):
                error = GraphQLError(str(error), original_error=error)
            return self._answer(None, [error], {}, limits.field_suggestions)
        operation = _operation(prepared, operation_name)
        if AllowedType(operation.operation.value) not in (
            allowed or DEFAULT_ALLOWED_OPERATION_TYPES
        ):
            raise InvalidOperationTypeError(AllowedType(operation.operation.value))
        # strawberry names the operation by the first one's name when the client names none.
        name = operation_name if operation_name is not None else _name(prepared)
        try:
            refused = await account.admit(
                prepared, self.core, RULES, name, operation_name, variables, self.sizes
            )
        except Exception as error:  # a bug here must not reach the client unmasked
            request_id = uuid.uuid4().hex
            log.error("request %s failed checking limits", request_id, exc_info=error)
            body = internal_error(request_id)
            refused = [GraphQLError(str(body["message"]), extensions=body["extensions"])]
        if refused:
            report = await account.report(prepared, name, executed=False)
            return self._answer(None, refused, report, limits.field_suggestions)
        try:
            data, errors, counted = await self._run(
                prepared, operation, variables or {}, context, root_value, operation_extensions
            )
        except Exception as error:  # a bug: masked
            data, errors, counted = None, [GraphQLError(str(error), original_error=error)], None
        report = await account.report(prepared, name, True, data, bool(errors), counted)
        return self._answer(data, errors, report, limits.field_suggestions)

    async def _run(
        self,
        prepared: Prepared,
        operation: OperationDefinitionNode,
        variables: dict[str, Any],
        context: Any,
        root_value: Any,
        extensions: dict[str, Any] | None,
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
        definitions, details = prepared.once(("fragments",), lambda: _fragments(prepared))
        where = plan.place(prepared, operation, details, coerced)
        selection: completion.Selection | None = None if where is None else where[0].get(where[1])
        if selection is None:
            selection = await off_the_loop(
                len(prepared.text), plan.compile_plan, core, operation, details, coerced
            )
            if where is not None:
                where[0][where[1]] = selection
        run = completion.Run(core, operation, definitions, coerced, context, root_value, extensions)
        data = await completion.execute(selection, run)
        return data, run.errors, run.cost

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
    ) -> ExecutionResult:
        """The result: its errors logged as strawberry logs them, then coded and masked."""
        if errors:
            self.schema.process_errors(errors)
            if not suggestions:
                without_suggestions(errors)
            errors = [coded(error) for error in errors]
        return ExecutionResult(data=data, errors=errors or None, extensions=extensions)


def _operation(prepared: Prepared, name: str | None) -> OperationDefinitionNode:
    """The operation strawberry runs: the one named, else the first."""
    for definition in prepared.document.definitions:
        if isinstance(definition, OperationDefinitionNode) and (
            name is None or (definition.name is not None and definition.name.value == name)
        ):
            return definition
    raise CannotGetOperationTypeError(name if name is not None else None)


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
        types: Iterable[type] = (),
        config: Any = None,
        sizes: Mapping[str, Size] | None = None,
        documents: Documents | None = None,
    ) -> None:
        super().__init__(query=query, types=list(types), config=config)
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

    def execute_sync(self, *args: Any, **kwargs: Any) -> ExecutionResult:
        """Not taken: the engine runs resolvers that await (use `execute`)."""
        raise NotImplementedError("LeadGreen's schema executes asynchronously: await execute()")
