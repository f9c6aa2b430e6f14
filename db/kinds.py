"""Task kinds as data: what differs between an LLM task and a diffusion task, said once.

Ingest (which shapes to validate, which columns to fill), reads (which table, which columns a
client may order by), answers (latency, energy, throughput, batch-size setting, metrics, default
deadlines) and export (how a row is written back) all take a task's kind from here. A new kind of
task (speech, embeddings) is one more `Kind` below, its table and its GraphQL type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from analysis.aggregate import DIFFUSION_METRICS, LLM_METRICS, Getter
from db import shapes
from db.rows import DiffusionRow, LlmRow, Row
from db.tables import ConfigurationRow, DiffusionConfigurationRow

Table = type[ConfigurationRow] | type[DiffusionConfigurationRow]


@dataclass(frozen=True, eq=False)
class Kind:
    """One kind of task and its row shape (equal only to itself)."""

    name: str
    # What error messages call the kind's tasks ("LLM or MLLM"), with its article ("an").
    called: str
    article: str
    table: Table
    # The kind's rows in memory (db.rows): a release's catalog holds them.
    row_type: type[Row]
    # Upstream field -> column of the kind's figures and settings, per output variant (the
    # diffusion tasks write `energy_per_image_joules` or `energy_per_video_joules`).
    variants: Mapping[str, Mapping[str, str]]
    # Which variant an upstream task-file row is, and the column that keeps it (if any).
    variant_of: Callable[[Mapping[str, Any]], str]
    variant_column: str | None
    # Pydantic shapes of a task-file row (per variant) and of a per-model-file row.
    task_shapes: Mapping[str, type[shapes.TaskRow]]
    model_shape: type[shapes.ModelFileRow]
    # Parallelism settings: flat in the task file, under `parallelization` in the model file.
    degrees: tuple[str, ...]
    # Whether the model file's rows carry parallelization notes and output-length histograms.
    detailed: bool
    # Columns a client may order configurations by.
    orderable: tuple[str, ...]
    # The batch-size setting: its column and its GraphQL field name.
    batch_setting: str
    batch_setting_field: str
    # Latency columns (the first is the default) and energy columns (likewise) for rankings.
    latencies: tuple[str, ...]
    energies: tuple[str, ...]
    throughput: str
    metrics: Mapping[str, Getter]
    # The leaderboard web app's default deadline for a task of this kind (None: none).
    default_deadline: Callable[[str], float | None]
    # Whether the data's identities (analysis.identities) are checked on its rows at ingest.
    checks_identities: bool

    def columns(self, variant: str) -> Mapping[str, str]:
        return self.variants[variant]

    def figures(self, variant: str, row: Any) -> dict[str, Any]:
        """A row's figures and settings by column: every column of the kind (None where its
        variant has none) and the variant, where the table keeps it."""
        values: dict[str, Any] = {c: None for v in self.variants.values() for c in v.values()}
        values.update(
            (column, getattr(row, name)) for name, column in self.columns(variant).items()
        )
        if self.variant_column is not None:
            values[self.variant_column] = variant
        return values

    def upstream(self, row: Any) -> dict[str, Any]:
        """A stored row's figures and settings by upstream name (the inverse of `figures`)."""
        variant = (
            getattr(row, self.variant_column) if self.variant_column else next(iter(self.variants))
        )
        return {name: getattr(row, column) for name, column in self.columns(variant).items()}

    def point(self, row: Any, latency: str | None = None) -> tuple[float, float]:
        """(latency, energy) of a row on the time-energy plane (the default energy)."""
        return float(getattr(row, latency or self.latencies[0])), float(
            getattr(row, self.energies[0])
        )


LLM_NUMBERS = (
    "num_gpus",
    "max_num_seqs",
    "tensor_parallel",
    "data_parallel",
    "expert_parallel",
    "avg_batch_size",
    "avg_output_len",
    "avg_power_watts",
    "energy_per_request_joules",
    "energy_per_token_joules",
    "median_itl_ms",
    "p90_itl_ms",
    "p95_itl_ms",
    "p99_itl_ms",
    "output_throughput_tokens_per_sec",
)
DIFFUSION_COMMON = (
    "num_gpus",
    "batch_size",
    "inference_steps",
    "ulysses_degree",
    "ring_degree",
    "avg_power_watts",
    "batch_latency_s",
)


def _same(*names: str) -> dict[str, str]:
    return {name: name for name in names}


# The leaderboard web app's default batch-latency deadlines, in seconds (github.com/ml-energy/
# leaderboard, src/config/tasks.ts at df188d9, `defaultLatencyDeadlineS`); its LLM and MLLM
# tasks all default to an ITL of 500 ms (`defaultItlDeadlineMs`).
DIFFUSION_DEADLINES_S = {"text-to-image": 30.0, "text-to-video": 300.0}
LLM_DEADLINE_MS = 500.0

LLM = Kind(
    name="llm",
    called="LLM or MLLM",
    article="an",
    table=ConfigurationRow,
    row_type=LlmRow,
    variants={"text": _same(*LLM_NUMBERS)},
    variant_of=lambda _row: "text",
    variant_column=None,
    task_shapes={"text": shapes.LlmTaskRow},
    model_shape=shapes.ModelFileConfiguration,
    degrees=("tensor_parallel", "data_parallel", "expert_parallel"),
    detailed=True,
    orderable=LLM_NUMBERS,
    batch_setting="max_num_seqs",
    batch_setting_field="maxNumSeqs",
    latencies=("median_itl_ms", "p90_itl_ms", "p95_itl_ms", "p99_itl_ms"),
    energies=("energy_per_token_joules", "energy_per_request_joules"),
    throughput="output_throughput_tokens_per_sec",
    metrics=LLM_METRICS,
    default_deadline=lambda _task: LLM_DEADLINE_MS,
    checks_identities=True,
)
DIFFUSION = Kind(
    name="diffusion",
    called="diffusion",
    article="a",
    table=DiffusionConfigurationRow,
    row_type=DiffusionRow,
    variants={
        "image": _same(*DIFFUSION_COMMON)
        | {
            "energy_per_image_joules": "energy_per_output_joules",
            "throughput_images_per_sec": "throughput_outputs_per_sec",
            "image_height": "height",
            "image_width": "width",
        },
        "video": _same(*DIFFUSION_COMMON, "fps", "num_frames")
        | {
            "energy_per_video_joules": "energy_per_output_joules",
            "throughput_videos_per_sec": "throughput_outputs_per_sec",
            "video_height": "height",
            "video_width": "width",
        },
    },
    variant_of=lambda row: "video" if "energy_per_video_joules" in row else "image",
    variant_column="output",
    task_shapes={"image": shapes.ImageTaskRow, "video": shapes.VideoTaskRow},
    model_shape=shapes.DiffusionModelFileConfiguration,
    degrees=("ulysses_degree", "ring_degree"),
    detailed=False,
    orderable=(
        "num_gpus",
        "batch_size",
        "inference_steps",
        "ulysses_degree",
        "ring_degree",
        "height",
        "width",
        "avg_power_watts",
        "batch_latency_s",
        "energy_per_output_joules",
        "throughput_outputs_per_sec",
    ),
    batch_setting="batch_size",
    batch_setting_field="batchSize",
    latencies=("batch_latency_s",),
    energies=("energy_per_output_joules",),
    throughput="throughput_outputs_per_sec",
    metrics=DIFFUSION_METRICS,
    default_deadline=DIFFUSION_DEADLINES_S.get,
    checks_identities=False,
)
KINDS = (LLM, DIFFUSION)
BY_ROW_TYPE: dict[type[Row], Kind] = {kind.row_type: kind for kind in KINDS}


def kind_of(*architectures: str | None) -> Kind:
    """The kind of a task, from its architecture in index.json and in its own file: diffusion
    when either says so, otherwise LLM (LLM and MLLM tasks share the row shape)."""
    return DIFFUSION if "diffusion" in architectures else LLM


def kind_of_row(row: Row) -> Kind:
    return BY_ROW_TYPE[type(row)]
