"""Settings, read once from LEADGREEN_* environment variables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
        default_factory=list,
        description="Comma-separated origins allowed to call the API from a browser ('*' for any)",
    )
    default_page_size: int = Field(50, ge=1, description="Page size when `first` is not given")
    max_page_size: int = Field(500, ge=1, description="Largest `first` a client may ask for")
    graphiql: bool = Field(True, description="Serve GraphiQL at /graphql to browsers")
    log_level: str = Field("info", description="uvicorn log level")

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str):
            return [origin.strip() for origin in value.split(",") if origin.strip()]
        return value
