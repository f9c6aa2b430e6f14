"""GraphiQL, self-hosted: the page and its headers, the assets, a server without a build, and the
example tabs (named operations, valid against schema.graphql, answered on the real data)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from graphql import GraphQLSchema, OperationDefinitionNode, build_schema, parse, validate

from graph.server.documents import MODEL_PAGE
from graph.server.graphiql import CSP, config_json
from graph.settings import Settings
from tests import graphiql_build
from tests.conftest import app_client

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[1]
TABS = ROOT / "web" / "graphiql" / "tabs"
EXAMPLE_API = ROOT / "examples" / "web" / "src" / "api.ts"
HTML = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
CONFIG = re.compile(r'<script type="application/json" id="graphiql-config">(.*?)</script>', re.S)


@pytest.fixture
async def browser(graphiql_assets: Path, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app whose GraphiQL is built (the stand-in build)."""
    async with app_client(settings) as (_, client):
        yield client


@pytest.fixture
async def unbuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app on a machine where scripts/build-graphiql never ran."""
    from graph.server import graphiql

    monkeypatch.setattr(graphiql, "STATIC", tmp_path / "nothing-here")
    async with app_client(settings) as (_, client):
        yield client


def page_config(html: str) -> Any:
    match = CONFIG.search(html)
    assert match is not None, html
    return json.loads(match.group(1))


async def test_the_page_opens_on_the_example_tabs(browser: httpx.AsyncClient) -> None:
    response = await browser.get("/graphql", headers=HTML)
    assert response.status_code == 200
    assert {k: response.headers[k] for k in PAGE_HEADERS} == PAGE_HEADERS
    assert page_config(response.text) == graphiql_build.default_config()
    first = page_config(response.text)["tabs"][0]
    assert (first["name"], first["query"], json.loads(first["variables"])) == (
        "ModelPage",
        MODEL_PAGE,
        {"slug": "qwen-3-8b"},
    )
    # The assets by relative URL: /static/graphiql/NAME from /graphql.
    assert f'src="static/graphiql/{graphiql_build.JS}"' in response.text
    assert f'href="static/graphiql/{graphiql_build.CSS}"' in response.text


PAGE_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
    "vary": "accept",
}


def test_the_content_security_policy() -> None:
    assert CSP == (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    )


async def test_the_configuration_cannot_end_its_script_element(
    graphiql_assets: Path, settings: Settings
) -> None:
    hostile = "</script><script>alert(1)</script><!-- & -->"
    config = {"endpoint": "/graphql", "tabs": [{"name": "X", "query": hostile, "variables": ""}]}
    graphiql_build.write(graphiql_assets, config)
    async with app_client(settings) as (_, client):
        response = await client.get("/graphql", headers=HTML)
    assert response.text.count("</script>") == 2  # the configuration's and the bundle's
    assert "<!--" not in CONFIG.search(response.text).group(1)  # type: ignore[union-attr]
    assert page_config(response.text)["tabs"][0]["query"] == hostile


def test_config_json_escapes() -> None:
    assert config_json({"q": "<a> & </b>"}) == '{"q":"\\u003ca\\u003e \\u0026 \\u003c/b\\u003e"}'
    assert json.loads(config_json({"q": "<a> & </b>"})) == {"q": "<a> & </b>"}


async def test_the_endpoint_follows_the_root_path(graphiql_assets: Path, settings) -> None:
    async with app_client(settings, root_path="/api") as (_, client):
        response = await client.get("/api/graphql", headers=HTML)
    assert page_config(response.text)["endpoint"] == "/api/graphql"


async def test_assets_are_immutable(browser: httpx.AsyncClient) -> None:
    js = await browser.get(f"/static/graphiql/{graphiql_build.JS}")
    css = await browser.get(f"/static/graphiql/{graphiql_build.CSS}")
    worker = await browser.get(f"/static/graphiql/{graphiql_build.WORKER}")
    for response, name, media in [
        (js, graphiql_build.JS, "text/javascript; charset=utf-8"),
        (css, graphiql_build.CSS, "text/css; charset=utf-8"),
        (worker, graphiql_build.WORKER, "text/javascript; charset=utf-8"),
    ]:
        assert (response.status_code, response.content) == (200, graphiql_build.ASSETS[name])
        assert response.headers["content-type"] == media
        assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert response.headers["x-content-type-options"] == "nosniff"


async def test_precompressed_assets(browser: httpx.AsyncClient) -> None:
    """The build's NAME.gz goes to a client that takes gzip; others get the file itself (the
    stand-in build has no NAME.br)."""
    url = f"/static/graphiql/{graphiql_build.JS}"
    zipped = await browser.get(url, headers={"accept-encoding": "br;q=0, gzip"})
    plain = await browser.get(url, headers={"accept-encoding": "identity"})
    refused = await browser.get(url, headers={"accept-encoding": "gzip;q=0"})
    no_copy = await browser.get(url, headers={"accept-encoding": "br"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert zipped.headers["vary"] == "accept-encoding"
    assert zipped.content == graphiql_build.ASSETS[graphiql_build.JS]  # httpx decoded it
    assert int(zipped.headers["content-length"]) < len(zipped.content)
    for response in (plain, refused, no_copy):
        assert "content-encoding" not in response.headers
        assert response.content == graphiql_build.ASSETS[graphiql_build.JS]


@pytest.mark.parametrize(
    "path",
    [
        "/static/graphiql/graphiql-NOPE.js",
        "/static/graphiql/manifest.json",
        "/static/graphiql/config.json",
        "/static/graphiql/..%2Fgraphiql.py",
        "/static/graphiql/",
    ],
)
async def test_only_the_builds_assets_are_served(browser: httpx.AsyncClient, path: str) -> None:
    response = await browser.get(path)
    assert (response.status_code, response.json()["error"]["code"]) == (404, "NOT_FOUND")


async def test_without_a_build_a_browser_is_told_how_to_build(
    unbuilt: httpx.AsyncClient,
) -> None:
    page = await unbuilt.get("/graphql", headers=HTML)
    asset = await unbuilt.get(f"/static/graphiql/{graphiql_build.JS}")
    api = await unbuilt.post("/graphql", json={"query": "{ gpus { name } }"})
    assert page.status_code == 503
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["cache-control"] == "no-store"
    assert "scripts/build-graphiql" in page.text
    assert asset.status_code == 404
    assert (api.status_code, api.json()["data"]) == (200, {"gpus": []})


async def test_a_build_missing_an_asset_is_no_build(
    graphiql_assets: Path, settings: Settings
) -> None:
    (graphiql_assets / graphiql_build.CSS).unlink()
    async with app_client(settings) as (_, client):
        response = await client.get("/graphql", headers=HTML)
    assert response.status_code == 503


async def test_graphiql_off(graphiql_assets: Path, settings: Settings) -> None:
    """LEADGREEN_GRAPHIQL=false: a browser's GET without a query is refused like any other."""
    async with app_client(settings.model_copy(update={"graphiql": False})) as (_, client):
        page = await client.get("/graphql", headers=HTML)
        asset = await client.get(f"/static/graphiql/{graphiql_build.JS}")
    assert page.status_code == 400
    assert asset.status_code == 404


# --- The example operations -------------------------------------------------------------


def operations(text: str) -> list[OperationDefinitionNode]:
    return [d for d in parse(text).definitions if isinstance(d, OperationDefinitionNode)]


def file_text(file: str) -> str:
    return (TABS / file).read_text()


def tab_files() -> list[tuple[str, str]]:
    return [(tab["name"], tab["file"]) for tab in json.loads((TABS / "tabs.json").read_text())]


def example_operations() -> list[Any]:
    """The tabs' operations, and the ones examples/web sends (in gql`...`)."""
    tabs = [pytest.param(file_text(file), id=file) for _, file in tab_files()]
    examples = re.findall(r"gql<[^`]*>`(.*?)`", EXAMPLE_API.read_text(), re.S)
    assert examples, "no gql`...` operation in examples/web/src/api.ts"
    return tabs + [pytest.param(text, id=f"examples-web-{n}") for n, text in enumerate(examples)]


@functools.cache
def sdl_schema() -> GraphQLSchema:
    return build_schema((ROOT / "schema.graphql").read_text())


def test_the_tabs() -> None:
    """Every file of tabs/ is a tab, named as its one operation; the model page comes first and
    is the server's MODEL_PAGE."""
    tabs = tab_files()
    assert sorted(file for _, file in tabs) == sorted(p.name for p in TABS.glob("*.graphql"))
    assert tabs[0] == ("ModelPage", "model-page.graphql")
    assert [name for name, _ in tabs] == ["ModelPage", "Leaderboard", "ParetoFrontier", "Timeline"]
    for name, file in tabs:
        assert [op.name.value if op.name else None for op in operations(file_text(file))] == [name]
    assert file_text("model-page.graphql") == MODEL_PAGE


@pytest.mark.parametrize("text", example_operations())
def test_the_example_operations_are_named_and_valid(text: str) -> None:
    assert [e.message for e in validate(sdl_schema(), parse(text))] == []
    assert all(op.name is not None for op in operations(text)), "an anonymous operation"


@pytest.mark.parametrize(("name", "file"), tab_files())
async def test_each_tab_answers_on_the_real_data(real_client, name: str, file: str) -> None:
    """As GraphiQL sends it (its variables, its operation name): data, no error, no refusal."""
    tab = next(t for t in graphiql_build.default_config()["tabs"] if t["name"] == name)
    variables = json.loads(tab["variables"]) if tab["variables"] else None
    body = {"query": tab["query"], "variables": variables, "operationName": name}
    response = await real_client.post("/graphql", json=body)
    answer = response.json()
    assert (response.status_code, answer.get("errors")) == (200, None)
    assert all(answer["data"].values())
