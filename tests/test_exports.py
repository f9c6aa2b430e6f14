"""The bulk exports (/api/v1/configurations.csv and .parquet) read as a notebook reads them:
CSV with pandas, Parquet with pandas, polars and DuckDB, each equal to the task file's rows
(read here with `json`) under a filter; the 400s, the empty export, the ETag and provenance."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import duckdb
import httpx
import pandas as pd
import polars as pl
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from graph.server import exports
from graph.settings import Settings
from tests.conftest import SNAPSHOT, app_client, examples
from tests.live import python_snippets, run_snippets, serving

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
SNIPPETS = python_snippets(DOC)


@pytest.mark.slow
def test_the_docs_snippets_read_a_live_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/exports.md's Python snippets, in order, against `leadgreen serve` on 127.0.0.1 (on
    the synthetic snapshot): what they read is the task file's rows and its provenance."""
    assert len(SNIPPETS) == 3
    monkeypatch.chdir(tmp_path)
    with serving(tmp_path) as port:
        names = run_snippets(SNIPPETS, port)
    every = task_rows(tmp_path / "snapshot", "lm-arena-chat", {})
    assert_rows(names["chat"], every, "lm-arena-chat", 1)
    assert_rows(names["frame"].to_pandas(), every, "lm-arena-chat", 1)
    h100 = task_rows(tmp_path / "snapshot", "lm-arena-chat", {"gpu": "H100"})
    assert_rows(names["h100"], h100, "lm-arena-chat", 1)
    least = every.groupby("gpu_model")["energy_per_token_joules"].min()
    assert dict(names["best"].fetchall()) == least.to_dict()
    assert names["provenance"][b"leadgreen.release"] == b"1"


def duckdb_with_httpfs() -> duckdb.DuckDBPyConnection:
    """DuckDB with its httpfs extension, loaded from PyPI's duckdb-extension-httpfs (no
    download from DuckDB's site)."""
    import duckdb_extension_httpfs

    found = Path(duckdb_extension_httpfs.__file__).parent.rglob("httpfs.duckdb_extension")
    connection = duckdb.connect(config={"autoinstall_known_extensions": False})
    connection.execute(f"LOAD '{next(found)}'")
    return connection


@pytest.mark.slow
async def test_readers_read_the_urls_themselves(database_url: str, tmp_path: Path) -> None:
    """pandas, polars and DuckDB given the URLs (polars and DuckDB ask HEAD, then byte ranges)
    read the task file's rows, from `leadgreen serve` on each database."""
    duck = duckdb_with_httpfs()
    with serving(tmp_path, LEADGREEN_DATABASE_URL=database_url) as port:
        url = f"http://127.0.0.1:{port}/api/v1/configurations"
        csv, parquet = f"{url}.csv?task=lm-arena-chat", f"{url}.parquet?task=lm-arena-chat"
        read = {
            "pandas csv": pd.read_csv(csv),
            "pandas parquet": pd.read_parquet(parquet),
            "polars csv": pl.read_csv(csv).to_pandas(),
            "polars parquet": pl.read_parquet(parquet).to_pandas(),
            "polars lazily": pl.scan_parquet(f"{url}.parquet?gpu=H100").collect().to_pandas(),
            "duckdb csv": duck.sql(f"SELECT * FROM read_csv('{csv}')").df(),
            "duckdb parquet": duck.sql(f"SELECT * FROM '{parquet}'").df(),
        }
    every = task_rows(tmp_path / "snapshot", "lm-arena-chat", {})
    h100 = task_rows(tmp_path / "snapshot", "lm-arena-chat", {"gpu": "H100"})
    for how, frame in read.items():
        assert_rows(frame, h100 if how == "polars lazily" else every, "lm-arena-chat", 1), how


async def test_a_part_of_an_export_is_its_bytes(
    synthetic_db: AsyncEngine, settings: Settings
) -> None:
    """HEAD says the length; a byte range is that part of the whole export's bytes (CSV
    uncompressed), with its ETag."""
    async with app_client(settings) as (_, client):
        for fmt in ("csv", "parquet"):
            url = f"/api/v1/configurations.{fmt}?gpu=H100"
            whole = await client.get(url, headers={"accept-encoding": "identity"})
            head = await client.head(url)
            part = await client.get(url, headers={"range": "bytes=4-20"})
            tail = await client.get(url, headers={"range": "bytes=-7"})
            past = await client.get(url, headers={"range": f"bytes={len(whole.content)}-"})
            size = len(whole.content)
            assert (head.status_code, head.content) == (200, b"")
            assert head.headers["content-length"] == str(size)
            assert head.headers["accept-ranges"] == "bytes"
            assert (part.status_code, part.content) == (206, whole.content[4:21])
            assert part.headers["content-range"] == f"bytes 4-20/{size}"
            assert (tail.status_code, tail.content) == (206, whole.content[-7:])
            assert past.status_code == 416
            assert past.json()["error"]["code"] == "BAD_REQUEST"
            assert past.headers["content-range"] == f"bytes */{size}"
            malformed = await client.get(url, headers={"range": "lines=1-2"})
            assert (malformed.status_code, malformed.json()["error"]["code"]) == (
                400,
                "BAD_REQUEST",
            )
            assert {head.headers["etag"], part.headers["etag"]} == {whole.headers["etag"]}
            assert part.headers["x-leadgreen-release"] == "1"


def expected_part(spec: str, whole: bytes) -> tuple[int, bytes]:
    """What a `Range: bytes=...` of one range asks of `whole`, by RFC 9110: 206 and the part,
    or 416 when no byte of it is in the file."""
    first, _, last = spec.partition("-")
    size = len(whole)
    if first == "":  # the last `last` bytes
        start, end = max(size - int(last), 0), size - 1
    else:
        start, end = int(first), min(int(last), size - 1) if last else size - 1
    if start >= size or (first == "" and int(last) == 0):
        return 416, b""
    return 206, whole[start : end + 1]


@st.composite
def ranges(draw: st.DrawFn) -> str:
    """One byte range, in any of its three forms, often past the end."""
    first = draw(st.integers(0, 400))
    form = draw(st.sampled_from(["a-b", "a-", "-n"]))
    if form == "a-b":
        return f"{first}-{first + draw(st.integers(0, 400))}"
    return f"{first}-" if form == "a-" else f"-{draw(st.integers(0, 400))}"


async def test_generated_ranges_are_their_parts(
    synthetic_db: AsyncEngine, settings: Settings
) -> None:
    """Any one range of an export is its part of the whole bytes (or a 416); nothing else."""
    async with app_client(settings) as (_, client):
        url = "/api/v1/configurations.parquet?numGpus=1"
        whole = (await client.get(url)).content

        async def part(spec: str) -> httpx.Response:
            return await client.get(url, headers={"range": f"bytes={spec}"})

        @hypothesis_settings(max_examples=examples(100), deadline=None, database=None)
        @given(ranges())
        def prop(spec: str) -> None:
            response = anyio.from_thread.run(part, spec)
            status, content = expected_part(spec, whole)
            assert (response.status_code, response.content[: len(content)]) == (status, content)
            if status == 206:
                assert response.content == content

        await anyio.to_thread.run_sync(prop)
