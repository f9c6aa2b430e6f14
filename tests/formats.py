"""Each upstream `public/data` format since the v3.0 launch, made from the synthetic snapshot.

Field names, key orders and layout rules read from ml-energy/leaderboard history; every value is
synthetic. Commits (index last_updated): 9fa07d1 (2025-11-29), 2689bff (11-30), e0ba9ed (12-15),
281c69e (12-17), 6e70d23 (2026-01-01), 0ea52b6 (02-13), f76e8d3, 82e15a4, cd68db7, 7885788 (02-16).
"""

from __future__ import annotations

import copy
import json
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Docs = dict[str, Any]

# Key orders written before the toolkit (no sort_keys); an indented line continues the last.
_KEY_ORDERS = """
index: last_updated tasks architectures models
architectures: llm mllm diffusion
index.model: nickname total_params_billions activated_params_billions architecture weight_precision
task: task task_display_name architecture configurations
llm.row: model_id nickname gpu_model num_gpus total_params_billions activated_params_billions
  architecture weight_precision max_num_seqs max_num_batched_tokens tensor_parallel expert_parallel
  data_parallel energy_per_token_joules energy_per_request_joules avg_output_len avg_power_watts
  median_itl_ms output_throughput_tokens_per_sec p90_itl_ms p95_itl_ms p99_itl_ms avg_batch_size
llm.model: model_id task total_params_billions activated_params_billions architecture
  weight_precision output_length_distribution configurations
llm.config: gpu_model num_gpus max_num_seqs max_num_batched_tokens parallelization
  energy_per_token_joules energy_per_request_joules avg_output_len avg_power_watts median_itl_ms
  p90_itl_ms p95_itl_ms p99_itl_ms output_throughput_tokens_per_sec avg_batch_size
  output_length_distribution
llm.par: tensor_parallel expert_parallel data_parallel notes
diffusion.row: model_id nickname gpu_model num_gpus total_params_billions activated_params_billions
  weight_precision batch_size batch_latency_s avg_power_watts ulysses_degree ring_degree
  inference_steps energy_per_image_joules throughput_images_per_sec image_height image_width
  energy_per_video_joules throughput_videos_per_sec video_height video_width num_frames fps
diffusion.model: model_id task nickname total_params_billions activated_params_billions
  weight_precision configurations
diffusion.config: gpu_model num_gpus batch_size parallelization batch_latency_s avg_power_watts
  inference_steps energy_per_image_joules throughput_images_per_sec image_height image_width
  energy_per_video_joules throughput_videos_per_sec video_height video_width num_frames fps
diffusion.par: ulysses_degree ring_degree
orphan: model_id task total_params_billions activated_params_billions is_moe weight_precision
  output_length_distribution itl_distribution configurations
orphan.config: gpu_model num_gpus max_num_seqs max_num_batched_tokens parallelization
  energy_per_token_joules energy_per_request_joules median_itl_ms p95_itl_ms
  output_throughput_tokens_per_sec avg_batch_size kv_cache_usage_percent timelines
sort: model_id gpu_model num_gpus max_num_seqs batch_size image_height video_height image_width
  video_width inference_steps ulysses_degree ring_degree
"""
_LINES = (line.partition(":") for line in _KEY_ORDERS.replace("\n  ", " ").split("\n"))
KEYS = {name: tuple(keys.split()) for name, _, keys in _LINES if name}  # sort: the toolkit's


def _order(d: dict[str, Any], kind: str) -> dict[str, Any]:  # KEYS[kind] first, then the rest
    keys = KEYS[kind]
    return {**{k: d[k] for k in keys if k in d}, **{k: v for k, v in d.items() if k not in keys}}


def _sort_keys(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _sort_keys(doc[k]) for k in sorted(doc)}
    return [_sort_keys(v) for v in doc] if isinstance(doc, list) else doc


def _files(docs: Docs) -> Iterator[tuple[str, str, bool, dict[str, Any]]]:
    """(path, "tasks" or "models", is a diffusion task, document) of each task or model file."""
    diffusion = set(docs["index.json"]["architectures"].get("diffusion", []))
    for path, doc in list(docs.items()):
        if isinstance(doc, dict) and path.startswith(("tasks/", "models/")):
            yield path, path.split("/")[0], doc.get("task") in diffusion, doc


def _sort_rows(docs: Docs) -> Docs:
    def key(row: dict[str, Any]) -> tuple[tuple[bool, Any], ...]:
        flat = {**row.get("parallelization", {}), **row}
        return tuple((flat.get(k) is None, flat.get(k) or 0) for k in KEYS["sort"])

    out = copy.deepcopy(docs)
    for _, _, _, doc in _files(out):
        doc["configurations"].sort(key=key)
    return out


def _pre_toolkit(docs: Docs, *, avg_output_len: bool, zero: bool, precision: bool) -> Docs:
    """What scripts/build_data.py wrote before the toolkit: tensor_parallel always 1 and, with
    `zero`, expert/data_parallel 0 when not configured (a one-GPU MoE kept expert 1)."""
    out = copy.deepcopy(docs)
    index = out["index.json"]
    index["architectures"] = _order(index["architectures"], "architectures")
    index["models"] = {m: _order(v, "index.model") for m, v in index["models"].items()}
    out["index.json"] = _order(index, "index")
    for path, kind, diffusion, doc in _files(out):
        family = "diffusion" if diffusion else "llm"
        for i, row in enumerate(rows := doc["configurations"]):
            if diffusion and not precision and kind == "tasks":
                row.pop("weight_precision", None)
            if not diffusion:
                par = row.get("parallelization", row)
                arch = doc.get("architecture", row.get("architecture"))
                one_gpu_moe, par["tensor_parallel"] = arch == "MoE" and row["num_gpus"] == 1, 1
                for k in ("expert_parallel", "data_parallel") if zero else ():
                    if par[k] == 1 and not (k == "expert_parallel" and one_gpu_moe):
                        par[k] = 0
                if not avg_output_len:
                    row.pop("avg_output_len", None)
                row.setdefault("max_num_batched_tokens", None)
            if "parallelization" in row:
                row["parallelization"] = _order(row["parallelization"], f"{family}.par")
            rows[i] = _order(row, f"{family}.row" if kind == "tasks" else f"{family}.config")
        out[path] = _order(doc, "task" if kind == "tasks" else f"{family}.model")
    return out


def with_orphan(docs: Docs, task: str = "video-chat") -> Docs:
    """Add the pre-launch model file upstream kept from 9fa07d1 to at least 281c69e (no rows for
    it in any task file; is_moe, itl_distribution, kv_cache_usage_percent, timelines)."""
    out = copy.deepcopy(docs)
    row = next(d for _, k, dif, d in _files(out) if k == "tasks" and not dif)["configurations"][0]
    itl, power = row["median_itl_ms"], row["avg_power_watts"]
    config = {k: row.get(k) for k in KEYS["orphan.config"]}
    config["parallelization"] = dict(zip(KEYS["llm.par"], (1, 0, 0, ""), strict=True))
    config["kv_cache_usage_percent"] = 5.0
    names = ("power_instant", "power_average", "temperature", "batch_size")
    config["timelines"] = {n: {"timestamps": [0.0, 1.0], "values": [power] * 2} for n in names}
    orphan = {k: row.get(k) for k in KEYS["orphan"]}
    orphan |= {"task": task, "is_moe": row["architecture"] == "MoE", "configurations": [config]}
    orphan["output_length_distribution"] = {"bins": [0.0, 50.0, 100.0], "counts": [1, 1]}
    percentiles = {f"p{p}": itl for p in (10, 25, 50, 75, 90, 95, 99)}
    orphan["itl_distribution"] = {"percentiles": percentiles, "cdf_points": [[0, 0.0], [itl, 1.0]]}
    out[f"models/{row['model_id'].replace('/', '__')}__{task}.json"] = orphan
    return out


def launch_format(docs: Docs) -> Docs:
    """9fa07d1 (2025-11-29), 2689bff (11-30): no avg_output_len, max_num_batched_tokens null,
    expert/data_parallel 0 if unset, no weight_precision in diffusion task rows, orphan file."""
    return with_orphan(_pre_toolkit(docs, avg_output_len=False, zero=True, precision=False))


def mid_december_format(docs: Docs) -> Docs:
    """e0ba9ed (2025-12-15): degrees 1 (no 0), still no avg_output_len, diffusion task rows gain
    weight_precision twice (a duplicate JSON key: after activated_params_billions and last)."""
    out = with_orphan(_pre_toolkit(docs, avg_output_len=False, zero=False, precision=True))
    for path, kind, diffusion, doc in _files(out):
        rows = []
        for row in doc["configurations"] if kind == "tasks" and diffusion else ():
            text = json.dumps(row, indent=2)[:-2] + ',\n  "weight_precision": '
            rows.append(textwrap.indent(text + json.dumps(row["weight_precision"]) + "\n}", "    "))
        if rows:  # json.dumps cannot write a duplicate key, so splice the rows in as text
            text = json.dumps({**doc, "configurations": "@"}, indent=2)
            out[path] = text.replace('"@"', "[\n" + ",\n".join(rows) + "\n  ]")
    return out


def december_format(docs: Docs) -> Docs:
    """281c69e (2025-12-17) and 6e70d23 (2026-01-01, same layout): adds avg_output_len, keeps
    max_num_batched_tokens null and tensor_parallel 1, insertion key order, orphan file."""
    return with_orphan(_pre_toolkit(docs, avg_output_len=True, zero=False, precision=True))


def february_format(docs: Docs) -> Docs:
    """0ea52b6 (2026-02-13): the December fields with every object's keys sorted (sort_keys),
    rows in the old order; whether the orphan file was still there is not known."""
    return dict(_sort_keys(_pre_toolkit(docs, avg_output_len=True, zero=False, precision=True)))


def february_resorted_format(docs: Docs) -> Docs:
    """f76e8d3 (index still 2026-02-13): as February, rows re-sorted by model, GPU, GPU count,
    max_num_seqs (diffusion: batch size, size, steps, degrees) in task and model files."""
    return _sort_rows(february_format(docs))


def current_format(docs: Docs) -> Docs:
    """82e15a4, cd68db7 and 7885788 (2026-02-16, the head): max_num_batched_tokens absent,
    tensor_parallel as configured (num_gpus for dense multi-GPU), sorted rows and keys."""
    out = _sort_rows(docs)
    for _, _, diffusion, doc in _files(out):
        for row in [] if diffusion else doc["configurations"]:
            row.pop("max_num_batched_tokens", None)
    return dict(_sort_keys(out))


def future_format(docs: Docs, task: str = "audio-chat") -> Docs:
    """Speculative: new fields at every level (one null), and a new task in `tasks` that no
    `architectures` group lists, as the toolkit's fixed task sets would publish it."""
    out = current_format(docs)
    old = next(d for _, k, dif, d in _files(out) if k == "tasks" and not dif)["task"]
    for path, _, _, doc in _files(out):
        if doc["task"] == old:
            new = path.removesuffix(f"{old}.json") + f"{task}.json"
            out[new] = {**copy.deepcopy(doc), "task": task}
    index = out["index.json"]
    index |= {"tasks": sorted([*index["tasks"], task]), "generated_by": {"tool": "synthetic"}}
    index["models"] = {m: {**v, "release_date": None} for m, v in index["models"].items()}
    for _, _, _, doc in _files(out):
        doc["provenance"] = "synthetic"
        histograms = [doc.get("output_length_distribution")]
        for row in doc["configurations"]:
            row |= {"mean_itl_ms": 1.0, "prefill_energy_joules": None}
            row.get("parallelization", {})["pipeline_parallel"] = 1
            histograms.append(row.get("output_length_distribution"))
        for histogram in filter(None, histograms):
            histogram["unit"] = "tokens"
    return dict(_sort_keys(out))


def with_diffusion(docs: Docs, task: str = "text-to-image") -> Docs:
    """Add a small text-to-image task and its per-model file, in the 2026-02-16 field set."""
    out, model = copy.deepcopy(docs), "acme/Pixel-2B"
    facts: Docs = {"nickname": "Pixel 2B", "total_params_billions": 2.0}
    facts |= {"activated_params_billions": 2.0, "weight_precision": "bfloat16"}
    configs, rows = [], []
    for gpus, batch, ulysses in ((1, 1, 1), (2, 4, 2), (2, 4, 1)):
        latency, power = 2.0 * batch / gpus, 600.0 * gpus
        par = {"ulysses_degree": ulysses, "ring_degree": gpus // ulysses}
        flat = {"gpu_model": "H100", "num_gpus": gpus, "batch_size": batch}
        flat |= {"batch_latency_s": latency, "avg_power_watts": power, "inference_steps": 20}
        flat |= {"energy_per_image_joules": power * latency / batch, "image_height": 1024}
        flat |= {"throughput_images_per_sec": batch / latency, "image_width": 1024}
        configs.append({**flat, "parallelization": par})
        rows.append({"model_id": model, **facts, **flat, **par})
    index = out["index.json"]
    index["tasks"], index["models"][model] = sorted([*index["tasks"], task]), dict(facts)
    index["architectures"].setdefault("diffusion", []).append(task)
    head: Docs = {"task": task, "task_display_name": "Text to Image"}
    out[f"tasks/{task}.json"] = {**head, "architecture": "diffusion", "configurations": rows}
    head = {"model_id": model, "task": task, **facts, "configurations": configs}
    out[f"models/{model.replace('/', '__')}__{task}.json"] = head
    return out


def write_formatted(root: Path, docs: Docs, *, trailing_newline: bool = False, **dump: Any) -> Path:
    """Write `docs` with json.dumps(**dump) (indent, sort_keys, ...); the defaults give upstream's
    bytes (indent 2, ASCII escapes, no trailing newline). Text documents are written as they are."""
    for name, doc in docs.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        text = doc if isinstance(doc, str) else json.dumps(doc, **{"indent": 2} | dump)
        (root / name).write_text(text + "\n" * (trailing_newline and not text.endswith("\n")))
    return root


FORMATS: dict[str, Callable[[Docs], Docs]] = {  # oldest first
    name: globals()[f"{name}_format"]
    for name in "launch mid_december december february february_resorted current future".split()
}
