"""Self-check of tests/formats.py: each historical upstream format has the fields it should."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests import formats, synthetic

SNAPSHOTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "ml-energy-leaderboard"
TASK = f"tasks/{synthetic.TASK}.json"
IMAGE = "tasks/text-to-image.json"
IMAGE_MODEL = "models/acme__Pixel-2B__text-to-image.json"
TINY = f"models/acme__Tiny-1B__{synthetic.TASK}.json"
MIXTURE = f"models/acme__Mixture-8x2B__{synthetic.TASK}.json"
ORPHAN = "models/acme__Tiny-1B__video-chat.json"
PRE_TOOLKIT = ("launch", "mid_december", "december", "february", "february_resorted")


def made(name: str) -> dict[str, Any]:
    return formats.FORMATS[name](formats.with_diffusion(synthetic.documents()))


def doc(docs: dict[str, Any], path: str) -> Any:
    return json.loads(docs[path]) if isinstance(docs[path], str) else docs[path]


def rows(docs: dict[str, Any], path: str) -> list[dict[str, Any]]:
    return list(doc(docs, path)["configurations"])


def key_sorted(value: Any) -> bool:
    if isinstance(value, dict):
        return list(value) == sorted(value) and all(key_sorted(v) for v in value.values())
    return all(key_sorted(v) for v in value) if isinstance(value, list) else True


def degrees(row: dict[str, Any]) -> tuple[int, int, int]:
    par = row.get("parallelization", row)
    return par["tensor_parallel"], par["expert_parallel"], par["data_parallel"]


@pytest.mark.parametrize("name", formats.FORMATS)
def test_every_format_writes_and_keeps_every_row(name: str, tmp_path: Path) -> None:
    docs = made(name)
    root = formats.write_formatted(tmp_path, docs)
    for path in docs:
        json.loads((root / path).read_text())
    assert len(rows(docs, TASK)) == len(synthetic.ROWS)
    assert len(rows(docs, TINY)) + len(rows(docs, MIXTURE)) == len(synthetic.ROWS)
    assert len(rows(docs, IMAGE)) == len(rows(docs, IMAGE_MODEL)) == 3
    llm = rows(docs, TASK) + rows(docs, TINY) + rows(docs, MIXTURE)
    assert all(("max_num_batched_tokens" in r) == (name in PRE_TOOLKIT) for r in llm)
    assert all(r.get("max_num_batched_tokens") is None for r in llm)
    assert all(("avg_output_len" in r) == (name not in ("launch", "mid_december")) for r in llm)
    assert (ORPHAN in docs) == (name in ("launch", "mid_december", "december"))


def test_launch() -> None:
    docs = made("launch")
    assert list(doc(docs, "index.json")) == ["last_updated", "tasks", "architectures", "models"]
    assert list(rows(docs, TASK)[0]) == [
        k for k in formats.KEYS["llm.row"] if k != "avg_output_len"
    ]
    for row in rows(docs, TASK) + rows(docs, TINY) + rows(docs, MIXTURE):
        assert degrees(row) in ((1, 0, 0), (1, 2, 0))
    assert [degrees(r) for r in rows(docs, TASK)].count((1, 2, 0)) == 1
    assert list(rows(docs, TINY)[0]["parallelization"]) == list(formats.KEYS["llm.par"])
    assert all("weight_precision" not in r for r in rows(docs, IMAGE))
    assert doc(docs, IMAGE_MODEL)["weight_precision"] == "bfloat16"
    orphan = doc(docs, ORPHAN)
    assert {"is_moe", "itl_distribution"} <= set(orphan) and "architecture" not in orphan
    config = orphan["configurations"][0]
    assert {"kv_cache_usage_percent", "timelines"} <= set(config)
    assert not {"p90_itl_ms", "avg_power_watts", "output_length_distribution"} & set(config)
    assert degrees(config) == (1, 0, 0)


def test_mid_december_duplicates_a_key_in_diffusion_rows() -> None:
    docs = made("mid_december")
    assert isinstance(docs[IMAGE], str)
    seen: list[Counter[str]] = []
    json.loads(
        docs[IMAGE], object_pairs_hook=lambda pairs: seen.append(Counter(k for k, _ in pairs))
    )
    duplicated = [c for c in seen if c["weight_precision"] == 2]
    assert len(duplicated) == 3
    assert all(degrees(r)[1:] != (0, 0) and degrees(r)[0] == 1 for r in rows(docs, TASK))


def test_december_and_february_differ_only_in_key_order() -> None:
    december, february = made("december"), made("february")
    assert not key_sorted(doc(december, TASK)) and key_sorted(doc(february, TASK))
    assert all(key_sorted(d) for d in february.values())
    for path in (TASK, TINY, IMAGE, "index.json"):
        assert json.dumps(december[path], sort_keys=True) == json.dumps(february[path])
    assert {degrees(r)[0] for r in rows(december, TASK)} == {1}


def test_february_resorted_sorts_rows() -> None:
    docs = made("february_resorted")
    order = [
        (r["model_id"], r["gpu_model"], r["num_gpus"], r["max_num_seqs"]) for r in rows(docs, TASK)
    ]
    assert (
        order
        == sorted(order)
        != [
            (r["model_id"], r["gpu_model"], r["num_gpus"], r["max_num_seqs"])
            for r in synthetic.ROWS
        ]
    )
    configs = [(r["gpu_model"], r["num_gpus"], r["max_num_seqs"]) for r in rows(docs, TINY)]
    assert configs == sorted(configs)


def test_current_is_the_synthetic_snapshot_sorted() -> None:
    docs = made("current")
    assert all(key_sorted(d) for d in docs.values())
    assert all(set(r) == set(synthetic.ROWS[0]) for r in rows(docs, TASK))
    assert sorted(degrees(r) for r in rows(docs, TASK)) == sorted(
        (r["tensor_parallel"], r["expert_parallel"], r["data_parallel"]) for r in synthetic.ROWS
    )


def test_future_brings_new_fields_at_every_level_and_a_new_task() -> None:
    docs = made("future")
    index = doc(docs, "index.json")
    assert "generated_by" in index and "audio-chat" in index["tasks"]
    assert not any("audio-chat" in group for group in index["architectures"].values())
    assert all("release_date" in info for info in index["models"].values())
    assert "tasks/audio-chat.json" in docs and "models/acme__Tiny-1B__audio-chat.json" in docs
    for path in (TASK, TINY, IMAGE):
        assert "provenance" in doc(docs, path)
        assert all({"mean_itl_ms", "prefill_energy_joules"} <= set(r) for r in rows(docs, path))
    config = rows(docs, TINY)[0]
    assert (
        config["prefill_energy_joules"] is None and "pipeline_parallel" in config["parallelization"]
    )
    assert "unit" in config["output_length_distribution"]
    assert "unit" in doc(docs, TINY)["output_length_distribution"]


def test_write_formatted_changes_bytes_only(tmp_path: Path) -> None:
    docs = synthetic.documents()
    docs["index.json"]["models"]["acme/Tiny-1B"]["nickname"] = "Tiny Σ"
    upstream = formats.write_formatted(tmp_path / "a", docs)
    other = formats.write_formatted(
        tmp_path / "b", docs, indent=4, sort_keys=True, trailing_newline=True
    )
    text = (upstream / "index.json").read_text()
    assert text.startswith('{\n  "') and not text.endswith("\n") and "\\u03a3" in text
    for path in docs:
        a, b = (upstream / path).read_bytes(), (other / path).read_bytes()
        assert a != b and json.loads(a) == json.loads(b) and b.endswith(b"}\n")


def _kinds(docs: dict[str, Any]) -> dict[str, list[str]]:
    """Key lists of the first document of each kind (field names only)."""
    index = doc(docs, "index.json")
    diffusion = set(index["architectures"]["diffusion"])
    llm_task = next(
        d for p, d in docs.items() if p.startswith("tasks/") and d["task"] not in diffusion
    )
    image = doc(docs, "tasks/text-to-image.json")
    models = [d for p, d in docs.items() if p.startswith("models/") and "is_moe" not in d]
    llm_model = next(d for d in models if d["task"] not in diffusion)
    image_model = next(d for d in models if d["task"] == "text-to-image")
    info = next(v for v in index["models"].values() if "architecture" in v)
    out = {"index": list(index), "index.model": list(info)}
    out |= {"task": list(llm_task), "task.row": list(llm_task["configurations"][0])}
    out |= {"image": list(image), "image.row": list(image["configurations"][0])}
    out |= {"model": list(llm_model), "model.config": list(llm_model["configurations"][0])}
    out["model.par"] = list(llm_model["configurations"][0]["parallelization"])
    out |= {
        "image.model": list(image_model),
        "image.config": list(image_model["configurations"][0]),
    }
    out["image.par"] = list(image_model["configurations"][0]["parallelization"])
    orphan = [d for p, d in docs.items() if p.startswith("models/") and "is_moe" in d]
    for d in orphan:
        out |= {"orphan": list(d), "orphan.config": list(d["configurations"][0])}
        out["orphan.par"] = list(d["configurations"][0]["parallelization"])
        out["orphan.timelines"] = list(d["configurations"][0]["timelines"])
    return out


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("name", "snapshot"), [("december", "2025-12-17"), ("current", "2026-02-16")]
)
def test_key_orders_match_the_local_snapshot(name: str, snapshot: str) -> None:
    root = SNAPSHOTS / snapshot
    if not root.is_dir():
        pytest.skip(f"no {snapshot} snapshot")
    real = {str(p.relative_to(root)): json.loads(p.read_text()) for p in root.rglob("*.json")}
    assert _kinds(made(name)) == _kinds(real)
    assert not (root / "index.json").read_text().endswith("\n")
