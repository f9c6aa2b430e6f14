"""LeadGreen as a Federation 2 subgraph: strawberry's federation schema (`_service`,
`_entities`, the `@key`s of graph/schema/types) executed by the engine, with the demand-control
directives (`@cost`, `@listSize`) derived from the server's own cost (graph/schema/costs.py).

`_entities` is a list of the `_Entity` union, completed by the engine as any abstract type is;
each representation is resolved by graph/schema/answers/entities.py, an error of its own where
it names no entity. docs/federation.md says what each key resolves and how to compose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import strawberry
from strawberry.federation.schema import FederationAny
from strawberry.federation.schema_directives import Cost

from graph import internals
from graph.engine.cost import Size
from graph.engine.execution import Schema
from graph.schema.answers.entities import entities
from graph.schema.context import Context
from graph.schema.costs import assumed_size, demand_control

Info = strawberry.Info[Context, None]
# The Federation version the SDL links: 2.9 defines @cost and @listSize.
FEDERATION_VERSION = "2.9"


# The definitions of the directives the SDL links (Federation 2.9's, as its specification
# writes them): `_service { sdl }` leaves them out, as a gateway expects of a subgraph;
# schema.graphql (`as_str`) has them, so that any GraphQL tool reads it as it is.
LINKED_DEFINITIONS = """\
directive @link(url: String!, as: String, for: link__Purpose, import: [link__Import]) \
repeatable on SCHEMA

directive @key(fields: federation__FieldSet!, resolvable: Boolean = true) repeatable on \
OBJECT | INTERFACE

directive @cost(weight: Int!) on ARGUMENT_DEFINITION | ENUM | FIELD_DEFINITION | \
INPUT_FIELD_DEFINITION | OBJECT | SCALAR

directive @listSize(assumedSize: Int, slicingArguments: [String!], sizedFields: [String!], \
requireOneSlicingArgument: Boolean = true) on FIELD_DEFINITION

\"\"\"A selection of fields that identifies an entity (a `@key`'s `fields`).\"\"\"
scalar federation__FieldSet

\"\"\"An element of `@link`'s `import`: a name, or a name and what to call it.\"\"\"
scalar link__Import

\"\"\"What a linked specification is for.\"\"\"
enum link__Purpose {
  \"\"\"Access control: a gateway that does not understand it must not serve the schema.\"\"\"
  SECURITY

  \"\"\"How the schema executes.\"\"\"
  EXECUTION
}"""


DESCRIPTIONS = {
    "_Any": "A representation of an entity: its `__typename` and one of its keys' fields.",
    "_Entity": "The types a gateway can fetch by key (`_entities`): Federation 2 entities.",
    "_Service": "This subgraph, as a Federation 2 gateway composes it.",
    "_Service.sdl": "The subgraph's SDL: its types, keys and demand-control directives.",
    "Query._service": "This subgraph's SDL, for a gateway to compose (docs/federation.md).",
    "Query._entities": "The entities these representations name, in order: null where there "
    "is none in the release served, an error (BAD_REPRESENTATION) where a representation names "
    "no entity of this subgraph by one of its keys.",
    "Query._entities(representations)": "`{__typename, <key field>: value}` of each entity.",
}


class Federated(strawberry.federation.Schema):
    """strawberry's federation schema with LeadGreen's entities (`_entities`) and the
    demand-control directives (`add_demand_control`); executed by strawberry's own pipeline
    unless the engine's schema comes first (`Subgraph`)."""

    def add_demand_control(self, sizes: Mapping[str, Size], page_size: int) -> None:
        """Each field's @cost and @listSize (graph/schema/costs.py), printed in the SDL."""
        core = internals.core_schema(self)
        for (type_name, field_name), directives in demand_control(core, sizes, page_size).items():
            internals.set_field_directives(self, type_name, field_name, directives)

    def describe_federation(self) -> None:
        """Descriptions of the names strawberry's federation adds, which it leaves without."""
        core = internals.core_schema(self)
        for name, description in DESCRIPTIONS.items():
            type_name, _, field_name = name.partition(".")
            found: Any = core.get_type(type_name)
            if found is None:
                continue
            if field_name:
                field_name, _, argument = field_name.partition("(")
                found = found.fields[field_name]
                if argument:
                    found = found.args[argument.rstrip(")")]
            found.description = description

    def as_str(self) -> str:
        """The SDL (`_service { sdl }`) and the definitions of the directives it links."""
        return f"{super().as_str()}\n\n{LINKED_DEFINITIONS}"

    @property
    def schema_directives_in_use(self) -> list[object]:
        """strawberry's, with @cost and @listSize (set on the fields once the schema is built),
        so that the SDL's @link imports them."""
        return [*super().schema_directives_in_use, Cost(weight=1), assumed_size(1)]

    async def entities_resolver(  # type: ignore[override]
        self, info: Info, representations: list[FederationAny]
    ) -> list[FederationAny]:
        """`_entities`: each representation's object (graph/schema/answers/entities.py)."""
        found: list[Any] = await entities(info.context, representations)
        return found


class Subgraph(Schema, Federated):
    """The engine's schema as a Federation 2 subgraph."""

    def __init__(self, query: type, *, page_size: int = 50, **options: Any) -> None:
        """The engine's schema (`options`: its own), the SDL's cost directives for pages of
        `page_size` when `first` is not given (the settings' `default_page_size`)."""
        super().__init__(query, federation_version=FEDERATION_VERSION, **options)
        sizes: Mapping[str, Size] = options.get("sizes") or {}
        self.add_demand_control(sizes, page_size)
        self.describe_federation()
