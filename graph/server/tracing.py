"""Optional OpenTelemetry tracing: a span per request and per database statement, never per
field (the fast execution path stays as it is).

On with LEADGREEN_OTEL=true, or when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), unless OTEL_SDK_DISABLED=true; it needs the `otel` extra
(`pip install 'leadgreen[otel]'`). Spans go to the process's tracer provider when one is set,
else to an OTLP/HTTP exporter configured by the standard OTEL_* variables. A request's span
continues the trace its `traceparent` header names.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from starlette.types import Scope

from graph.server.metrics import route_of
from graph.server.observe import Note

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer
    from sqlalchemy.ext.asyncio import AsyncEngine

    from graph.settings import Settings

log = logging.getLogger("leadgreen")
_PROPAGATED = (b"traceparent", b"tracestate", b"baggage")
_SPAN = "_leadgreen_span"


def wanted(settings: Settings) -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    return settings.otel or any(
        os.environ.get(name)
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def make_tracing(settings: Settings) -> Tracing | None:
    """Tracing as the settings and environment ask; None when off (or not installed)."""
    if not wanted(settings):
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        log.warning("tracing asked for, but OpenTelemetry is not installed: leadgreen[otel]")
        return None
    if not isinstance(trace.get_tracer_provider(), TracerProvider):  # nobody has set one
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        name = os.environ.get("OTEL_SERVICE_NAME", "leadgreen")
        provider = TracerProvider(resource=Resource.create({"service.name": name}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
    return Tracing(trace.get_tracer("leadgreen"))


class Tracing:
    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    async def request(self, scope: Scope, note: Note, answering: Awaitable[None]) -> None:
        """Answer the request within its span."""
        from opentelemetry import propagate  # imported once, then looked up
        from opentelemetry.trace import SpanKind, Status, StatusCode

        carrier = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in scope["headers"]
            if name in _PROPAGATED
        }
        method, route = scope["method"], route_of(scope["path"])
        with self.tracer.start_as_current_span(
            f"{method} {route}",
            context=propagate.extract(carrier),
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "url.path": scope["path"][:300],
                "http.route": route,
                "leadgreen.request_id": note.id.decode(),
            },
        ) as span:
            await answering
            span.set_attribute("http.response.status_code", note.status)
            if note.operation:
                span.set_attribute("graphql.operation.name", note.operation[:200])
            if note.cache is not None:
                span.set_attribute("leadgreen.cache", note.cache.decode().lower())
            if note.status >= 500 or note.status == 0:
                span.set_status(Status(StatusCode.ERROR))

    def instrument(self, engine: AsyncEngine) -> None:
        """A span per statement the engine runs, child of the request's."""
        from opentelemetry.trace import SpanKind, Status, StatusCode
        from sqlalchemy import event

        system = engine.dialect.name

        def before(
            _conn: Any, _cursor: Any, statement: str, _params: Any, context: Any, _many: bool
        ) -> None:
            verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "SQL"
            span = self.tracer.start_span(
                f"{verb} {system}",
                kind=SpanKind.CLIENT,
                attributes={"db.system": system, "db.statement": statement[:2000]},
            )
            setattr(context, _SPAN, span)

        def after(
            _conn: Any, _cursor: Any, _statement: str, _params: Any, context: Any, _many: bool
        ) -> None:
            span = getattr(context, _SPAN, None)
            if span is not None:
                span.end()
                setattr(context, _SPAN, None)

        def failed(error: Any) -> None:
            span = getattr(error.execution_context, _SPAN, None)
            if span is not None:
                span.record_exception(error.original_exception)
                span.set_status(Status(StatusCode.ERROR))
                span.end()
                setattr(error.execution_context, _SPAN, None)

        event.listen(engine.sync_engine, "before_cursor_execute", before)
        event.listen(engine.sync_engine, "after_cursor_execute", after)
        event.listen(engine.sync_engine, "handle_error", failed)
