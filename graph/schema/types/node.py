"""Relay's Node: every object a client can fetch again by its id (`node(id:)`), with ids that
are the same in every release and every database where the object appears."""

from __future__ import annotations

import strawberry
from strawberry.federation.schema_directives import Key
from strawberry.federation.types import FieldSet

# The types a global id can name, by the prefix it starts with.
PREFIXES = ("Configuration", "Model", "Gpu", "Task", "Release")


@strawberry.interface(
    description="An object with a global id: `node(id:)` fetches it again. Ids are stable: "
    "the same in every release and every LeadGreen database where the object appears."
)
class Node:
    id: strawberry.ID = strawberry.field(
        description="Global id: `Type:key`, where the key is what identifies the object "
        "upstream (the documentation's 'Stable ids'). Treat it as an opaque string."
    )


def entity_keys(*fields: str) -> list[object]:
    """A type's `@key` directives, one per field (a Federation 2 entity: `_entities` resolves a
    representation of it by any one of these fields)."""
    return [Key(fields=FieldSet(field)) for field in fields]


def global_id(prefix: str, key: str) -> strawberry.ID:
    return strawberry.ID(f"{prefix}:{key}")


def parse_id(value: str) -> tuple[str, str] | None:
    """(prefix, key) of a global id, or None when it is not one."""
    prefix, sep, key = value.partition(":")
    return (prefix, key) if sep and key and prefix in PREFIXES else None
