"""A snapshot K times the size of an upstream one, in the upstream layout, for scale runs.

Every model of the source is copied K times. Copy 0 is the original, byte for byte; copy i
(1 ≤ i < K) is the model `{model_id}-x{i}` (`{org}/{name}-x{i}`) nicknamed `{nickname} x{i}`,
added to index.json, with its task-file rows and its per-model files. The figures of a copy
are the original's, each measured float multiplied by a factor in [0.9, 1.1] drawn per row from
a seeded RNG, so that no two rows of a task carry the same figures:

- LLM and MLLM rows: avg_output_len, energy_per_token_joules, output_throughput_tokens_per_sec
  and the ITL percentiles (one factor for the four, so that median ≤ p90 ≤ p95 ≤ p99 stays
  true) are drawn; energy_per_request_joules = energy_per_token_joules * avg_output_len and
  avg_power_watts = energy_per_token_joules * output_throughput_tokens_per_sec are computed
  from them on the rows where the source keeps those identities (a row that breaks one gets
  its own factor there instead).
- Diffusion rows: batch_latency_s and avg_power_watts are drawn; throughput = batch_size /
  batch_latency_s and energy per image/video = avg_power_watts * batch_latency_s / batch_size
  are computed where the source keeps those identities.
- Any other float of a row gets a factor of its own. Factors are drawn again until every
  changed float moved by a factor in [0.9, 1.1] other than 1.

Settings stay as they are: gpu_model, num_gpus, max_num_seqs, parallelism, batch_size,
avg_batch_size (it is bounded by max_num_seqs), resolutions, steps, frames, and the model
facts (parameters, precision); so do the output-length histograms.

It streams: index.json is written first, then one task at a time (its file's rows are written
copy by copy, and each copy's per-model files next to them), so memory follows the largest task
of the source, not K. Each file is written in the JSON style of the file it copies (indent, key
order, ASCII escaping, final newline), so K = 1 reproduces the source byte for byte.

    python -m bench.scale SOURCE TARGET --k 50 [--seed 0]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.scale_files import (
    JsonStyle,
    copy_id,
    model_file,
    read_json,
    renamed,
    stream_document,
    write_json,
)

# Floats that are facts of the model or settings of the run, not measurements.
UNCHANGED = frozenset({"activated_params_billions", "total_params_billions", "avg_batch_size"})
# Relative difference below which an identity counts as holding (float rounding is ~1e-16).
TOLERANCE = 1e-9
LOW, HIGH = 0.9, 1.1
ATTEMPTS = 1000
# Keys of a model file's row that are not flat figures of the task-file row.
NESTED = ("parallelization", "output_length_distribution")

Row = dict[str, Any]


@dataclass(frozen=True)
class Stats:
    """What `write_scaled` wrote."""

    models: int
    configurations: int
    bytes: int
    files: int


def _identity(row: Row) -> bytes:
    """A digest of a row's figures and settings, apart from which model it is of."""
    rest = {k: v for k, v in row.items() if k not in ("model_id", "nickname")}
    return hashlib.blake2b(json.dumps(rest, sort_keys=True).encode(), digest_size=16).digest()


def _holds(left: float, right: float) -> bool:
    scale = max(abs(left), abs(right))
    return scale == 0 or abs(left - right) / scale <= TOLERANCE


def _floats(row: Row) -> list[str]:
    return [
        k for k, v in row.items() if isinstance(v, float) and k not in UNCHANGED and k not in NESTED
    ]


def _llm_plan(row: Row) -> Callable[[Callable[[], float]], dict[str, float]]:
    ept, length = row["energy_per_token_joules"], row["avg_output_len"]
    throughput, power = row["output_throughput_tokens_per_sec"], row["avg_power_watts"]
    per_request = _holds(row["energy_per_request_joules"], ept * length)
    per_power = throughput != 0 and _holds(power / throughput, ept)
    itl = [k for k in ("median_itl_ms", "p90_itl_ms", "p95_itl_ms", "p99_itl_ms") if k in row]

    def draw(factor: Callable[[], float]) -> dict[str, float]:
        new_ept, new_length = ept * factor(), length * factor()
        new_throughput, latency = throughput * factor(), factor()
        new: dict[str, float] = {
            "energy_per_token_joules": new_ept,
            "avg_output_len": new_length,
            "output_throughput_tokens_per_sec": new_throughput,
            **{k: row[k] * latency for k in itl},
        }
        new["energy_per_request_joules"] = (
            new_ept * new_length if per_request else row["energy_per_request_joules"] * factor()
        )
        new["avg_power_watts"] = new_ept * new_throughput if per_power else power * factor()
        return new

    return draw


def _diffusion_plan(row: Row) -> Callable[[Callable[[], float]], dict[str, float]]:
    output = "image" if "energy_per_image_joules" in row else "video"
    energy_key, throughput_key = f"energy_per_{output}_joules", f"throughput_{output}s_per_sec"
    size, latency, power = row["batch_size"], row["batch_latency_s"], row["avg_power_watts"]
    energy, throughput = row[energy_key], row[throughput_key]
    per_throughput = latency != 0 and _holds(throughput, size / latency)
    per_energy = size != 0 and _holds(energy, power * latency / size)

    def draw(factor: Callable[[], float]) -> dict[str, float]:
        new_latency, new_power = latency * factor(), power * factor()
        return {
            "batch_latency_s": new_latency,
            "avg_power_watts": new_power,
            throughput_key: size / new_latency if per_throughput else throughput * factor(),
            energy_key: new_power * new_latency / size if per_energy else energy * factor(),
        }

    return draw


def perturb(row: Row, rng: random.Random) -> dict[str, float]:
    """New values for the measured floats of a task-file row (the row itself is not changed)."""
    llm = {"energy_per_token_joules", "avg_output_len", "energy_per_request_joules"}
    diffusion = {"batch_latency_s", "batch_size", "avg_power_watts"}
    if llm <= row.keys() and {"output_throughput_tokens_per_sec", "avg_power_watts"} <= row.keys():
        plan = _llm_plan(row)
    elif diffusion <= row.keys() and any(k.startswith("energy_per_") for k in row):
        plan = _diffusion_plan(row)
    else:
        plan = None
    keys = _floats(row)

    def factor() -> float:
        return rng.uniform(LOW, HIGH)

    for _ in range(ATTEMPTS):
        new = plan(factor) if plan is not None else {}
        new.update((k, row[k] * factor()) for k in keys if k not in new)
        if all(_moved(row[k], v) for k, v in new.items()):
            return new
    raise RuntimeError(f"no factors in [{LOW}, {HIGH}] for row {row}")


def _moved(old: float, new: float) -> bool:
    if old == 0:
        return new == 0
    ratio = new / old
    return LOW * (1 - 1e-12) <= ratio <= HIGH * (1 + 1e-12) and new != old


def _copy_rows(
    rows: list[Row],
    models: dict[str, tuple[Any, JsonStyle]],
    task: str,
    i: int,
    seed: int,
    seen: set[bytes],
) -> tuple[list[Row], dict[str, Any]]:
    """Copy i of a task's rows and of its per-model files (model_id → document)."""
    rng = random.Random(f"{seed}:{task}:{i}")
    out_rows: list[Row] = []
    docs: dict[str, Any] = {}
    position: dict[str, int] = {}
    for row in rows:
        model_id = row["model_id"]
        source, _ = models[model_id]
        k = position[model_id] = position.get(model_id, -1) + 1
        if model_id not in docs:
            docs[model_id] = renamed(dict(source, configurations=[]), i)
        detail = source["configurations"][k]
        new: dict[str, float] = {}
        for _ in range(ATTEMPTS):
            new = perturb(row, rng) if i else {}
            identity = _identity({**row, **new})
            if i == 0 or identity not in seen:
                break
        else:
            raise RuntimeError(f"{task}: copy {i} of a {model_id} row repeats another row")
        seen.add(identity)
        out_rows.append(renamed({**row, **new}, i))
        docs[model_id]["configurations"].append(
            {**detail, **{f: v for f, v in new.items() if f in detail}}
        )
    return out_rows, docs


@dataclass
class _Tally:
    bytes: int = 0
    files: int = 0


def _task_rows(
    target: Path,
    task: str,
    rows: list[Row],
    sources: dict[str, tuple[Any, JsonStyle]],
    k: int,
    seed: int,
    tally: _Tally,
) -> Iterator[Row]:
    """The task file's rows, copy by copy, writing each copy's per-model files on the way."""
    seen: set[bytes] = set()
    for i in range(k):
        out_rows, docs = _copy_rows(rows, sources, task, i, seed, seen)
        for model_id, doc in docs.items():
            tally.bytes += write_json(
                target / model_file(copy_id(model_id, i), task), doc, sources[model_id][1]
            )
            tally.files += 1
        yield from out_rows


def write_scaled(source: Path, target: Path, k: int, seed: int = 0) -> Stats:
    """Write the K-times snapshot of `source` (a directory in the upstream layout) to `target`."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    if target.exists() and any(target.iterdir()):
        raise FileExistsError(f"{target} is not empty")
    (target / "tasks").mkdir(parents=True, exist_ok=True)
    (target / "models").mkdir(exist_ok=True)
    index, index_style = read_json(source / "index.json")
    originals: dict[str, Any] = index["models"]
    models = {
        copy_id(model_id, i): renamed(facts, i)
        for i in range(k)
        for model_id, facts in originals.items()
    }
    tally = _Tally(write_json(target / "index.json", dict(index, models=models), index_style), 1)
    configurations = 0
    for task in index["tasks"]:
        task_doc, task_style = read_json(source / "tasks" / f"{task}.json")
        rows: list[Row] = task_doc["configurations"]
        counts: dict[str, int] = {}
        for row in rows:
            counts[row["model_id"]] = counts.get(row["model_id"], 0) + 1
        sources = {m: read_json(source / model_file(m, task)) for m in counts}
        for m, (doc, _) in sources.items():
            if len(doc["configurations"]) != counts[m]:
                raise ValueError(f"{model_file(m, task)} does not pair with tasks/{task}.json")
        tally.bytes += stream_document(
            target / "tasks" / f"{task}.json",
            task_doc,
            "configurations",
            _task_rows(target, task, rows, sources, k, seed, tally),
            task_style,
        )
        tally.files += 1
        configurations += len(rows) * k
    return Stats(len(models), configurations, tally.bytes, tally.files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale", description="Write a K-times upstream snapshot."
    )
    parser.add_argument("source", type=Path, help="a snapshot directory in the upstream layout")
    parser.add_argument("target", type=Path, help="an empty or new directory")
    parser.add_argument("--k", type=int, default=10, help="copies of every model (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="RNG seed (default 0)")
    args = parser.parse_args(argv)
    try:
        stats = write_scaled(args.source, args.target, args.k, args.seed)
    except (OSError, ValueError) as exc:
        parser.exit(1, f"error: {exc}\n")
    print(
        f"wrote {args.target}: K={args.k}, {stats.models} models, "
        f"{stats.configurations} configurations, {stats.files} files, {stats.bytes:,} bytes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
