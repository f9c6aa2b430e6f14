"""Settings come from LEADGREEN_* variables; docs/deployment.md lists every one (test_docs)."""

from __future__ import annotations

import pytest

from graph.settings import Settings


def test_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEADGREEN_DATABASE_URL", "postgresql+asyncpg://u@h/db")
    monkeypatch.setenv("LEADGREEN_CORS_ORIGINS", "https://a.example, https://b.example")
    monkeypatch.setenv("LEADGREEN_MAX_PAGE_SIZE", "100")
    settings = Settings()
    assert (settings.database_url, settings.cors_origins, settings.max_page_size) == (
        "postgresql+asyncpg://u@h/db",
        ["https://a.example", "https://b.example"],
        100,
    )


def test_a_bad_value_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEADGREEN_WORKERS", "0")
    with pytest.raises(ValueError, match="workers"):
        Settings()
