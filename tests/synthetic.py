"""A small synthetic snapshot in the upstream layout, and a manifest for it, for unit tests."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

TASK = "lm-arena-chat"
BINS = [0.0, 100.0, 200.0]


def row(
    model_id: str,
    gpu: str,
    num_gpus: int,
    seqs: int,
    energy: float,
    itl: float,
    tp: int = 1,
    ep: int = 1,
    power: float = 500.0,
) -> dict[str, Any]:
    out_len = 100.0
    return {
        "model_id": model_id,
        "nickname": NICKNAMES[model_id],
        "gpu_model": gpu,
        "num_gpus": num_gpus,
        "max_num_seqs": seqs,
        "tensor_parallel": tp,
        "data_parallel": 1,
        "expert_parallel": ep,
        "avg_batch_size": seqs * 0.9,
        "avg_output_len": out_len,
        "avg_power_watts": power,
        "energy_per_token_joules": energy,
        "energy_per_request_joules": energy * out_len,
        "median_itl_ms": itl,
        "p90_itl_ms": itl * 1.5,
        "p95_itl_ms": itl * 2,
        "p99_itl_ms": itl * 3,
        "output_throughput_tokens_per_sec": power / energy,
        "total_params_billions": PARAMS[model_id][0],
        "activated_params_billions": PARAMS[model_id][1],
        "architecture": PARAMS[model_id][2],
        "weight_precision": "bfloat16",
    }


NICKNAMES = {"acme/Tiny-1B": "Tiny 1B", "acme/Mixture-8x2B": "Mixture 8x2B"}
PARAMS = {"acme/Tiny-1B": (1.0, 1.0, "Dense Transformer"), "acme/Mixture-8x2B": (16.0, 2.0, "MoE")}

ROWS = [
    row("acme/Tiny-1B", "H100", 1, 8, 0.5, 10.0, power=400.0),
    row("acme/Tiny-1B", "H100", 1, 64, 0.2, 20.0, power=600.0),
    row("acme/Tiny-1B", "B200", 1, 8, 0.3, 8.0, power=700.0),
    row("acme/Mixture-8x2B", "H100", 2, 16, 1.0, 30.0, tp=2, power=1000.0),
    # A repeated run: every published parameter equal to the next row, measurements differ.
    row("acme/Mixture-8x2B", "H100", 2, 32, 0.8, 35.0, tp=2, power=1100.0),
    row("acme/Mixture-8x2B", "H100", 2, 32, 0.9, 36.0, tp=2, power=1150.0),
    row("acme/Mixture-8x2B", "H100", 2, 8, 1.4, 25.0, ep=2, power=900.0),
]


def index() -> dict[str, Any]:
    return {
        "last_updated": "2030-01-02",
        "tasks": [TASK],
        "architectures": {"llm": [TASK]},
        "models": {
            m: {
                "nickname": NICKNAMES[m],
                "total_params_billions": p[0],
                "activated_params_billions": p[1],
                "architecture": p[2],
                "weight_precision": "bfloat16",
            }
            for m, p in PARAMS.items()
        },
    }


def model_file(model_id: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    configs = []
    for i, row in enumerate(rows):
        config = {
            k: v
            for k, v in row.items()
            if k
            not in (
                "model_id",
                "nickname",
                "tensor_parallel",
                "data_parallel",
                "expert_parallel",
                "total_params_billions",
                "activated_params_billions",
                "architecture",
                "weight_precision",
            )
        }
        config["parallelization"] = {
            "tensor_parallel": row["tensor_parallel"],
            "data_parallel": row["data_parallel"],
            "expert_parallel": row["expert_parallel"],
            "notes": "",
        }
        config["output_length_distribution"] = {"bins": BINS, "counts": [i + 1, 2]}
        configs.append(config)
    return {
        "model_id": model_id,
        "task": TASK,
        "architecture": PARAMS[model_id][2],
        "total_params_billions": PARAMS[model_id][0],
        "activated_params_billions": PARAMS[model_id][1],
        "weight_precision": "bfloat16",
        "output_length_distribution": {"bins": BINS, "counts": [10, 5]},
        "configurations": configs,
    }


def documents(rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Every file of the snapshot, by its path relative to the root."""
    rows = copy.deepcopy(ROWS if rows is None else rows)
    files: dict[str, Any] = {
        "index.json": index(),
        f"tasks/{TASK}.json": {
            "task": TASK,
            "task_display_name": "LLM Chat",
            "configurations": rows,
        },
    }
    for model_id in dict.fromkeys(r["model_id"] for r in rows):
        name = f"models/{model_id.replace('/', '__')}__{TASK}.json"
        files[name] = model_file(model_id, [r for r in rows if r["model_id"] == model_id])
    return files


def manifest() -> dict[str, Any]:
    return {
        "version": "1",
        "updated": "2030-01-03",
        "data_version": "2030-01-03",
        "source": {
            "name": "Synthetic",
            "publisher": "Tests",
            "url": "https://example.org/",
            "data_url": "https://example.org/tasks/lm-arena-chat.json",
            "version": "0.1",
            "released": "2030-01-01",
            "compiled": "2030-01-02",
            "compiled_evidence": "made up",
            "retrieved": "2030-01-03",
            "licence": "CC0-1.0",
            "licence_evidence": ["written for these tests"],
            "workload": "Chat (lm-arena-chat)",
            "method": "invented",
            "selection": "none",
            "cite": "nobody",
            "cite_url": "https://example.org/cite",
            "used_for": "tests",
            "configurations": "7 configurations",
        },
        "models": [
            {
                "slug": "tiny-1b",
                "name": "Tiny 1B",
                "model_id": "acme/Tiny-1B",
                "params_b": 1.0,
                "active_params_b": 1.0,
                "gpus": ["B200", "H100"],
                "url": "https://example.org/api/v1/models/tiny-1b.json",
                "page": "https://example.org/models/tiny-1b/",
            }
        ],
    }


def write(root: Path, files: dict[str, Any]) -> Path:
    for name, doc in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return root


def configuration_ids(
    task: str, rows: list[dict[str, Any]], settings: tuple[str, ...]
) -> list[str]:
    """The global ids the API gives `rows` of `task`, in order: the task, model, GPU type and
    count, the `settings` of the run, and the place among rows alike in all of these (written
    here on their own, not with LeadGreen's code)."""
    seen: dict[tuple[Any, ...], int] = {}
    ids = []
    for row in rows:
        alike = (row["model_id"], row["gpu_model"], row["num_gpus"], *(row[s] for s in settings))
        place = seen.get(alike, 0)
        seen[alike] = place + 1
        rest = ",".join(f"{s}={row[s]}" for s in settings)
        gpus = f"{row['gpu_model']}x{row['num_gpus']}"
        ids.append(f"Configuration:{task}:{row['model_id']}:{gpus}:{rest}:{place}")
    return ids


# The global ids of ROWS, in order.
IDS = configuration_ids(TASK, ROWS, ("max_num_seqs",))


def configuration_id(n: int) -> str:
    """The global id of the n-th row of ROWS, counted from 1."""
    return IDS[n - 1]
