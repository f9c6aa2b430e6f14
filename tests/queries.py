"""Hypothesis strategies for GraphQL requests over a schema: an operation with variables,
arguments given as literals or variables, @include and @skip (by literals and variables),
aliases, inline and named fragments, introspection fields, and now and then an error on
purpose: an argument literal or a variable value of the wrong type, a value the resolvers
refuse (from `known`, by argument name), a second operation named by `operationName`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    GraphQLInputObjectType,
    GraphQLSchema,
    SchemaMetaFieldDef,
    TypeMetaFieldDef,
    Undefined,
    get_named_type,
    is_abstract_type,
    is_enum_type,
    is_input_object_type,
    is_leaf_type,
    is_list_type,
    is_non_null_type,
    is_union_type,
)
from hypothesis import strategies as st

# A request holds a value of the wrong type on purpose one time in WRONG, at one place.
WRONG = 4


@dataclass(frozen=True)
class Request:
    query: str
    variables: dict[str, Any]
    operation_name: str | None


@dataclass(frozen=True)
class EnumName:
    """An enum value: written bare in a document, as a string in variables."""

    name: str


@dataclass
class _Writer:
    draw: Any
    schema: GraphQLSchema
    known: Mapping[str, Sequence[Any]]
    definitions: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    fragments: list[str] = field(default_factory=list)
    keys: int = 0
    wrongs: int = 0  # values of the wrong type still to write

    def wrong_now(self) -> bool:
        """Whether to write the next value of the wrong type."""
        if self.wrongs and self.draw(st.integers(0, 3)) == 0:
            self.wrongs -= 1
            return True
        return False

    def selection(self, type_: Any, depth: int) -> str:
        """A selection on an object, interface or union type."""
        draw = self.draw
        names = [] if is_union_type(type_) else sorted(type_.fields)
        if type_ is self.schema.query_type:
            names += ["__schema", "__type"]
        parts = []
        for name in draw(st.lists(st.sampled_from(names), min_size=1, max_size=4)) if names else []:
            part = self.field(type_, name, depth)
            if part:
                parts.append(part)
        if draw(st.integers(0, 3)) == 0 or not parts:
            parts.append("__typename" + self.directive())
        possible = self._possible(type_)
        if depth > 0 and draw(st.integers(0, 3)) == 0:
            on = draw(st.sampled_from(possible))
            parts.append(
                f"... on {on.name}{self.directive()} {{ {self.selection(on, depth - 1)} }}"
            )
        if depth > 0 and draw(st.integers(0, 4)) == 0:
            on = draw(st.sampled_from([type_, *possible]))
            name = f"F{len(self.fragments)}"
            self.fragments.append("")  # its place, so that fragments inside take the next names
            inner = self.selection(on, depth - 1)
            self.fragments[int(name[1:])] = f"fragment {name} on {on.name} {{ {inner} }}"
            parts.append(f"...{name}{self.directive()}")
        return " ".join(parts)

    def _possible(self, type_: Any) -> list[Any]:
        if is_abstract_type(type_):
            return sorted(self.schema.get_possible_types(type_), key=lambda t: t.name)
        return [type_]

    def field(self, parent: Any, name: str, depth: int) -> str | None:
        draw = self.draw
        if name == "__schema":
            definition = SchemaMetaFieldDef
        elif name == "__type":
            definition = TypeMetaFieldDef
        else:
            definition = parent.fields[name]
        named = get_named_type(definition.type)
        if not is_leaf_type(named) and depth == 0:
            return None
        arguments = self.arguments(definition)
        # Fields with arguments get keys of their own (repeats with others would not merge).
        alias = ""
        if arguments or draw(st.integers(0, 4)) == 0:
            alias = f"k{self.keys}: "
            self.keys += 1
        head = alias + name + arguments + self.directive()
        if is_leaf_type(named):
            return head
        return f"{head} {{ {self.selection(named, depth - 1)} }}"

    def directive(self) -> str:
        draw = self.draw
        if draw(st.integers(0, 5)) != 0:
            return ""
        which = draw(st.sampled_from(["include", "skip"]))
        condition = draw(st.booleans())
        if draw(st.booleans()):
            return f" @{which}(if: {self.variable('Boolean!', condition)})"
        return f" @{which}(if: {str(condition).lower()})"

    def arguments(self, definition: Any) -> str:
        draw = self.draw
        parts = []
        for name, argument in definition.args.items():
            required = is_non_null_type(argument.type) and argument.default_value is Undefined
            if not required and draw(st.booleans()):
                continue
            value = self.value(argument.type, name)
            if draw(st.integers(0, 2)) == 0:
                parts.append(f"{name}: {self.variable(str(argument.type), value)}")
            elif self.wrong_now():
                parts.append(f"{name}: {_literal(self.wrong(argument.type))}")
            else:
                parts.append(f"{name}: {_literal(value)}")
        return f"({', '.join(parts)})" if parts else ""

    def variable(self, type_: str, value: Any) -> str:
        """A variable of `type_` holding `value` (now and then a value of another type, or
        none where the type allows it)."""
        draw = self.draw
        name = f"v{len(self.definitions)}"
        self.definitions.append(f"${name}: {type_}")
        if not type_.endswith("!") and draw(st.integers(0, 4)) == 0:
            return f"${name}"  # not given
        if self.wrong_now():
            value = draw(st.sampled_from([{"x": 1}, "nope", 12.5, True, [1]]))
        self.values[name] = _json(value)
        return f"${name}"

    def value(self, type_: Any, name: str) -> Any:
        """A value of the input type: from `known` for its argument's name, else by type."""
        draw = self.draw
        if is_non_null_type(type_):
            inner = type_.of_type
        else:
            inner = type_
            if draw(st.integers(0, 9)) == 0:
                return None
        if name in self.known and not is_input_object_type(inner):
            return draw(st.sampled_from(list(self.known[name])))
        if is_list_type(inner):
            size = draw(st.integers(0, 3))
            return [self.value(inner.of_type, name) for _ in range(size)]
        if is_input_object_type(inner):
            return self.input_object(inner)
        if is_enum_type(inner):
            return EnumName(draw(st.sampled_from(sorted(inner.values))))
        return draw(_SCALARS.get(inner.name, st.just("x")))

    def input_object(self, type_: GraphQLInputObjectType) -> dict[str, Any]:
        draw = self.draw
        fields = {}
        for name, input_field in type_.fields.items():
            required = is_non_null_type(input_field.type) and input_field.default_value is Undefined
            if required or draw(st.integers(0, 2)) == 0:
                fields[name] = self.value(input_field.type, name)
        return fields

    def wrong(self, type_: Any) -> Any:
        """A literal no argument of the type takes."""
        named = get_named_type(type_)
        return 12.5 if is_enum_type(named) or named.name in ("String", "ID") else "nope"


_SCALARS = {
    "Int": st.integers(-3, 60),
    "Float": st.floats(-10, 1000, allow_nan=False, allow_infinity=False).map(lambda f: round(f, 3)),
    "Boolean": st.booleans(),
    "String": st.sampled_from(["", "x", "H100", "tiny-1b", "lm-arena-chat"]),
    "ID": st.sampled_from(["1", "x", "Q29uZmlndXJhdGlvbjox"]),
}


def _literal(value: Any) -> str:
    if isinstance(value, EnumName):
        return value.name
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return "{" + ", ".join(f"{k}: {_literal(v)}" for k, v in value.items()) + "}"


def _json(value: Any) -> Any:
    if isinstance(value, EnumName):
        return value.name
    if isinstance(value, list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value


@st.composite
def requests(
    draw: Any, schema: GraphQLSchema, known: Mapping[str, Sequence[Any]], depth: int = 3
) -> Request:
    """A request over the schema's query type, `depth` levels of selections deep."""
    writer = _Writer(draw, schema, known, wrongs=int(draw(st.integers(0, WRONG - 1)) == 0))
    selection = writer.selection(schema.query_type, depth)
    variables = f"({', '.join(writer.definitions)})" if writer.definitions else ""
    name = draw(st.sampled_from(["", "Asked"])) if not variables else "Asked"
    head = f"query {name}{variables} " if name else ""
    parts = [f"{head}{{ {selection} }}"]
    operation_name = None
    if name and draw(st.integers(0, 4)) == 0:  # another operation, not the one asked for
        parts.append("query Other { __typename }")
        operation_name = name
    parts.extend(writer.fragments)
    return Request(" ".join(parts), writer.values, operation_name)
