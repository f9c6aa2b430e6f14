"""Settings: what a deployment sets, read once from LEADGREEN_* environment variables (the table
in docs/deployment.md and the README's); the limits one request is held to, as one named
profile (LEADGREEN_LIMITS); and a few values no deployment sets, which tests give the
constructor."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from db.fetch import DEFAULT_SOURCE


def _comma_separated(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


# Every list setting: comma-separated in the environment, a list in code.
CommaList = Annotated[list[str], NoDecode, BeforeValidator(_comma_separated)]


class RequestLimits(BaseModel):
    """What one request may ask for: the values a limits profile sets (their defaults are the
    `standard` profile's). graph.engine.limits applies the document's, the edge the head's."""

    max_body_bytes: int = Field(1024 * 1024, ge=1, description="Largest request body, in bytes")
    max_url_bytes: int = Field(
        8192, ge=64, description="Longest request target (path and query string), in bytes"
    )
    max_header_bytes: int = Field(
        16_384, ge=1024, description="Most bytes a request's header fields may hold together"
    )
    max_headers: int = Field(100, ge=8, description="Most header fields a request may have")
    max_document_bytes: int = Field(
        65_536, ge=1, description="Largest GraphQL document, in bytes (UTF-8)"
    )
    max_tokens: int = Field(
        5_000, ge=1, description="Most tokens a GraphQL document may hold, comments included"
    )
    max_depth: int = Field(
        16, ge=1, description="Most levels of fields a query may nest, fragments spread"
    )
    max_aliases: int = Field(
        30, ge=0, description="Most aliases a query may use, fragments counted where spread"
    )
    max_directives: int = Field(50, ge=0, description="Most directives a query may use")
    max_repeated_directives: int = Field(
        1, ge=1, description="Most uses of one directive at one location"
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
        "selected twice at one place, fragments spread side by side)",
    )
    max_cost: int = Field(
        250_000, ge=1, description="Highest estimated cost a query may have (errors-and-limits)"
    )
    default_page_size: int = Field(50, ge=1, description="Page size when `first` is not given")
    # The largest task of the data (text-to-image, 638 configurations) in one page, with room:
    # a whole task's plans or configurations in one request (issue 19). What a page may cost
    # is max_cost's to bound, in every profile.
    max_page_size: int = Field(
        1_000, ge=1, description="Largest `first` a client may ask for (a whole task fits)"
    )
    batch_max: int = Field(
        0,
        ge=0,
        le=100,
        description="Most operations in a batch (a JSON array body); 0: no batching",
    )
    field_suggestions: bool = Field(
        True, description='Suggest field and argument names ("Did you mean ...?") in errors'
    )
    rate_limit_capacity: int = Field(
        250_000, ge=1, description="Cost points a client's bucket holds (with LEADGREEN_RATE_LIMIT)"
    )
    rate_limit_restore_rate: float = Field(
        12_500.0, gt=0, description="Cost points a client's bucket regains each second"
    )
    rate_limit_byte_cost: float = Field(
        4.0,
        ge=0,
        description="Cost points a client pays per byte of a document this process has not "
        "prepared yet (spaces, newlines and commas an eighth of it), before it is parsed",
    )


# The limits profiles: what each changes of the standard one's values.
PROFILES: dict[str, dict[str, Any]] = {
    # What the API is tested and measured with: the model page, GraphiQL's introspection and
    # every documented query fit with room to spare.
    "standard": {},
    # A public endpoint that should stay cheap under abuse: smaller requests and costs, no
    # suggestions in errors, a smaller bucket (the model page and GraphiQL still fit). Its
    # page is the standard one, so that a whole task fits; max_cost bounds what a page costs.
    "strict": {
        "max_body_bytes": 256 * 1024,
        "max_url_bytes": 4096,
        "max_header_bytes": 8192,
        "max_headers": 50,
        "max_document_bytes": 16_384,
        "max_tokens": 2_000,
        "max_aliases": 10,
        "max_directives": 20,
        "max_fields": 500,
        "max_field_merges": 1_000,
        "max_cost": 100_000,
        "field_suggestions": False,
        "rate_limit_capacity": 100_000,
        "rate_limit_restore_rate": 5_000.0,
        "rate_limit_byte_cost": 8.0,
    },
    # Trusted clients (an internal dashboard, partners behind a gateway): larger documents and
    # pages, batches of up to 20, a larger bucket.
    "generous": {
        "max_body_bytes": 8 * 1024 * 1024,
        "max_url_bytes": 16_384,
        "max_header_bytes": 65_536,
        "max_headers": 200,
        "max_document_bytes": 512 * 1024,
        "max_tokens": 50_000,
        "max_depth": 32,
        "max_aliases": 200,
        "max_directives": 500,
        "max_fields": 10_000,
        "max_field_merges": 20_000,
        "max_cost": 2_500_000,
        "max_page_size": 5_000,
        "batch_max": 20,
        "rate_limit_capacity": 2_500_000,
        "rate_limit_restore_rate": 125_000.0,
        "rate_limit_byte_cost": 1.0,
    },
}


def profile(spec: str) -> dict[str, str | Any]:
    """The values a LEADGREEN_LIMITS value names: a profile, then any of its values changed
    (`strict,max_cost=50000`); ValueError for a profile or value it does not know."""
    name, *changes = [part.strip() for part in spec.split(",") if part.strip()] or ["standard"]
    if name not in PROFILES:
        raise ValueError(f"unknown limits profile {name!r}: one of {', '.join(PROFILES)}")
    values: dict[str, Any] = dict(PROFILES[name])
    for change in changes:
        key, equals, value = change.partition("=")
        key = key.strip()
        if not equals or key not in RequestLimits.model_fields:
            raise ValueError(
                f"{change!r} does not change a limit: NAME=VALUE, NAME one of "
                f"{', '.join(RequestLimits.model_fields)}"
            )
        values[key] = value.strip()
    return values


class Tuning(BaseModel):
    """Values no deployment sets (not read from the environment): tests give them."""

    database_timeout_seconds: float = Field(
        3.0,
        gt=0,
        description="Longest wait for the database: to connect, for a pooled connection, for "
        "one statement's answer, for SQLite's lock (503 DATABASE_UNAVAILABLE past it)",
    )
    persisted_queries: int = Field(
        10_000, ge=0, description="Automatic persisted queries kept per process (0: APQ off)"
    )
    compress_min_bytes: int = Field(
        1024,
        ge=0,
        description="Smallest answer compressed (brotli or gzip) for a client that accepts it",
    )
    replay: bool = Field(
        True,
        description="Answer a request the same, byte for byte, as one answered from the "
        "response cache with the same response at once, from `leadgreen serve`'s protocol "
        "(a new request id, its log line and metrics; never with rate limiting or tracing)",
    )


# Settings there were once: each is refused by name, so that no deployment's value of one is
# silently dropped (a limit it set would no longer hold).
RETIRED = ("gzip_min_bytes", "cache_max_entries", "redis_ttl_seconds", "rate_limit_store")


class Settings(BaseSettings, RequestLimits, Tuning):
    """Every setting: the deployment's (the fields declared here), the limits profile's values
    (`RequestLimits`, from LEADGREEN_LIMITS) and `Tuning`'s."""

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
    public_base_url: str | None = Field(
        None,
        description="Scheme and host (e.g. https://api.example.org) that the v1 documents' "
        "`url` and `page` links use; by default the manifest's own",
    )
    cors_origins: CommaList = Field(
        default_factory=lambda: ["*"],
        description="Comma-separated origins a browser page may call the API from: '*' (any, "
        "the default; no credentials), a list to allow only those, or empty for none",
    )
    trusted_proxies: CommaList = Field(
        default_factory=list,
        description="Comma-separated addresses or networks of the reverse proxies whose "
        "X-Forwarded-For and X-Forwarded-Proto are believed ('*' for any); none by default",
    )
    graphiql: bool = Field(True, description="Serve GraphiQL at /graphql to browsers")
    metrics: bool = Field(
        True, description="Count requests and serve Prometheus metrics at /metrics"
    )
    otel: bool = Field(
        False,
        description="OpenTelemetry tracing (needs leadgreen[otel]): a span per request and per "
        "database statement, to OTEL_EXPORTER_OTLP_ENDPOINT; also on when that is set",
    )
    log_level: str = Field(
        "info",
        description="Lowest level logged (debug, info, warning, error); each request's log "
        "line is at info (warning or error for a 5xx)",
    )
    cache: Literal["memory", "redis", "off"] = Field(
        "memory",
        description="Response cache: in this process, in Redis shared by every process "
        "(with an in-process copy in front; the persisted queries and rate-limit buckets are "
        "shared there too), or off",
    )
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
    release_poll_seconds: float = Field(
        1.0,
        ge=0,
        description="Longest time a process answers from a release after a newer one is "
        "committed (0: look up the release on every request)",
    )
    http_max_age: int = Field(
        60, ge=0, description="Cache-Control max-age, in seconds, of successful GET answers"
    )
    request_timeout_seconds: float = Field(
        10.0,
        gt=0,
        description="Longest time a request may take, from its first byte read to its answer "
        "(504 REQUEST_TIMEOUT past it); also PostgreSQL's statement_timeout. A request waits "
        "for the database 3/4 of it at most (503 DATABASE_UNAVAILABLE past that)",
    )
    client_timeout_seconds: float = Field(
        10.0,
        gt=0,
        description="Longest time `leadgreen serve` waits for a request's head from its first "
        "byte (or the connection's start), and for the next chunk of its body; past it 408 "
        "REQUEST_TIMEOUT where an answer can be sent, and the connection is closed. Also how "
        "long answers may wait for a client that reads none of them before it is dropped",
    )
    max_connections: int = Field(
        1024,
        ge=1,
        description="Most connections a `leadgreen serve` process holds open; one more is "
        "answered 503 OVERLOADED with Retry-After and closed",
    )
    max_in_flight: int = Field(
        64,
        ge=1,
        description="Most GraphQL requests a process answers at once (each counted once read "
        "whole); past it 503 OVERLOADED with Retry-After, so that the admitted keep their latency",
    )
    max_subscriptions: int = Field(
        1000,
        ge=0,
        description="Most subscriptions a process holds open at once (over SSE and WebSocket); "
        "one more is refused TOO_MANY_SUBSCRIPTIONS",
    )
    max_subscriptions_per_client: int = Field(
        5,
        ge=0,
        description="Most subscriptions one client (its API key, else its address) holds open "
        "in a process; one more is refused TOO_MANY_SUBSCRIPTIONS",
    )
    subscription_heartbeat_seconds: float = Field(
        10.0,
        gt=0,
        description="Interval of a subscription's heartbeat: an SSE comment, a WebSocket ping "
        "(below a proxy's read timeout: nginx's is 15 s in deploy/nginx.conf)",
    )
    subscription_init_seconds: float = Field(
        5.0,
        gt=0,
        description="Time a WebSocket has to send `connection_init`; past it, closed 4408",
    )
    subscription_idle_seconds: float = Field(
        60.0,
        gt=0,
        description="A WebSocket running no subscription, and heard nothing from, this long "
        "is closed (1000); an SSE stream is its subscription and stays open",
    )
    limits: str = Field(
        "standard",
        description="The limits one request is held to: a profile (standard, strict or "
        "generous), optionally with some of its values changed (strict,max_cost=50000)",
    )
    rate_limit: bool = Field(False, description="Limit each client's query cost per second")
    api_keys: CommaList = Field(
        default_factory=list,
        description="Comma-separated API keys: a request whose X-API-Key is one of them pays "
        "from the key's bucket, any other from its address's",
    )
    partner_keys_file: Path | None = Field(
        None,
        description="A TOML file of partner keys (their SHA-256) and their tiers: bucket, "
        "largest cost per request, trusted documents only (docs/keys.md); read again when it "
        "changes. Needs LEADGREEN_RATE_LIMIT",
    )

    @model_validator(mode="before")
    @classmethod
    def _limits_of_the_profile(cls, data: Any) -> Any:
        """The profile's values, where the constructor does not give its own (an unknown
        profile is `limits`' error, below)."""
        if not isinstance(data, dict):
            return data
        try:
            values = profile(str(data.get("limits", "standard")))
        except ValueError:
            return data
        return {**values, **data}

    @model_validator(mode="after")
    def _keys_file_needs_rate_limiting(self) -> Settings:
        if self.partner_keys_file is not None and not self.rate_limit:
            raise ValueError(
                "LEADGREEN_PARTNER_KEYS_FILE needs LEADGREEN_RATE_LIMIT=true: a tier's quota is "
                "its rate-limit bucket"
            )
        return self

    @field_validator("limits")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        profile(value)
        return value

    def environment(self) -> dict[str, str]:
        """The deployment's settings as LEADGREEN_* variables (what `leadgreen serve` hands its
        workers), lists comma-separated as they are read."""
        found = {}
        for name in DEPLOYMENT:
            value = getattr(self, name)
            if value is not None:
                shown = ",".join(value) if isinstance(value, list) else str(value)
                found[f"LEADGREEN_{name.upper()}"] = shown
        return found

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _Environment(settings_cls)


# The settings a deployment makes: what the environment is read for.
DEPLOYMENT = tuple(
    name
    for name in Settings.model_fields
    if name not in RequestLimits.model_fields and name not in Tuning.model_fields
)
_NOT_READ = {
    f"LEADGREEN_{name.upper()}"
    for name in (*RequestLimits.model_fields, *Tuning.model_fields, *RETIRED)
}


class _Environment(EnvSettingsSource):
    """The LEADGREEN_* variables of the deployment's settings; one that names anything else of
    the settings (a profile's value, a retired setting) is an error saying where it went."""

    def __call__(self) -> dict[str, Any]:
        stale = sorted(name for name in os.environ if name.upper() in _NOT_READ)
        if stale:
            raise ValueError(
                f"{', '.join(stale)}: not read. The limits a request is held to are one "
                "setting, LEADGREEN_LIMITS (a profile, and any of its values changed: "
                "LEADGREEN_LIMITS=standard,max_depth=20); docs/deployment.md lists the settings"
            )
        return {k: v for k, v in super().__call__().items() if k in DEPLOYMENT}
