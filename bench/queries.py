"""What the benchmark asks: each scenario's requests, written as lines for bench/graphql.lua."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from graph.server.documents import MODEL_PAGE

CONFIGURATION_FIELDS = """
  id gpuModel numGpus modelId maxNumSeqs tensorParallel dataParallel expertParallel
  parallelNotes avgBatchSize avgOutputLen avgPowerWatts powerPerGpuWatts fractionOfTdp
  energyPerRequestJoules energyPerTokenJoules medianItlMs p90ItlMs p95ItlMs p99ItlMs
  outputThroughputTokensPerSec
  outputLengthDistribution { bins counts }
  upstream { taskFile taskRow modelFile modelRow }
  gpu { name fullName architecture memoryGb tdpWatts }
  model { slug name }
  task { name }
"""

# The leaderboard table of a task: every configuration with every field (the largest answer).
TASK_TABLE = (
    "query TaskTable($task: String!) { configurations("
    "filter: {task: $task}, orderBy: {field: ENERGY_PER_TOKEN_JOULES}, first: 500) {"
    f" totalCount pageInfo {{ hasNextPage endCursor }} nodes {{{CONFIGURATION_FIELDS}}} }} }}"
)
GPU_LOOKUP = "{ gpus { name fullName architecture memoryGb tdpWatts source sourceUrl } }"
DEFAULT_SLUG = "qwen-3-8b"
TASK = "lm-arena-chat"


def post(query: str, variables: dict[str, object] | None = None) -> str:
    body = {"query": query, **({"variables": variables} if variables else {})}
    return "POST /graphql " + json.dumps(body, separators=(",", ":"))


def persisted_get(query: str, variables: dict[str, object]) -> str:
    sha = hashlib.sha256(query.encode()).hexdigest()
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": sha}}
    params = {
        "variables": json.dumps(variables, separators=(",", ":")),
        "extensions": json.dumps(extensions, separators=(",", ":")),
    }
    return "GET /graphql?" + urlencode(params)


def register_persisted(query: str) -> str:
    """The POST an Apollo client sends after PersistedQueryNotFound: the text with its hash."""
    sha = hashlib.sha256(query.encode()).hexdigest()
    body = {"query": query, "extensions": {"persistedQuery": {"version": 1, "sha256Hash": sha}}}
    return "POST /graphql " + json.dumps(body, separators=(",", ":"))


@dataclass(frozen=True)
class Scenario:
    name: str
    server: str  # "warm" (cache on), "cold" (cache off), "precomputed" or "nginx"
    lines: tuple[str, ...]
    connections: int = 32

    def write(self, directory: Path) -> Path:
        path = directory / (self.name.replace(" ", "-").replace(",", "") + ".txt")
        path.write_text("\n".join(self.lines) + "\n")
        return path


def scenarios(slugs: list[str]) -> list[Scenario]:
    model_page = post(MODEL_PAGE, {"slug": DEFAULT_SLUG})
    table = post(TASK_TABLE, {"task": TASK})
    return [
        Scenario("model page warm", "warm", (model_page,)),
        Scenario("model page cold", "cold", tuple(post(MODEL_PAGE, {"slug": s}) for s in slugs)),
        Scenario("task table warm", "warm", (table,)),
        # Cold, one request at a time: its latency (32 at once would measure the queue).
        Scenario("task table cold 1 conn", "cold", (table,), connections=1),
        Scenario("gpu lookup warm", "warm", (post(GPU_LOOKUP),)),
        Scenario("gpu lookup cold", "cold", (post(GPU_LOOKUP),)),
        Scenario("apq get warm", "warm", (persisted_get(MODEL_PAGE, {"slug": DEFAULT_SLUG}),)),
        Scenario("precomputed bytes", "precomputed", (model_page,)),
        Scenario("nginx static file", "nginx", ("GET /model-page.json",)),
    ]
