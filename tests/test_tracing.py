"""OpenTelemetry tracing (LEADGREEN_OTEL): a span per request, a child span per SQL statement,
none per field; the caller's trace continued; off by default."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import app_client
from tests.test_cache import TINY_FILE

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind

pytestmark = pytest.mark.anyio

QUERY = 'query Tiny { model(slug: "tiny-1b") { name configurations { energyPerTokenJoules } } }'
_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider (set once per process), exporting to memory."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    if not getattr(provider, "_leadgreen_test", False):
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        provider._leadgreen_test = True  # type: ignore[attr-defined]
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


async def test_a_span_per_request_and_per_statement(synthetic_db, settings, spans) -> None:
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    async with app_client(settings, otel=True, release_poll_seconds=60) as (_, client):
        spans.clear()  # the startup's statements
        answer = await client.post(
            "/graphql", json={"query": QUERY}, headers={"traceparent": parent}
        )
        document = await client.get(f"/data/{TINY_FILE}")  # read from the database
    assert (answer.status_code, document.status_code) == (200, 200)
    finished = spans.get_finished_spans()
    requests = [s for s in finished if s.kind == SpanKind.SERVER]
    assert [s.name for s in requests] == ["POST /graphql", "GET /data"]
    graphql, data = requests
    assert dict(graphql.attributes or {}) == {
        "http.request.method": "POST",
        "url.path": "/graphql",
        "http.route": "/graphql",
        "leadgreen.request_id": answer.headers["x-request-id"],
        "http.response.status_code": 200,
        "graphql.operation.name": "Tiny",
        "leadgreen.cache": "miss",
    }
    assert graphql.context.trace_id == int("0af7651916cd43dd8448eb211c80319c", 16)
    statements = [s for s in finished if s.kind == SpanKind.CLIENT]
    under_data = [s for s in statements if s.parent and s.parent.span_id == data.context.span_id]
    systems = {s.attributes["db.system"] for s in under_data}
    assert systems in ({"sqlite"}, {"postgresql"})
    assert all(s.name.startswith("SELECT") for s in under_data)
    assert {s.parent.span_id for s in statements if s.parent} <= {
        graphql.context.span_id,
        data.context.span_id,
    }
    assert len(finished) < 40  # no span per field


async def test_off_by_default(synthetic_db, settings, monkeypatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    async with app_client(settings) as (app, _):
        assert app.state.tracing is None


async def test_an_otlp_endpoint_turns_it_on(synthetic_db, settings, monkeypatch, spans) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    async with app_client(settings) as (app, _):
        assert app.state.tracing is not None
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    async with app_client(settings) as (app, _):
        assert app.state.tracing is None
