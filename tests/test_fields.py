"""The fields of a task row, declared once (db.fields), and what is made of the declaration:
the task files' shapes, the kinds' columns and filters, the rows in memory. (The tables are
checked against the migrations by test_migrations, the API's fields by test_schema, the
metrics' order by test_aggregate.)"""

from __future__ import annotations

from dataclasses import fields as dataclass_fields

import pytest

from db import fields
from db.kinds import DIFFUSION, LLM
from db.rows import DiffusionRow, LlmRow
from db.shapes import TASK_ROWS, TaskRow

LLM_COLUMNS = [
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
]
DIFFUSION_COMMON = [
    "num_gpus",
    "avg_power_watts",
    "batch_size",
    "batch_latency_s",
    "inference_steps",
    "ulysses_degree",
    "ring_degree",
]


def test_each_variant_s_upstream_names_and_their_columns() -> None:
    """An upstream name per column, in the declaration's order: how rows are stored, and how
    a configuration's history gives them back."""
    assert LLM.variants == {fields.TEXT: {name: name for name in LLM_COLUMNS}}
    same = {name: name for name in DIFFUSION_COMMON}
    assert DIFFUSION.variants == {
        fields.IMAGE: same
        | {
            "energy_per_image_joules": "energy_per_output_joules",
            "throughput_images_per_sec": "throughput_outputs_per_sec",
            "image_height": "height",
            "image_width": "width",
        },
        fields.VIDEO: same
        | {
            "energy_per_video_joules": "energy_per_output_joules",
            "throughput_videos_per_sec": "throughput_outputs_per_sec",
            "video_height": "height",
            "video_width": "width",
            "fps": "fps",
            "num_frames": "num_frames",
        },
    }


@pytest.mark.parametrize(
    ("variant", "own", "optional"),
    [
        # avg_output_len is absent from the files before 2025-12-17 (`since`).
        (fields.TEXT, [*LLM_COLUMNS, "architecture"], ["avg_output_len"]),
        (
            fields.IMAGE,
            [
                *DIFFUSION_COMMON,
                "energy_per_image_joules",
                "throughput_images_per_sec",
                "image_height",
                "image_width",
            ],
            [],
        ),
        (
            fields.VIDEO,
            [
                *DIFFUSION_COMMON,
                "energy_per_video_joules",
                "throughput_videos_per_sec",
                "video_height",
                "video_width",
                # Nullable columns (image rows have none), but required of a video row.
                "fps",
                "num_frames",
            ],
            [],
        ),
    ],
)
def test_a_task_file_row_s_shape_per_variant(variant, own, optional) -> None:
    shape = TASK_ROWS[variant].model_fields
    declared = [name for name in shape if name not in TaskRow.model_fields]
    assert declared == own
    assert [name for name in declared if not shape[name].is_required()] == optional


def test_rows_in_memory_hold_their_kind_s_fields() -> None:
    kept = ["id", "key", "release_id", "task_id", "model_id", "gpu", "task_row", "model_row"]
    assert [f.name for f in dataclass_fields(LlmRow)] == [
        *kept,
        "extra",
        *LLM_COLUMNS[:5],
        # From the per-model file, with its histogram.
        "parallel_notes",
        *LLM_COLUMNS[5:],
        "length_bins_json",
        "length_counts_json",
    ]
    assert [f.name for f in dataclass_fields(DiffusionRow)] == [
        *kept,
        "extra",
        *DIFFUSION_COMMON,
        "energy_per_output_joules",
        "throughput_outputs_per_sec",
        "height",
        "width",
        "fps",
        "num_frames",
        "output",
    ]


def test_the_kinds_filters_and_roles() -> None:
    assert [(f.name, f.column, f.most, f.setting) for f in LLM.filters] == [
        ("max_num_seqs_at_least", "max_num_seqs", False, True),
        ("max_num_seqs_at_most", "max_num_seqs", True, True),
        ("max_median_itl_ms", "median_itl_ms", True, False),
    ]
    assert DIFFUSION.filters == ()
    assert (LLM.batch_setting, LLM.latencies, LLM.energies, LLM.throughput) == (
        "max_num_seqs",
        ("median_itl_ms", "p90_itl_ms", "p95_itl_ms", "p99_itl_ms"),
        ("energy_per_token_joules", "energy_per_request_joules"),
        "output_throughput_tokens_per_sec",
    )
    assert (DIFFUSION.batch_setting, DIFFUSION.latencies, DIFFUSION.energies) == (
        "batch_size",
        ("batch_latency_s",),
        ("energy_per_output_joules",),
    )
    assert (LLM.degrees, DIFFUSION.degrees) == (
        ("tensor_parallel", "data_parallel", "expert_parallel"),
        ("ulysses_degree", "ring_degree"),
    )
