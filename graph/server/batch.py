"""Batches: a JSON array of GraphQL requests, answered in turn as a JSON array."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.types import Message, Send

from graph.errors import Code
from graph.server import request as parse
from graph.server.request import Batch, GraphQLRequest, Refusal


class Collect:
    """A `send` that keeps the response, for the items of a batch."""

    def __init__(self) -> None:
        self.body = b""

    async def __call__(self, message: Message) -> None:
        self.body += message.get("body", b"")


async def answer_batch(
    items: Batch, limit: int, answer: Callable[[GraphQLRequest, Send], Awaitable[None]]
) -> bytes:
    """The answers of the batch's requests, each as `answer` sends it (a refusal as its body),
    as a JSON array; refused as a whole when batching is off or the batch is too large."""
    if limit == 0:
        raise Refusal(
            400,
            "Batching is off: send one operation (a JSON object) per request.",
            Code.BATCHING_DISABLED,
        )
    if not 1 <= len(items) <= limit:
        raise Refusal(
            400,
            f"A batch holds 1 to {limit} operations; this one has {len(items)}.",
            Code.BATCH_TOO_LARGE,
        )
    requests = [parse.from_item(item) for item in items]
    bodies = []
    for request in requests:
        collect = Collect()
        try:
            await answer(request, collect)
        except Refusal as refusal:
            collect.body = refusal.body
        bodies.append(collect.body)
    return b"[%s]" % b",".join(bodies)
