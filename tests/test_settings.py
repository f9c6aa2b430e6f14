"""Settings come from LEADGREEN_* variables: about twenty a deployment sets, the request limits as
one profile, every list parsed the same way; docs/deployment.md's table and the README's list
every one (and the profiles' values)."""

from __future__ import annotations

import re

import pytest
from graphql import get_introspection_query

from graph.server.documents import MODEL_PAGE
from graph.settings import DEPLOYMENT, PROFILES, RETIRED, RequestLimits, Settings
from tests.conftest import ROOT, app_client


def test_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEADGREEN_DATABASE_URL", "postgresql+asyncpg://u@h/db")
    monkeypatch.setenv("LEADGREEN_CORS_ORIGINS", "https://a.example, https://b.example")
    monkeypatch.setenv("LEADGREEN_LIMITS", "standard,max_page_size=100")
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


def test_about_twenty_settings_a_deployment_makes() -> None:
    assert DEPLOYMENT == (
        "database_url",
        "source",
        "manifest",
        "host",
        "port",
        "workers",
        "public_base_url",
        "cors_origins",
        "trusted_proxies",
        "graphiql",
        "metrics",
        "otel",
        "log_level",
        "cache",
        "cache_max_bytes",
        "redis_url",
        "release_poll_seconds",
        "http_max_age",
        "request_timeout_seconds",
        "client_timeout_seconds",
        "max_connections",
        "max_in_flight",
        "max_subscriptions",
        "max_subscriptions_per_client",
        "subscription_heartbeat_seconds",
        "subscription_init_seconds",
        "subscription_idle_seconds",
        "limits",
        "rate_limit",
        "api_keys",
        "partner_keys_file",
    )


@pytest.mark.parametrize("name", ["cors_origins", "trusted_proxies", "api_keys"])
def test_every_list_is_comma_separated(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(f"LEADGREEN_{name.upper()}", " a, b ,,c ")
    assert getattr(Settings(), name) == ["a", "b", "c"]
    monkeypatch.setenv(f"LEADGREEN_{name.upper()}", "")
    assert getattr(Settings(), name) == []
    assert getattr(Settings(**{name: "x,y"}), name) == ["x", "y"]


def test_the_limits_are_one_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    standard = RequestLimits()
    assert Settings().model_dump(include=set(RequestLimits.model_fields)) == standard.model_dump()
    monkeypatch.setenv("LEADGREEN_LIMITS", "strict")
    strict = Settings()
    assert (strict.max_page_size, strict.field_suggestions, strict.max_depth) == (1000, False, 16)
    monkeypatch.setenv("LEADGREEN_LIMITS", "generous, batch_max = 5")
    assert (Settings().batch_max, Settings().max_cost) == (5, 2_500_000)
    # The constructor's own values win over the profile's (tests change one limit so).
    assert Settings(limits="strict", max_depth=3).max_depth == 3


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ("loose", "unknown limits profile 'loose': one of standard, strict, generous"),
        ("strict,max_depth", "'max_depth' does not change a limit: NAME=VALUE"),
        ("strict,depth=3", "'depth=3' does not change a limit: NAME=VALUE"),
        ("standard,max_depth=deep", "max_depth\n  Input should be a valid integer"),
    ],
)
def test_a_profile_that_does_not_fit_is_refused(
    monkeypatch: pytest.MonkeyPatch, limits: str, message: str
) -> None:
    monkeypatch.setenv("LEADGREEN_LIMITS", limits)
    with pytest.raises(ValueError, match=re.escape(message)):
        Settings()


@pytest.mark.parametrize("name", ["max_depth", "database_timeout_seconds", *RETIRED])
def test_a_variable_no_longer_read_is_refused(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A limit a deployment once set by its own variable must not silently stop holding."""
    monkeypatch.setenv(f"LEADGREEN_{name.upper()}", "1")
    with pytest.raises(ValueError, match=f"LEADGREEN_{name.upper()}: not read. The limits"):
        Settings()


def test_the_workers_get_the_same_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """`leadgreen serve` hands its workers the deployment's settings as variables."""
    given = Settings(cors_origins=["https://a.example", "https://b.example"], limits="strict")
    for name, value in given.environment().items():
        monkeypatch.setenv(name, value)
    assert Settings() == given


def _defaults(text: str) -> dict[str, str]:
    return dict(re.findall(r"^\| `LEADGREEN_([A-Z_]+)` \| ([^|]+) \|", text, re.M))


def test_the_settings_table_lists_every_setting_with_its_default() -> None:
    rows = _defaults((ROOT / "docs" / "deployment.md").read_text(encoding="utf-8"))
    assert sorted(rows) == sorted(name.upper() for name in DEPLOYMENT)
    _check_defaults(rows)


def test_the_readme_table_gives_the_first_settings_their_defaults() -> None:
    rows = _defaults((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(rows) >= 6
    assert set(rows) <= {name.upper() for name in DEPLOYMENT}
    _check_defaults(rows)


def _check_defaults(rows: dict[str, str]) -> None:
    """Each row's default, when it is a literal, is the code's."""
    for name in (name for name in DEPLOYMENT if name.upper() in rows):
        literal = re.match(r"`([^`]+)`", rows[name.upper()])
        default = Settings.model_fields[name].get_default(call_default_factory=True)
        if rows[name.upper()].strip() == "none":
            assert default in (None, [], ""), name
        if literal is None or default in (None, [], ""):
            continue  # said in words ("none", "the manifest's")
        if isinstance(default, bool):
            expected = str(default).lower()
        elif isinstance(default, list):
            expected = ",".join(default)
        elif isinstance(default, float):
            expected = f"{default:g}"
        else:
            expected = str(default)
        assert literal.group(1) == expected, name


def test_the_profiles_table_gives_every_value() -> None:
    """docs/deployment.md's table of the limits profiles: a row per value, a column per
    profile, each cell the profile's value."""
    text = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z_]+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \|", text, re.M)
    assert [row[0] for row in rows] == list(RequestLimits.model_fields)
    for name, *cells in rows:
        values = [getattr(Settings(limits=profile), name) for profile in PROFILES]
        shown = [_shown(value) for value in values]
        assert [cell.strip().strip("`").replace(",", "") for cell in cells] == shown, name


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def test_the_deployment_files_set_only_settings() -> None:
    """deploy/ (compose, Kubernetes) and the Dockerfile set LEADGREEN_* variables that are
    settings: a retired one would stop every replica (a limit now goes in LEADGREEN_LIMITS)."""
    files = [ROOT / "Dockerfile", *sorted((ROOT / "deploy").rglob("*.yaml"))]
    found = {
        (path.relative_to(ROOT).as_posix(), name)
        for path in files
        for name in re.findall(r"^\s*(LEADGREEN_[A-Z_]+)\s*[:=]", path.read_text(), re.M)
    }
    assert found
    assert {(path, name) for path, name in found if name[10:].lower() not in DEPLOYMENT} == set()


@pytest.mark.anyio
@pytest.mark.parametrize("limits", list(PROFILES))
async def test_every_profile_answers_the_model_page_and_graphiql(synthetic_db, settings, limits):
    """GraphiQL's introspection query and the model page fit every profile, strict included."""
    introspection = get_introspection_query(descriptions=True, input_value_deprecation=True)
    profiled = Settings(database_url=settings.database_url, limits=limits)
    async with app_client(profiled) as (_, client):
        page = await client.post("/graphql", json={"query": MODEL_PAGE})
        schema = await client.post("/graphql", json={"query": introspection})
    assert [(r.status_code, "errors" in r.json()) for r in (page, schema)] == [(200, False)] * 2
