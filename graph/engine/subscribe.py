"""Subscriptions: an operation's source stream, and each of its events completed by the
operation's plan, as graphql-core's `subscribe` does (`create_source_event_stream`, then
`execute` of each event with the event as the root value).

The plan is the one a query's answer is built by (graph/engine/plan.py), made once per
document; its root field's value is the event (plan.py's `_event`). The stream comes from the
root field's `subscribe` (strawberry's wrapper of the resolver, an async generator), called
with graphql-core's arguments and resolve info. An error while the stream is made is the
answer (graphql-core's located error); an error the stream raises ends it, as the last event.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

from graphql import (
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    get_argument_values,
    located_error,
)
from graphql.pyutils import Path, inspect
from strawberry.types import ExecutionResult

from graph.engine import completion

# (data, errors, the cost counted) -> the result sent (errors coded and masked, its cost
# reported).
Answer = Callable[[dict[str, Any] | None, list[GraphQLError], int | None], ExecutionResult]


def _root_field(selection: completion.Selection) -> completion.Field:
    # Validation's SingleFieldSubscriptionsRule leaves exactly one root field.
    return selection.every[0]


async def source(
    core: GraphQLSchema,
    selection: completion.Selection,
    operation: OperationDefinitionNode,
    fragments: dict[str, Any],
    variables: Any,
    context: Any,
) -> AsyncIterable[Any] | GraphQLError:
    """The root field's event stream, or the error that prevented it."""
    field = _root_field(selection)
    run = completion.Run(core, operation, fragments, variables, context)
    path = Path(None, field.key, field.parent.name)
    subscribe = field.definition.subscribe
    assert subscribe is not None  # a field of the subscription type
    try:
        arguments = field.arguments
        if arguments is None:
            arguments = get_argument_values(
                field.definition, field.nodes[0], variables, field.fragment_variables
            )
        stream = subscribe(None, run.info(field, path), **arguments)
        if completion.is_awaitable(stream):
            stream = await stream
    except Exception as error:
        return located_error(error, field.nodes, path.as_list())
    if isinstance(stream, Exception):
        return located_error(stream, field.nodes, path.as_list())
    if not isinstance(stream, AsyncIterable):
        message = f"Subscription field must return AsyncIterable. Received: {inspect(stream)}."
        return GraphQLError(message, field.nodes, path=path.as_list())
    return stream


async def events(
    stream: AsyncIterable[Any],
    selection: completion.Selection,
    core: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: dict[str, Any],
    variables: Any,
    context: Any,
    answer: Answer,
) -> AsyncIterator[ExecutionResult]:
    """Each event of the stream, completed by the plan (one Run each); the stream is closed
    when the subscriber stops reading."""
    field = _root_field(selection)
    try:
        async for event in stream:
            run = completion.Run(core, operation, fragments, variables, context, event)
            data = await completion.execute(selection, run)
            yield answer(data, run.errors, run.cost)
    except Exception as error:
        path = [field.key]
        yield answer(None, [located_error(error, field.nodes, path)], None)
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
