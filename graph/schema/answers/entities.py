"""Federation's `_entities`: each representation a gateway sends, resolved to its object.

A representation is `{__typename, <one key field>}`; the entity types and their keys are the
`@key` directives of graph/schema/types (`entity_keys`). Every key is an id or a name that
`node(id:)` reads (history.node), so an entity resolves as `node` does: null when there is no
such object in the release served. A representation that is not of this form is an error of
its own (BAD_REPRESENTATION, with its index), and the others still resolve.
"""

from __future__ import annotations

from collections.abc import Sequence

from strawberry.federation.schema_directives import Key

from graph.errors import BadRepresentation
from graph.schema.answers import history
from graph.schema.context import Context
from graph.schema.types.gpu import Gpu
from graph.schema.types.model import Configuration, Model
from graph.schema.types.release import Release
from graph.schema.types.task import Task

ENTITY_TYPES: tuple[type, ...] = (Configuration, Gpu, Model, Release, Task)


def keys_of(type_: type) -> tuple[str, ...]:
    """The key fields of an entity type, in the order its `@key` directives give them."""
    directives = type_.__strawberry_definition__.directives or ()  # type: ignore[attr-defined]
    return tuple(str(d.fields) for d in directives if isinstance(d, Key))


ENTITIES: dict[str, tuple[type, tuple[str, ...]]] = {
    t.__name__: (t, keys_of(t)) for t in ENTITY_TYPES
}


async def entities(context: Context, representations: Sequence[object]) -> list[object]:
    """Each representation's object, None where there is none, or the error that it is not a
    representation of an entity (returned, so that it is that item's error alone)."""
    return [await entity(context, i, r) for i, r in enumerate(representations)]


async def entity(context: Context, index: int, representation: object) -> object:
    where = f"`representations[{index}]`"
    if not isinstance(representation, dict):
        return BadRepresentation(
            f"{where} is not an object: a representation is {{__typename, <key>}}"
        )
    name = representation.get("__typename")
    if not isinstance(name, str):
        return BadRepresentation(f"{where} has no `__typename` string")
    if name not in ENTITIES:
        return BadRepresentation(
            f"{where}: `{name}` is not an entity of this subgraph; its entities are "
            + ", ".join(f"`{n}`" for n in ENTITIES)
        )
    type_, keys = ENTITIES[name]
    fields = sorted(set(representation) - {"__typename"})
    if len(fields) != 1 or fields[0] not in keys:
        given = ", ".join(f"`{f}`" for f in fields) or "no field"
        return BadRepresentation(
            f"{where}: a `{name}` is found by exactly one of its keys ("
            + ", ".join(f"`{k}`" for k in keys)
            + f"), not by {given}"
        )
    key = fields[0]
    value = representation[key]
    if not isinstance(value, str):
        return BadRepresentation(f"{where}: `{name}.{key}` is a string, not {value!r}")
    found = await history.node(context, value if key == "id" else f"{name}:{value}")
    return found if isinstance(found, type_) else None
