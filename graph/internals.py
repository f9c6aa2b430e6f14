"""Everything LeadGreen takes from its libraries beyond their public API, in one module.

Each library has a section; nothing else in analysis/, db/ or graph/ reads a library's private
name (tests/test_internals.py scans the code for them), and each section's names are tested
where they are used, so that an upgrade that moves one fails a test instead of the service.

strawberry and graphql-core (graph/engine/ executes queries itself; strawberry builds the
schema):

- `core_schema`: the graphql-core schema a strawberry schema builds;
- `plain_attribute`: the attribute a field only reads (strawberry's default resolver);
- `resolver`: a field's resolver, called straight where strawberry's wrapper would only pass it
  its arguments unchanged, else the wrapper;
- `resolve_info`: the resolve info strawberry's executor gives a resolver (built by keyword);
- `collect_fields`, `collect_subfields`, `fragment_details`: graphql-core's collection of
  selections (@include and @skip applied), as its executor collects them;
- `EXTRA_RULES`: strawberry's own validation rules, which validation must add to graphql-core's;
- `CachedNames`: strawberry's name converter, each name converted once.

uvicorn and prometheus-client (graph/server/):

- `HttpToolsReader`: uvicorn's httptools protocol with the parser feeding and status line that
  graph/server/edge.py's BoundedHttp needs to read the request head itself, and the state it
  needs to time a slow client out (open connections, reading paused, whether an answer can be
  written, the request given up, every request given up before the connection is dropped);
- `add_to_histogram`: counts per bucket and their sum added to a histogram at once.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import httptools
from graphql import FieldNode, FragmentDefinitionNode, GraphQLField, GraphQLSchema
from graphql.execution.collect_fields import (
    CollectedFields,
    FieldDetails,
    FragmentDetails,
)
from graphql.execution.collect_fields import collect_fields as _collect_fields
from graphql.execution.collect_fields import collect_subfields as _collect_subfields
from prometheus_client import Histogram
from strawberry.schema.name_converter import NameConverter
from strawberry.schema.schema import _OperationContextAwareGraphQLResolveInfo
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule
from strawberry.types.base import StrawberryOptional
from strawberry.types.field import StrawberryField
from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)

__all__ = [
    "EXTRA_RULES",
    "CachedNames",
    "CollectedFields",
    "FieldDetails",
    "HttpToolsReader",
    "add_to_histogram",
    "collect_fields",
    "collect_subfields",
    "core_schema",
    "fragment_details",
    "plain_attribute",
    "resolve_info",
    "resolver",
    "set_field_directives",
]

# strawberry's validation rules beyond graphql-core's specified ones.
EXTRA_RULES = (MaybeNullValidationRule, OneOfInputValidationRule)

# A field's resolver called with (source, resolve info, graphql-core's arguments by name).
Resolve = Callable[[Any, Any, dict[str, Any]], Any]


def core_schema(schema: Any) -> GraphQLSchema:
    """The graphql-core schema of a strawberry schema."""
    core: GraphQLSchema = schema._schema
    return core


def plain_attribute(field: GraphQLField) -> str | None:
    """The Python attribute a field reads, when strawberry resolves it by reading just that
    (no resolver of its own, the default resolver); None otherwise."""
    definition = field.extensions.get("strawberry-definition")
    if (
        not isinstance(definition, StrawberryField)
        or not definition.is_basic_field
        or definition.default_resolver is not getattr
        or not getattr(field.resolve, "_is_default", False)
    ):
        return None
    return definition.python_name


def set_field_directives(
    schema: Any, type_name: str, field_name: str, directives: Sequence[object]
) -> None:
    """Add these schema directives to a built schema's field: strawberry prints a field's
    directives from its definition, which an object type shares with its interfaces' fields
    and with every schema built from the same types, so the field gets a copy of its own."""
    field = core_schema(schema).get_type(type_name).fields[field_name]  # type: ignore[union-attr]
    definition = field.extensions.get("strawberry-definition")
    if isinstance(definition, StrawberryField):
        own = copy.copy(definition)
        own.directives = [*definition.directives, *directives]
        field.extensions = {**field.extensions, "strawberry-definition": own}


# Argument types strawberry hands to a resolver as graphql-core coerced them.
_AS_THEY_ARE = (str, int, float, bool)


def resolver(field: GraphQLField, schema: GraphQLSchema) -> tuple[Resolve, bool] | None:
    """How to call a field's resolver, and whether the call reads its resolve info; None for a
    field without one (graphql-core's default resolver reads it).

    A strawberry field's resolver function is called as strawberry's wrapper calls it
    (`get_arguments`: the source as `self`, `root` or `parent`, a strawberry Info as `info`, the
    arguments by their Python names) when the wrapper would do nothing else: no field
    extensions (permissions are one), no exception handlers in the schema, and arguments that
    are built-in scalars, which strawberry's `convert_argument` returns unchanged. Any other
    field is called through its wrapper (`field.resolve`), as graphql-core calls it."""
    straight = straight_resolver(field, schema)
    if straight is not None:
        return straight
    resolve = field.resolve
    if resolve is None:
        return None

    def call(source: Any, info: Any, arguments: dict[str, Any]) -> Any:
        return resolve(source, info, **arguments)

    return call, True


def straight_resolver(field: GraphQLField, schema: GraphQLSchema) -> tuple[Resolve, bool] | None:
    definition = field.extensions.get("strawberry-definition")
    strawberry_schema = getattr(schema, "_strawberry_schema", None)
    if (
        not isinstance(definition, StrawberryField)
        or definition.base_resolver is None
        or definition.extensions
        or strawberry_schema is None
        or getattr(strawberry_schema, "exception_handlers", None)
    ):
        return None
    config = strawberry_schema.config
    names: dict[str, str] = {}
    for argument in definition.arguments:
        type_ = argument.type
        if type(type_) is StrawberryOptional:
            type_ = type_.of_type
        if type_ not in _AS_THEY_ARE:
            return None
        names[config.name_converter.from_argument(argument)] = argument.python_name
    if set(names) != set(field.args):
        return None
    function, info_class = definition.base_resolver, config.info_class
    with_self = function.self_parameter is not None
    as_source = [p.name for p in (function.parent_parameter, function.root_parameter) if p]
    info_name = function.info_parameter.name if function.info_parameter else None

    def call(source: Any, info: Any, arguments: dict[str, Any]) -> Any:
        kwargs = {names[name]: value for name, value in arguments.items()}
        for name in as_source:
            kwargs[name] = source
        if info_name is not None:
            kwargs[info_name] = info_class(_raw_info=info, _field=definition)
        return function(source, **kwargs) if with_self else function(**kwargs)

    return call, info_name is not None


def resolve_info(
    *,
    field_name: str,
    field_nodes: list[FieldNode],
    return_type: Any,
    parent_type: Any,
    path: Any,
    schema: GraphQLSchema,
    fragments: Mapping[str, FragmentDefinitionNode],
    root_value: Any,
    operation: Any,
    variable_values: dict[str, Any],
    context: Any,
    is_awaitable: Callable[[Any], bool],
    operation_extensions: dict[str, Any] | None,
) -> Any:
    """The resolve info strawberry's executor builds (graphql-core's, with the operation's
    extensions, and the variables as a plain dict), by keyword: a field strawberry adds to it
    fails here at once instead of shifting the others."""
    return _OperationContextAwareGraphQLResolveInfo(
        field_name=field_name,
        field_nodes=field_nodes,
        return_type=return_type,
        parent_type=parent_type,
        path=path,
        schema=schema,
        fragments=fragments,  # type: ignore[arg-type]
        root_value=root_value,
        operation=operation,
        variable_values=variable_values,
        context=context,
        is_awaitable=is_awaitable,
        abort_signal=None,  # no signal: LeadGreen's time limit cancels the request's task
        async_helpers=None,  # LeadGreen's resolvers gather nothing themselves
        operation_extensions=operation_extensions,  # type: ignore[arg-type]
    )


def fragment_details(
    fragments: Mapping[str, FragmentDefinitionNode],
) -> dict[str, FragmentDetails]:
    """The fragments as graphql-core's collection takes them (no fragment variables: the
    parser is not asked for them)."""
    return {name: FragmentDetails(definition, None) for name, definition in fragments.items()}


def collect_fields(
    schema: GraphQLSchema,
    fragments: dict[str, FragmentDetails],
    variables: Any,
    root: Any,
    operation: Any,
) -> CollectedFields:
    """The operation's root fields by response key, @include and @skip applied."""
    return _collect_fields(schema, fragments, variables, root, operation)


def collect_subfields(
    schema: GraphQLSchema,
    fragments: dict[str, FragmentDetails],
    variables: Any,
    operation: Any,
    type_: Any,
    details: list[FieldDetails],
) -> CollectedFields:
    """The fields selected on `type_` below the fields of `details`, by response key."""
    return _collect_subfields(schema, fragments, variables, operation, type_, details)


class CachedNames(NameConverter):
    """strawberry's names, each converted once and kept in `converted` (a bounded cache):
    strawberry converts every argument's name on every call of a resolver through its wrapper,
    by `apply_naming_config`."""

    def __init__(self, converted: MutableMapping[str, str]) -> None:
        super().__init__()
        self.converted = converted

    def apply_naming_config(self, name: str) -> str:
        converted = self.converted.get(name)
        if converted is None:
            converted = self.converted[name] = super().apply_naming_config(name)
        return converted


# --- uvicorn: its httptools protocol, as graph/server/edge.py's BoundedHttp extends it --------


class HttpToolsReader(HttpToolsProtocol):
    """uvicorn's httptools protocol, with the two steps of its `data_received` that a subclass
    reading the request head itself needs: feeding the parser, and the raw status line."""

    def feed(self, data: bytes) -> bool:
        """Hand `data` to the parser as uvicorn's `data_received` does (the keep-alive timer
        stopped, an upgrade handled); False when httptools cannot read it (a callback's
        exception included): the caller answers then, and closes."""
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError:
            return False
        return True

    def open_connections(self) -> int:
        """How many connections the process's server holds open (this one included)."""
        return len(self.connections)

    def forget(self) -> None:
        """This connection no longer counted among the server's open ones."""
        self.connections.discard(self)

    def reading_paused(self) -> bool:
        """Whether uvicorn stopped reading the socket (the app is not taking the body yet, or
        a pipelined request waits): the client is not the one waiting then."""
        return self.flow.read_paused

    def answerable(self, reading_body: bool) -> bool:
        """Whether an answer written now would be the connection's next response: none is
        being written, or queued (pipelined) before it."""
        if self.pipeline:
            return False
        if reading_body:
            return self.cycle is not None and not self.cycle.response_started
        return self.cycle is None or self.cycle.response_complete

    def drop_request(self) -> None:
        """The request being read is given up: its app is told the client has gone, and what
        it sends is dropped."""
        if self.cycle is not None:
            self.cycle.disconnected = True
            self.cycle.message_event.set()

    # The request being answered: the last one read (`cycle`) unless pipelined ones wait.
    answering: RequestResponseCycle | None = None

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        self.answering = cycle
        super()._start_asgi_task(cycle, app)

    def abandon(self) -> None:
        """Every request of the connection is given up, before it is dropped: the one being
        answered, the one being read and the pipelined ones waiting are told the client has
        gone (nothing more of theirs is written), and those waiting never start."""
        waiting = [cycle for cycle, _ in self.pipeline]
        self.pipeline.clear()
        for cycle in (self.answering, self.cycle, *waiting):
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True
                cycle.message_event.set()

    @staticmethod
    def status_line(status: int) -> bytes:
        """`HTTP/1.1 <status> <reason>\\r\\n`, as uvicorn writes it."""
        return STATUS_LINE[status]


# --- prometheus-client: a histogram's buckets, added to at once ------------------------------


def add_to_histogram(child: Histogram, buckets: Sequence[float], seconds: float) -> None:
    """Add counts per bucket (not cumulative, as `observe` keeps them) and their sum to a
    histogram at once. prometheus-client has no public call for it; tests/test_metrics.py
    checks that this agrees with `observe`."""
    for value, count in zip(child._buckets, buckets, strict=True):
        if count:
            value.inc(count)
    child._sum.inc(seconds)
