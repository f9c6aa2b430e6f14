"""The bulk exports (/api/v1/configurations.csv and .parquet) read as a notebook reads them:
CSV with pandas, Parquet with pandas, polars and DuckDB, each equal to the task file's rows
(read here with `json`) under a filter; the 400s, the empty export, the ETag and provenance."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pandas as pd
import polars as pl
import pyarrow.parquet as pq
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from graph.server import exports
from graph.settings import Settings
from tests.conftest import SNAPSHOT, app_client
from tests.live import serving

pytestmark = pytest.mark.anyio

LEADING = ["id", "release", "task"]
PROVENANCE = {"source", "source-url", "licence", "release", "upstream-commit", "files-sha256"}

# A query parameter → whether a task-file row meets it.
MEETS: dict[str, Callable[[dict[str, Any], str], bool]] = {
    "modelId": lambda row, v: row["model_id"] == v,
    "gpu": lambda row, v: row["gpu_model"] == v,
    "numGpus": lambda row, v: row["num_gpus"] == int(v),
    "maxNumSeqsAtLeast": lambda row, v: row["max_num_seqs"] >= int(v),
    "maxNumSeqsAtMost": lambda row, v: row["max_num_seqs"] <= int(v),
    "maxMedianItlMs": lambda row, v: row["median_itl_ms"] <= float(v),
}


def task_rows(root: Path, task: str, params: dict[str, str]) -> pd.DataFrame:
    """The task file's rows that meet `params`, in the file's order."""
    rows = json.loads((root / "tasks" / f"{task}.json").read_text())["configurations"]
    kept = [r for r in rows if all(MEETS[k](r, v) for k, v in params.items() if k in MEETS)]
    return pd.DataFrame(kept, columns=sorted(rows[0]))


def assert_rows(got: pd.DataFrame, expected: pd.DataFrame, task: str, release: int) -> None:
    assert list(got.columns[:3]) == LEADING
    assert sorted(got.columns[3:]) == list(expected.columns)
    assert (got["task"] == task).all()
    assert (got["release"] == release).all()
    assert got["id"].str.startswith("Configuration:").all()
    assert got["id"].is_unique
    pd.testing.assert_frame_equal(
        got[expected.columns].reset_index(drop=True), expected, check_dtype=False
    )


def read_csv(response: httpx.Response) -> pd.DataFrame:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    return pd.read_csv(io.BytesIO(response.content))


def read_parquet(response: httpx.Response, reader: str, tmp_path: Path) -> pd.DataFrame:
    """The Parquet file read by `reader`, as a pandas frame."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/vnd.apache.parquet"
    if reader == "pandas":
        return pd.read_parquet(io.BytesIO(response.content))
    if reader == "polars":
        return pl.read_parquet(io.BytesIO(response.content)).to_pandas()
    path = tmp_path / "configurations.parquet"
    path.write_bytes(response.content)
    return duckdb.sql(f"SELECT * FROM read_parquet('{path}')").df()


SYNTHETIC_FILTERS = [
    {},
    {"task": "lm-arena-chat"},
    {"gpu": "H100"},
    {"numGpus": "2", "maxNumSeqsAtMost": "16"},
    {"modelId": "acme/Tiny-1B", "maxMedianItlMs": "10"},
    {"maxNumSeqsAtLeast": "32", "release": "1"},
]


@pytest.mark.parametrize("params", SYNTHETIC_FILTERS, ids=str)
async def test_csv_is_the_task_files_rows(
    synthetic_db: AsyncEngine, synthetic_dir: Path, settings: Settings, params: dict[str, str]
) -> None:
    async with app_client(settings) as (_, client):
        response = await client.get("/api/v1/configurations.csv", params=params)
    expected = task_rows(synthetic_dir, "lm-arena-chat", params)
    assert 0 < len(expected)
    assert_rows(read_csv(response), expected, "lm-arena-chat", 1)


@pytest.mark.parametrize("reader", ["pandas", "polars", "duckdb"])
@pytest.mark.parametrize("params", SYNTHETIC_FILTERS[2:4], ids=str)
async def test_parquet_is_the_task_files_rows(
    synthetic_db: AsyncEngine,
    synthetic_dir: Path,
    settings: Settings,
    tmp_path: Path,
    params: dict[str, str],
    reader: str,
) -> None:
    async with app_client(settings) as (_, client):
        response = await client.get("/api/v1/configurations.parquet", params=params)
    expected = task_rows(synthetic_dir, "lm-arena-chat", params)
    assert_rows(read_parquet(response, reader, tmp_path), expected, "lm-arena-chat", 1)


async def test_an_export_of_nothing_is_its_header(
    synthetic_db: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    params = {"gpu": "B200", "numGpus": "8"}
    async with app_client(settings) as (_, client):
        csv = await client.get("/api/v1/configurations.csv", params=params)
        parquet = await client.get("/api/v1/configurations.parquet", params=params)
    header = csv.text.splitlines()
    assert len(header) == 1
    columns = header[0].split(",")
    assert columns[:3] == LEADING
    frame = read_parquet(parquet, "pandas", tmp_path)
    assert len(frame) == 0
    assert list(frame.columns) == columns


async def test_sent_in_chunks(
    synthetic_db: AsyncEngine,
    synthetic_dir: Path,
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Chunks of CHUNK_ROWS rows: a Parquet row group each, the same rows as one chunk."""
    monkeypatch.setattr(exports, "CHUNK_ROWS", 2)
    async with app_client(settings) as (_, client):
        csv = await client.get("/api/v1/configurations.csv")
        parquet = await client.get("/api/v1/configurations.parquet")
    expected = task_rows(synthetic_dir, "lm-arena-chat", {})
    assert len(expected) == 7
    assert pq.ParquetFile(io.BytesIO(parquet.content)).metadata.num_row_groups == 4
    assert_rows(read_parquet(parquet, "pandas", tmp_path), expected, "lm-arena-chat", 1)
    assert_rows(read_csv(csv), expected, "lm-arena-chat", 1)


async def test_no_release_yet_is_a_503(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/configurations.csv")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "NO_DATA"


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("colour=red", "`colour`"),
        ("numGpus=two", "`numGpus`"),
        ("maxMedianItlMs=fast", "`maxMedianItlMs`"),
        ("maxMedianItlMs=nan", "`maxMedianItlMs`"),
        ("release=latest", "`release`"),
        ("gpu=H100&gpu=B200", "`gpu`"),
        ("task=no-such-task", "'no-such-task'"),
        ("gpu=Z80", "'Z80'"),
        ("maxMedianItlMs=-1", "maxMedianItlMs"),
        ("release=99", "release 99"),
    ],
)
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
async def test_bad_input_is_a_400_naming_it(
    synthetic_db: AsyncEngine, settings: Settings, query: str, named: str, fmt: str
) -> None:
    async with app_client(settings) as (_, client):
        response = await client.get(f"/api/v1/configurations.{fmt}?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "BAD_USER_INPUT"
    assert named in error["message"]


async def test_etag_per_release_and_filter(synthetic_db: AsyncEngine, settings: Settings) -> None:
    async with app_client(settings) as (_, client):
        url = "/api/v1/configurations.csv?gpu=H100"
        first = await client.get(url)
        again = await client.get(url, headers={"if-none-match": first.headers["etag"]})
        other = await client.get("/api/v1/configurations.csv?gpu=B200")
        parquet = await client.get("/api/v1/configurations.parquet?gpu=H100")
        # The same filter written otherwise is the same export.
        same = await client.get("/api/v1/configurations.csv?gpu=H100&release=1")
    etag = first.headers["etag"]
    assert etag.startswith('W/"')
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)
    assert same.headers["etag"] == etag
    assert len({etag, other.headers["etag"], parquet.headers["etag"]}) == 3


async def test_provenance_in_headers_and_parquet_metadata(
    synthetic_db: AsyncEngine, settings: Settings
) -> None:
    async with app_client(settings) as (_, client):
        csv = await client.get("/api/v1/configurations.csv", headers={"origin": "https://a.test"})
        parquet = await client.get("/api/v1/configurations.parquet")
    said = {
        name.removeprefix("x-leadgreen-"): value
        for name, value in csv.headers.items()
        if name.startswith("x-leadgreen-")
    }
    metadata = pq.read_schema(io.BytesIO(parquet.content)).metadata
    assert set(said) <= PROVENANCE
    assert {"source", "licence", "release", "files-sha256"} <= set(said)
    assert said["release"] == "1"
    assert {k.decode().removeprefix("leadgreen."): v.decode() for k, v in metadata.items()} == (
        said
    )
    assert csv.headers["access-control-allow-origin"] == "*"
    # A browser script may read every provenance header an export can send.
    exposed = {h.strip().lower() for h in csv.headers["access-control-expose-headers"].split(",")}
    assert {f"x-leadgreen-{name}" for name in PROVENANCE} <= exposed
    assert csv.headers["content-encoding"] == "gzip"


REAL_FILTERS = [
    ("lm-arena-chat", {}),
    ("gpqa", {"gpu": "B200", "numGpus": "1"}),
    ("lm-arena-chat", {"maxNumSeqsAtMost": "64", "maxMedianItlMs": "30"}),
    ("text-to-image", {}),
    ("text-to-video", {"gpu": "H100"}),
]


@pytest.mark.parametrize(("task", "params"), REAL_FILTERS, ids=str)
async def test_real_data_exports(
    real_settings: Settings, tmp_path: Path, task: str, params: dict[str, str]
) -> None:
    """On the 2026-02-16 snapshot, every kind of task: CSV and Parquet equal the task file's
    rows, read by pandas, polars and DuckDB."""
    query = {"task": task, **params}
    async with app_client(real_settings) as (_, client):
        csv = await client.get("/api/v1/configurations.csv", params=query)
        parquet = await client.get("/api/v1/configurations.parquet", params=query)
        release = int(csv.headers["x-leadgreen-release"])
    expected = task_rows(SNAPSHOT, task, params)
    assert 0 < len(expected)
    assert_rows(read_csv(csv), expected, task, release)
    for reader in ("pandas", "polars", "duckdb"):
        assert_rows(read_parquet(parquet, reader, tmp_path), expected, task, release)


async def test_real_data_a_diffusion_task_takes_its_own_filter(real_settings: Settings) -> None:
    async with app_client(real_settings) as (_, client):
        response = await client.get(
            "/api/v1/configurations.csv", params={"task": "text-to-image", "maxMedianItlMs": "9"}
        )
    assert response.status_code == 400
    assert "`maxMedianItlMs`" in response.json()["error"]["message"]


DOC = Path(__file__).parent.parent / "docs" / "exports.md"
SNIPPETS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S)


@pytest.mark.slow
def test_the_docs_snippets_read_a_live_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/exports.md's Python snippets, in order, against `leadgreen serve` on 127.0.0.1 (on
    the synthetic snapshot): what they read is the task file's rows and its provenance."""
    assert len(SNIPPETS) == 3
    monkeypatch.chdir(tmp_path)
    names: dict[str, Any] = {}
    with serving(tmp_path) as port:
        for snippet in SNIPPETS:
            exec(snippet.replace("127.0.0.1:8000", f"127.0.0.1:{port}"), names)
    every = task_rows(tmp_path / "snapshot", "lm-arena-chat", {})
    assert_rows(names["chat"], every, "lm-arena-chat", 1)
    assert_rows(names["frame"].to_pandas(), every, "lm-arena-chat", 1)
    h100 = task_rows(tmp_path / "snapshot", "lm-arena-chat", {"gpu": "H100"})
    assert_rows(names["h100"], h100, "lm-arena-chat", 1)
    least = every.groupby("gpu_model")["energy_per_token_joules"].min()
    assert dict(names["best"].fetchall()) == least.to_dict()
    assert names["provenance"][b"leadgreen.release"] == b"1"
