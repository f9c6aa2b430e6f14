"""Plain fields: those that only read an attribute holding a built-in scalar, an enum or a list
of them (a configuration's figures, a curve's points), completed together per object.

graphql-core completes every field on its own (a resolve info, a resolver call, a completion, a
coercion): about 3 µs a field, which for a model page's 550 figures is most of the answer's
time. Here the plain fields of a selection are completed by one function, written for the
selection once (as dataclasses and attrs write `__init__`): each field read, coerced with
graphql-core's own coercion unless the value is one it returns unchanged (a finite float, a
32-bit int, a str, a bool), and stored. When a plain field holds something else it cannot take
as it is (a null where the schema forbids one, a value that does not coerce), the function
answers None and the object is completed field by field (graph/engine/completion.py), which
reports it as graphql-core does: reading an attribute has no effect, so reading it twice
changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from keyword import iskeyword
from operator import attrgetter
from typing import Any

from graphql import (
    GraphQLEnumType,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    Undefined,
    is_list_type,
    is_non_null_type,
    is_specified_scalar_type,
)
from graphql.type import scalars

TYPENAME = "__typename"
# Directives graphql-core applies while collecting a selection (a plan is made per request where
# they read variables): a field they leave is plain.
COLLECTED = frozenset({"include", "skip"})
# A Python name written into generated code as it is: ASCII letters, digits and underscores.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INT_RANGE = (scalars.GRAPHQL_MIN_INT, scalars.GRAPHQL_MAX_INT)


# What a coercion returns unchanged: such a value needs no call (the coercion's own test).
UNCHANGED: dict[Callable[[Any], Any], str] = {
    # A finite float less itself is 0.0; an infinity or a NaN less itself is a NaN.
    scalars.serialize_float: "{v}.__class__ is float and {v} - {v} == 0.0",
    scalars.serialize_int: f"{{v}}.__class__ is int and {INT_RANGE[0]} <= {{v}} <= {INT_RANGE[1]}",
    scalars.serialize_string: "{v}.__class__ is str",
    scalars.serialize_id: "{v}.__class__ is str",
    scalars.serialize_boolean: "{v}.__class__ is bool",
}


# A plain field: its response key, the attribute it reads (None for __typename), how to coerce
# a value, whether null is forbidden, and for a list of leaves whether a null item is (None for
# a leaf). A tuple, as the loop over them is the hot path.
Step = tuple[str, str | None, Callable[[Any], Any], bool, bool | None]


@dataclass(frozen=True, slots=True)
class Plan:
    """How to complete one selection on one object type."""

    type_name: str
    steps: tuple[Step, ...]
    order: tuple[str, ...]  # every response key, in the selection's order
    usual: frozenset[str]  # the keys that go the usual way
    # The plain fields' answers in the selection's order, or None for the usual way.
    complete: Callable[[Any], dict[str, Any] | None]


# The Python attribute a GraphQL field reads when it is resolved by reading it (None otherwise):
# strawberry's business, so the caller says (graph/internals.py).
Attribute = Callable[[Any], str | None]


def plan(
    parent: GraphQLObjectType, grouped_field_set: Mapping[str, Any], attribute: Attribute
) -> Plan | None:
    """How to complete the selection, or None when none of its fields is plain."""
    steps: list[Step] = []
    usual = set()
    for key, details in grouped_field_set.items():
        step = _step(parent, key, details, attribute)
        if step is None:
            usual.add(key)
        else:
            steps.append(step)
    if not steps:
        return None
    return Plan(
        parent.name,
        tuple(steps),
        tuple(grouped_field_set),
        frozenset(usual),
        _compiled(parent.name, steps),
    )


def _step(
    parent: GraphQLObjectType, key: str, details: list[Any], attribute: Attribute
) -> Step | None:
    """The field as a plain step, or None when it goes the usual way."""
    if any(
        d.fragment_variable_values is not None
        or any(x.name.value not in COLLECTED for x in d.node.directives or ())
        or d.node.arguments
        or d.node.selection_set
        for d in details
    ):
        return None
    name = details[0].node.name.value
    if name == TYPENAME:
        return (key, None, _same, True, None)
    field = parent.fields.get(name)
    if field is None or field.args:
        return None
    name_in_python = attribute(field)
    shape = None if name_in_python is None else _shape(field.type)
    if name_in_python is None or shape is None:
        return None
    coerce, non_null, items_non_null = shape
    return (key, name_in_python, coerce, non_null, items_non_null)


def _shape(type_: GraphQLOutputType) -> tuple[Callable[[Any], Any], bool, bool | None] | None:
    """(coerce, non-null, items non-null or None) for a leaf or a list of leaves."""
    non_null = is_non_null_type(type_)
    inner: Any = type_.of_type if non_null else type_  # type: ignore[union-attr]
    items_non_null = None
    if is_list_type(inner):
        item = inner.of_type
        items_non_null = is_non_null_type(item)
        inner = item.of_type if items_non_null else item
    if isinstance(inner, GraphQLEnumType) or (
        isinstance(inner, GraphQLScalarType) and is_specified_scalar_type(inner)
    ):
        return inner.coerce_output_value, non_null, items_non_null
    return None


def _same(value: Any) -> Any:
    return value


def _compiled(type_name: str, steps: list[Step]) -> Callable[[Any], dict[str, Any] | None]:
    """One function completing the steps: straight-line code, no loop, no call for a value
    its coercion would return unchanged. Keys are passed in, not written in; an attribute is
    written in only when it is a plain identifier (`source.name`), else read by attrgetter."""
    scope: dict[str, Any] = {"Undefined": Undefined, "items": coerced_items}
    body = []
    for i, (key, name, coerce, non_null, items_non_null) in enumerate(steps):
        v = f"v{i}"
        scope[f"key{i}"] = key
        if name is None:
            scope[v] = type_name
            continue
        scope[f"coerce{i}"] = coerce
        if _IDENTIFIER.fullmatch(name) and not iskeyword(name):
            body.append(f"{v} = source.{name}")
        else:
            scope[f"read{i}"] = attrgetter(name)
            body.append(f"{v} = read{i}(source)")
        body.append(f"if {v} is None:")
        body.append("    return None" if non_null else "    pass")
        if items_non_null is not None:
            body.append("else:")
            body.append(f"    {v} = items({v}, coerce{i}, {items_non_null})")
            body.append(f"    if {v} is None:")
            body.append("        return None")
            continue
        unchanged = UNCHANGED.get(coerce)
        if unchanged is not None:
            body.append(f"elif {unchanged.format(v=v)}:")
            body.append("    pass")
        body.append("else:")
        body.append(f"    {v} = coerce{i}({v})")
        body.append(f"    if {v} is None or {v} is Undefined:")
        body.append("        return None")
    answer = ", ".join(f"key{i}: v{i}" for i in range(len(steps)))
    source = "\n".join(
        [
            "def complete(source):",
            "    try:",
            *(f"        {line}" for line in body or ["pass"]),
            "    except Exception:",  # the usual way reports it, located
            "        return None",
            f"    return {{{answer}}}",
        ]
    )
    exec(compile(source, f"<plain fields of {type_name}>", "exec"), scope)
    complete: Callable[[Any], dict[str, Any] | None] = scope["complete"]
    return complete


def coerced_items(value: Any, coerce: Callable[[Any], Any], non_null: bool) -> list[Any] | None:
    """A list of leaves coerced, or None when an item does not fit (a null where the schema
    forbids one, a value that does not coerce)."""
    if not isinstance(value, list | tuple):
        return None
    items: list[Any] = []
    try:
        for item in value:
            if item is None:
                if non_null:
                    return None
                items.append(None)
                continue
            coerced = coerce(item)
            if coerced is None or coerced is Undefined:
                return None
            items.append(coerced)
    except Exception:  # completed item by item, which reports it
        return None
    return items


def rows(
    plan: Plan, items: list[Any] | tuple[Any, ...], is_type_of: Any, info: Any, non_null: bool
) -> tuple[list[Any], int] | None:
    """Objects of plain fields only (a table's rows), each completed by one call, and how many
    fields they hold together; None when some item must go the usual way."""
    complete = plan.complete
    completed: list[Any] = []
    fields = 0
    try:
        for item in items:
            if item is None:
                if non_null:
                    return None
                completed.append(None)
                continue
            if is_type_of is not None and is_type_of(item, info) is not True:
                return None
            data = complete(item)
            if data is None:
                return None
            fields += len(data)
            completed.append(data)
    except Exception:  # completed item by item, which reports it
        return None
    return completed, fields


def merged(plan: Plan, plain: dict[str, Any], rest: Mapping[str, Any]) -> dict[str, Any]:
    """Both parts in the selection's order (a field the type lacks is in neither)."""
    return {
        key: plain[key] if key in plain else rest[key]
        for key in plan.order
        if key in plain or key in rest
    }


async def merged_later(plan: Plan, plain: dict[str, Any], rest: Any) -> dict[str, Any]:
    return merged(plan, plain, await rest)
