"""In a real browser: GraphiQL on a default `leadgreen serve` over the real data, with nothing off
127.0.0.1 reachable, and examples/web (urql) from another origin drawing a model's curves and,
in its plan explorer, every deployment plan of a task.

The distribution's Chromium, driven by playwright-core (tests/browser/run.mjs). Run with
scripts/browser-test, which sets everything up (Chromium, the runner, GraphiQL's assets, the
example's build); screenshots go to $LEADGREEN_ARTIFACTS (default: a temporary directory).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from graph.server.documents import MODEL_PAGE
from graph.server.graphiql import CSP
from tests.live import free_port, wait_until

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
SLUG = "qwen-3-8b"
BIN = Path(sys.executable).parent
EXAMPLE_QUERY = re.search(
    r"gql<[^`]*>`(.*?)`", (ROOT / "examples" / "web" / "src" / "api.ts").read_text(), re.S
)
PLANNER_QUERY = re.search(
    r"gql<DeploymentPlans, [^`]*>`(.*?)`",
    (ROOT / "examples" / "web" / "src" / "planApi.ts").read_text(),
    re.S,
)
BROWSERS = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
# The plan explorer opened on a chat deployment (its address), then text-to-image chosen in its
# form with a demand and a batch-latency limit (run.mjs's --then-* options).
SITE = {"pue": 1.2, "carbonIntensityGramsPerKwh": 400.0, "electricityPricePerKwh": 0.15}
CHAT_MODELS = ["llama-3-1-8b-instruct", "qwen-3-32b", "qwen-3-8b"]
PLANNER_ADDRESS = {
    "task": "lm-arena-chat",
    "models": ",".join(CHAT_MODELS),
    "demand": "100",
    "latency": "50",
    "utilization": "0.8",
    "pue": "1.2",
    "carbon": "400",
    "price": "0.15",
}
PLANNED = {
    "first": {
        "task": "lm-arena-chat",
        "models": CHAT_MODELS,
        "demand": {"requestsPerSecond": 100.0},
        "latency": {"maxItlMs": 50.0, "percentile": "P50"},
    },
    "then": {
        "task": "text-to-image",
        "models": None,
        "demand": {"imagesPerSecond": 2.0},
        "latency": {"maxBatchLatencySeconds": 30.0},
    },
}


def chromium() -> str:
    for variable in ("LEADGREEN_CHROMIUM", "CHROMIUM"):
        if os.environ.get(variable):
            return os.environ[variable]
    found = next(filter(None, map(shutil.which, BROWSERS)), None)
    if found is None:
        pytest.fail("no Chromium: run scripts/browser-test (it installs the distribution's)")
    return found


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = Path(os.environ.get("LEADGREEN_ARTIFACTS") or tmp_path_factory.mktemp("browser"))
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture(scope="module")
def prepared() -> str:
    """Everything scripts/browser-test sets up, up to date; the Chromium to drive."""
    subprocess.run([str(ROOT / "scripts" / "browser-test"), "--setup-only"], check=True)
    return chromium()


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, artifacts: Path) -> Iterator[str]:
    """A default `leadgreen serve` (no setting but its database and port) over the 2026-02-16
    snapshot with the seed manifest."""
    database = tmp_path_factory.mktemp("browser-db") / "leadgreen.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEADGREEN_")}
    snapshot = SHARED / "ml-energy-leaderboard" / "2026-02-16"
    seed = SHARED / "seed" / "leadgreen-index-v1.json"
    ingest = [str(BIN / "leadgreen"), "ingest", str(snapshot), "--manifest", str(seed)]
    subprocess.run([*ingest, "--database-url", str(database)], env=env, check=True)
    port = free_port()
    env |= {"LEADGREEN_DATABASE_URL": str(database), "LEADGREEN_PORT": str(port)}
    with (artifacts / "leadgreen-serve.log").open("wb") as log:
        server = subprocess.Popen(
            [str(BIN / "leadgreen"), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(server, base)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def wait_ready(server: subprocess.Popen[bytes], base: str, timeout: float = 60) -> None:
    def ready() -> bool:
        assert server.poll() is None, "leadgreen serve exited: see leadgreen-serve.log"
        return httpx.get(f"{base}/readyz", timeout=2).status_code == 200

    wait_until(ready, timeout, "leadgreen serve to be ready")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def example(prepared: str) -> Iterator[str]:
    """examples/web's build, served on an origin of its own (another port)."""
    dist = ROOT / "examples" / "web" / "dist"
    handler = functools.partial(Quiet, directory=str(dist))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def seen(prepared: str, api: str, example: str, artifacts: Path) -> dict[str, Any]:
    """What tests/browser/run.mjs saw of both pages, in one browser."""
    planner = f"{example}plan.html?{urllib.parse.urlencode(PLANNER_ADDRESS)}"
    command = ["node", "run.mjs", "--graphiql", f"{api}/graphql", "--example", example]
    command += ["--planner", planner, "--then-task", "text-to-image", "--then-demand", "2"]
    command += ["--then-latency", "30", "--api", api, "--out", str(artifacts)]
    command += ["--chromium", prepared]
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=ROOT / "tests" / "browser", capture_output=True, text=True, timeout=240
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"run.mjs printed nothing: {done.stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    result["seconds"] = round(time.monotonic() - started, 1)
    (artifacts / "browser.json").write_text(json.dumps(result, indent=2))
    assert "error" not in result, result
    return result


def graphql(api: str, query: str, **variables: Any) -> Any:
    response = httpx.post(f"{api}/graphql", json={"query": query, "variables": variables})
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_graphiql_runs_the_model_page_offline(seen: dict[str, Any], api: str) -> None:
    """The model-page tab ran on open and shows what the API answers; nothing left 127.0.0.1;
    no CSP violation, console error or failed request."""
    model = graphql(api, MODEL_PAGE, slug=SLUG)["model"]
    page = seen["graphiql"]
    assert {key: page.get(key) for key in GRAPHIQL} == GRAPHIQL | {
        "answerConfigurations": len(model["configurations"]),
        "answerCurves": len(model["curves"]),
    }
    assert page["localRequests"] > 0
    assert json.loads(page["variables"]) == {"slug": SLUG}
    assert page["query"] == MODEL_PAGE


# What every page must show: nothing asked beyond 127.0.0.1, no CSP violation, no error.
CLEAN = {
    "nonLocalRequestsAborted": 0,
    "cspViolations": [],
    "consoleErrors": [],
    "pageErrors": [],
    "failedLocalRequests": [],
    "ok": True,
}
GRAPHIQL = {
    "status": 200,
    "contentSecurityPolicy": CSP,
    "tabs": ["ModelPage", "Leaderboard", "ParetoFrontier", "Timeline"],
    "activeTab": "ModelPage",
    "explorerPlugin": True,
    "answerParsed": True,
    "answerErrors": 0,
    "answerModel": SLUG,
    "answerConfigurations": None,
    "answerCurves": None,
    **CLEAN,
}


def test_a_page_on_another_origin_draws_the_curves(seen: dict[str, Any], api: str) -> None:
    """examples/web on its own origin asks the default server for a model's curves and Pareto
    frontier (urql, POST with a CORS preflight) and draws every point."""
    assert EXAMPLE_QUERY is not None
    data = graphql(api, EXAMPLE_QUERY.group(1), slug=SLUG)
    points = sum(len(curve["points"]) for curve in data["model"]["curves"])
    frontier = len(data["paretoFrontier"][0]["configurations"])
    page = seen["example"]
    if page.get("state") == "error" and not cors_by_default(api, page["url"]):
        pytest.fail(f"{page['statusText']}: the API does not allow other origins by default")
    drawn = {"drawn": points + frontier, "frontier": frontier}
    assert {key: page.get(key) for key in EXAMPLE} == EXAMPLE | {
        "points": [
            {"chart": "energy-by-concurrency", **drawn},
            {"chart": "time-energy", **drawn},
        ],
    }
    assert page["statusText"].startswith(f"{data['model']['name']}: ")


EXAMPLE = {
    "status": 200,
    "state": "loaded",
    "crossOrigin": True,
    "charts": 2,
    "points": None,
    **CLEAN,
}


def cors_by_default(api: str, page: str) -> bool:
    origin = re.match(r"https?://[^/]+", page)
    assert origin is not None
    preflight = httpx.options(
        f"{api}/graphql",
        headers={
            "origin": origin.group(0),
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        },
    )
    return preflight.headers.get("access-control-allow-origin") in ("*", origin.group(0))


def test_the_plan_explorer_draws_every_plan(seen: dict[str, Any], api: str) -> None:
    """examples/web/plan.html plans what its address says, then what its form is given (another
    task, of the other kind), and shows each answer whole: every plan a point of the chart, the
    Pareto-optimal ones ringed, the first 25 in the table, the choices written to the address."""
    assert PLANNER_QUERY is not None
    page = seen["planner"]
    assert {key: page.get(key) for key in PLANNER} == PLANNER
    for view, asked in PLANNED.items():
        variables = asked | {"utilization": 0.8, "objective": "ENERGY", "site": SITE}
        answer = graphql(api, PLANNER_QUERY.group(1), **variables, first=1000)["deploymentPlan"]
        plans = answer["plans"]
        pareto = [p for p in plans if p["paretoOptimal"]]
        shown = plans[:25]
        assert (answer["totalCount"], len(plans)) == (len(plans), len(plans))
        assert {key: page[view][key] for key in SHOWN} == {
            "state": "loaded",
            "task": asked["task"],
            "models": asked["models"] or [],
            "charts": 1,
            "drawn": len(plans) + len(pareto),
            "pareto": len(pareto),
            "rows": len(shown),
            "paretoRows": sum(p["paretoOptimal"] for p in shown),
            "ranks": [p["rank"] for p in shown],
        }
        assert page[view]["statusText"].startswith(
            f"{answer['totalCount']} plans of {answer['candidates']} configurations "
            f"({answer['demandUnit']}); {len(pareto)} Pareto-optimal"
        )
    written = urllib.parse.parse_qs(page["then"]["search"].lstrip("?"))
    assert written == {
        "api": [api],
        "task": ["text-to-image"],
        "demand": ["2"],
        "latency": ["30"],
        "utilization": ["0.8"],
        "pue": ["1.2"],
        "carbon": ["400"],
        "price": ["0.15"],
        "objective": ["ENERGY"],
    }


PLANNER = {"status": 200, "crossOrigin": True, **CLEAN}
SHOWN = ("state", "task", "models", "charts", "drawn", "pareto", "rows", "paretoRows", "ranks")


def test_the_browser_step_is_quick(seen: dict[str, Any]) -> None:
    """The three pages, browser start included, well within CI's two minutes for the step."""
    assert seen["seconds"] < 90
