"""Settings, read once from LEADGREEN_* environment variables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from db.fetch import DEFAULT_SOURCE


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LEADGREEN_", frozen=True, extra="forbid")

    database_url: str = Field(
        "leadgreen.db",
        description="A SQLite file path, or a sqlite+aiosqlite:// or postgresql+asyncpg:// URL",
    )
    source: str = Field(
        DEFAULT_SOURCE,
        description="Upstream snapshot (directory or http(s) base URL) ingested into an empty "
        "database on first start",
    )
    manifest: Path | None = Field(
        None, description="LeadGreen v1 index file giving the data's provenance and model entries"
    )
    host: str = Field("127.0.0.1", description="Address `leadgreen serve` listens on")
    port: int = Field(8000, description="Port `leadgreen serve` listens on")
    workers: int = Field(1, ge=1, description="uvicorn worker processes")
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["*"],
        description="Comma-separated origins a browser page may call the API from: '*' (any, "
        "the default; no credentials), a list to allow only those, or empty for none",
    )
    default_page_size: int = Field(50, ge=1, description="Page size when `first` is not given")
    max_page_size: int = Field(500, ge=1, description="Largest `first` a client may ask for")
    graphiql: bool = Field(True, description="Serve GraphiQL at /graphql to browsers")
    log_level: str = Field(
        "info",
        description="Lowest level logged (debug, info, warning, error); each request's log "
        "line is at info (warning or error for a 5xx)",
    )
    metrics: bool = Field(
        True, description="Count requests and serve Prometheus metrics at /metrics"
    )
    otel: bool = Field(
        False,
        description="OpenTelemetry tracing (needs leadgreen[otel]): a span per request and per "
        "database statement, to OTEL_EXPORTER_OTLP_ENDPOINT; also on when that is set",
    )
    public_base_url: str | None = Field(
        None,
        description="Scheme and host (e.g. https://api.example.org) that the v1 documents' "
        "`url` and `page` links use; by default the manifest's own",
    )
    cache: Literal["memory", "redis", "off"] = Field(
        "memory",
        description="Response cache: in this process, in Redis shared by every process "
        "(with an in-process copy in front), or off",
    )
    cache_max_entries: int = Field(10_000, ge=0, description="Most answers the cache keeps")
    cache_max_bytes: int = Field(
        128 * 1024 * 1024,
        ge=0,
        description="Most bytes every cache of a process holds together: answers, documents, "
        "requests, persisted queries and the catalogs of releases not served by default "
        "(shared out as the README's Memory section says)",
    )
    redis_url: str = Field(
        "redis://127.0.0.1:6379/0", description="Redis for LEADGREEN_CACHE=redis"
    )
    redis_ttl_seconds: int = Field(
        86_400, ge=1, description="How long Redis keeps an answer or a persisted query"
    )
    release_poll_seconds: float = Field(
        1.0,
        ge=0,
        description="Longest time a process answers from a release after a newer one is "
        "committed (0: look up the release on every request)",
    )
    http_max_age: int = Field(
        60, ge=0, description="Cache-Control max-age, in seconds, of successful GET answers"
    )
    gzip_min_bytes: int = Field(
        1024, ge=0, description="Smallest answer gzipped for a client that accepts gzip"
    )
    persisted_queries: int = Field(
        10_000, ge=0, description="Automatic persisted queries kept per process (0: APQ off)"
    )
    max_body_bytes: int = Field(
        1024 * 1024, ge=1, description="Largest request body accepted, in bytes"
    )
    max_url_bytes: int = Field(
        8192, ge=64, description="Longest request target (path and query string), in bytes"
    )
    max_header_bytes: int = Field(
        16_384, ge=1024, description="Most bytes a request's header fields may hold together"
    )
    max_headers: int = Field(100, ge=8, description="Most header fields a request may have")
    trusted_proxies: str = Field(
        "",
        description="Comma-separated addresses or networks of the reverse proxies whose "
        "X-Forwarded-For and X-Forwarded-Proto are believed ('*' for any); none by default",
    )
    request_timeout_seconds: float = Field(
        10.0,
        gt=0,
        description="Longest time a request may take, from its first byte read to its answer "
        "(504 REQUEST_TIMEOUT past it); also PostgreSQL's statement_timeout",
    )
    database_timeout_seconds: float = Field(
        3.0,
        gt=0,
        description="Longest wait for the database: to connect, for a pooled connection, for "
        "one statement's answer, for SQLite's lock (503 DATABASE_UNAVAILABLE past it)",
    )
    batch_max: int = Field(
        0,
        ge=0,
        le=100,
        description="Most operations in a batch (a JSON array body); 0: no batching",
    )
    # Query limits, applied by graph.engine.limits (see the README's "Limits").
    max_document_bytes: int = Field(
        65_536, ge=1, description="Largest GraphQL document accepted, in bytes (UTF-8)"
    )
    max_tokens: int = Field(5_000, ge=1, description="Most tokens a GraphQL document may hold")
    max_depth: int = Field(16, ge=1, description="Most levels of fields a query may nest")
    max_aliases: int = Field(30, ge=0, description="Most aliases a query may use")
    max_directives: int = Field(50, ge=0, description="Most directives a query may use")
    max_repeated_directives: int = Field(
        1, ge=1, description="Most uses of one directive at one location"
    )
    max_cost: int = Field(
        250_000, ge=1, description="Highest estimated cost (see graph/cost.py) a query may have"
    )
    max_fields: int = Field(
        1_000,
        ge=1,
        description="Most fields a query may select, a fragment's counted wherever it is spread",
    )
    max_field_merges: int = Field(
        2_000,
        ge=0,
        description="Most comparisons merging a query's repeated fields may take (fields "
        "selected twice at one place, fragments spread side by side; see graph/engine/breadth.py)",
    )
    field_suggestions: bool = Field(
        True, description='Suggest field and argument names ("Did you mean ...?") in errors'
    )
    rate_limit: bool = Field(False, description="Limit each client's query cost per second")
    rate_limit_capacity: int = Field(
        250_000, ge=1, description="Cost points a client's bucket holds"
    )
    rate_limit_restore_rate: float = Field(
        12_500.0, gt=0, description="Cost points a client's bucket regains each second"
    )
    rate_limit_byte_cost: float = Field(
        4.0,
        ge=0,
        description="Cost points a client pays per byte of a document this process has not "
        "prepared yet (spaces, newlines and commas an eighth of it), before it is parsed and "
        "validated",
    )
    rate_limit_store: Literal["auto", "memory", "redis"] = Field(
        "auto",
        description="Where the buckets live: in this process, or in Redis shared by every "
        "process (auto: Redis when LEADGREEN_CACHE=redis)",
    )
    # A string, not a list: `leadgreen serve` hands settings to its workers as str(value).
    api_keys: str = Field(
        "",
        description="Comma-separated API keys: a request whose X-API-Key is one of them pays "
        "from the key's bucket, any other from its address's",
    )

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str):
            return [origin.strip() for origin in value.split(",") if origin.strip()]
        return value
