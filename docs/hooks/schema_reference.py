"""MkDocs hook: the schema reference page, generated from `schema.graphql` as the site is built.

Every type, field, argument, input field and enum value of the committed schema, with its
description, default values and deprecations; each type has an anchor named after it
(`reference/schema.md#Release`) and each field one after its type and name
(`#Release-number`), and every type a field or argument names links to its anchor. The page
exists only in the built site: nothing is written into docs/.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    GraphQLUnionType,
    build_schema,
    get_named_type,
    print_ast,
)
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel

SCHEMA_FILE = "schema.graphql"
PAGE = "reference/schema.md"

# Sections of the page, in order: (heading, anchor, which types).
SECTIONS: tuple[tuple[str, str, type[GraphQLNamedType]], ...] = (
    ("Objects", "objects", GraphQLObjectType),
    ("Interfaces", "interfaces", GraphQLInterfaceType),
    ("Unions", "unions", GraphQLUnionType),
    ("Enums", "enums", GraphQLEnumType),
    ("Input objects", "input-objects", GraphQLInputObjectType),
    ("Scalars", "scalars", GraphQLScalarType),
)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


def _schema_path(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).parent / SCHEMA_FILE


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    if files.get_file_from_path(PAGE) is not None:
        raise ValueError(f"docs/{PAGE} is generated from {SCHEMA_FILE}: remove the file")
    sdl = _schema_path(config).read_text(encoding="utf-8")
    page = File.generated(config, PAGE, content=render(sdl), inclusion=InclusionLevel.INCLUDED)
    files.append(page)
    return files


def on_serve(server: Any, config: MkDocsConfig, **_: Any) -> Any:
    """`mkdocs serve` rebuilds when the schema changes, too."""
    server.watch(str(_schema_path(config)))
    return server


def render(sdl: str) -> str:
    """The reference page of a schema, as Markdown."""
    schema = build_schema(sdl)
    types = {name: t for name, t in schema.type_map.items() if not name.startswith("__")}
    lines = [
        "# Schema reference",
        "",
        f"Generated from `{SCHEMA_FILE}` (the output of `leadgreen export-schema`) when this",
        "site is built: every type, field, argument and enum value with its description. A",
        "type's name links to its entry; `!` marks a value that is never null, `[...]` a list.",
        "",
    ]
    roots = [t for t in (schema.query_type, schema.mutation_type, schema.subscription_type) if t]
    lines += ["## Root", ""]
    for root in roots:
        lines += _object(schema, root, level=3)
    for heading, anchor, kind in SECTIONS:
        members = [t for _, t in sorted(types.items()) if isinstance(t, kind) and t not in roots]
        if not members:
            continue
        lines += [f"## {heading} {{ #{anchor} }}", ""]
        for named in members:
            lines += _entry(schema, named)
    return "\n".join(lines).rstrip() + "\n"


def _entry(schema: GraphQLSchema, named: GraphQLNamedType) -> list[str]:
    if isinstance(named, GraphQLObjectType | GraphQLInterfaceType):
        return _object(schema, named, level=3)
    lines = _heading(named, 3, _kind(named))
    if isinstance(named, GraphQLUnionType):
        members = ", ".join(_link(t.name) for t in named.types)
        lines += [f"One of: {members}.", ""]
    elif isinstance(named, GraphQLEnumType):
        for value_name, value in named.values.items():
            lines += _item(f"`{value_name}`", f"{named.name}-{value_name}", value.description)
            if value.deprecation_reason:
                lines += [f"    *Deprecated:* {_text(value.deprecation_reason)}", ""]
    elif isinstance(named, GraphQLInputObjectType):
        for field_name, field in named.fields.items():
            lines += _input_field(named.name, field_name, field)
    elif isinstance(named, GraphQLScalarType) and named.specified_by_url:
        lines += [f"Specified by <{named.specified_by_url}>.", ""]
    return lines


def _object(
    schema: GraphQLSchema, named: GraphQLObjectType | GraphQLInterfaceType, level: int
) -> list[str]:
    lines = _heading(named, level, _kind(named))
    if named.interfaces:
        lines += ["Implements " + ", ".join(_link(i.name) for i in named.interfaces) + ".", ""]
    if isinstance(named, GraphQLInterfaceType):
        implementations = schema.get_implementations(named)
        by = sorted(t.name for t in (*implementations.objects, *implementations.interfaces))
        if by:
            lines += ["Implemented by " + ", ".join(_link(name) for name in by) + ".", ""]
    for field_name, field in named.fields.items():
        lines += _field(named.name, field_name, field)
    return lines


def _heading(named: GraphQLNamedType, level: int, kind: str) -> list[str]:
    lines = [f"{'#' * level} {named.name} {{ #{named.name} }}", "", f"*{kind}*", ""]
    if named.description:
        lines += [_text(named.description), ""]
    return lines


def _kind(named: GraphQLNamedType) -> str:
    for kind, name in (
        (GraphQLObjectType, "Object type"),
        (GraphQLInterfaceType, "Interface"),
        (GraphQLUnionType, "Union"),
        (GraphQLEnumType, "Enum"),
        (GraphQLInputObjectType, "Input object"),
        (GraphQLScalarType, "Scalar"),
    ):
        if isinstance(named, kind):
            return name
    raise TypeError(f"unexpected type {named!r}")


def _field(owner: str, name: str, field: GraphQLField) -> list[str]:
    lines = _item(f"`{name}`: {_type(field.type)}", f"{owner}-{name}", field.description)
    if field.deprecation_reason:
        lines += [f"    *Deprecated:* {_text(field.deprecation_reason)}", ""]
    if field.args:
        lines += ["    Arguments:", ""]
        for arg_name, arg in field.args.items():
            lines += _argument(arg_name, arg)
    return lines


def _argument(name: str, arg: GraphQLArgument) -> list[str]:
    head = f"`{name}`: {_type(arg.type)}{_default(arg)}"
    lines = [f"    - {head}"]
    if arg.description:
        lines += ["", _indent(_text(arg.description), 8)]
    if arg.deprecation_reason:
        lines += ["", f"        *Deprecated:* {_text(arg.deprecation_reason)}"]
    return [*lines, ""]


def _input_field(owner: str, name: str, field: GraphQLInputField) -> list[str]:
    lines = _item(
        f"`{name}`: {_type(field.type)}{_default(field)}", f"{owner}-{name}", field.description
    )
    if field.deprecation_reason:
        lines += [f"    *Deprecated:* {_text(field.deprecation_reason)}", ""]
    return lines


def _item(head: str, anchor: str, description: str | None) -> list[str]:
    """A list item whose first line has an anchor of its own, its description below."""
    lines = [f"- {head}", f"    {{ #{anchor} }}", ""]
    if description:
        lines += [_indent(_text(description), 4), ""]
    return lines


def _default(value: GraphQLArgument | GraphQLInputField) -> str:
    node = value.ast_node
    if node is None or node.default_value is None:
        return ""
    return f" = `{print_ast(node.default_value)}`"


def _type(type_: Any) -> str:
    """The type as written in SDL (`[Release!]!`), in code, linked to its named type."""
    return f"[`{type_}`](#{get_named_type(type_).name})"


def _link(name: str) -> str:
    return f"[`{name}`](#{name})"


def _text(description: str) -> str:
    """A description as Markdown: `<` and `>` outside code spans are text, not HTML."""
    parts, last = [], 0
    for match in _CODE_SPAN.finditer(description):
        parts.append(_escape(description[last : match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(_escape(description[last:]))
    return "".join(parts).strip()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _indent(text: str, spaces: int) -> str:
    return "\n".join((" " * spaces + line) if line.strip() else "" for line in text.splitlines())
