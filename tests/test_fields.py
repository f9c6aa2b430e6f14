"""The fields of a task row, declared once (db.fields), and what is made of the declaration:
the task files' shapes, the kinds' columns, roles and filters, the rows in memory. (The tables
are checked against the migrations by test_migrations, the API's fields, enums and inputs by
test_schema, the metrics' order by test_aggregate.)"""

from __future__ import annotations

from dataclasses import fields as dataclass_fields

from db import fields
from db.kinds import DIFFUSION, KINDS, LLM
from db.shapes import TASK_ROWS, TaskRow


def test_every_field_is_of_some_kind_s_rows_and_described() -> None:
    variants = {v for kind in KINDS for v in kind.rows}
    assert variants == set(fields.EVERY_ROW)
    for f in fields.FIELDS:
        assert [v for v in f.spec.rows if v not in variants] == [], f.name
        assert all(f.description_in(v) for v in f.spec.rows), f.name


def test_a_variant_names_a_field_its_own_way() -> None:
    """The diffusion files write `image_height` or `video_height`: one column, `height`."""
    image, video = DIFFUSION.variants[fields.IMAGE], DIFFUSION.variants[fields.VIDEO]
    assert (image["image_height"], video["video_height"]) == ("height", "height")
    assert "video_height" not in image
    assert (image["energy_per_image_joules"], video["energy_per_video_joules"]) == (
        "energy_per_output_joules",
        "energy_per_output_joules",
    )
    # What only the per-model file says is no column of the task file's.
    assert "parallel_notes" not in LLM.variants[fields.TEXT]


def test_a_task_file_row_s_shape_per_variant() -> None:
    text, image, video = (TASK_ROWS[v].model_fields for v in fields.EVERY_ROW)
    # Absent from the files before 2025-12-17 (`since`): optional.
    assert text["avg_output_len"].is_required() is False
    assert text["median_itl_ms"].is_required() is True
    # A nullable column (image rows have no frame rate), required of a video row.
    assert ("fps" in image, video["fps"].is_required()) == (False, True)
    # The variant's own fields follow what every row has, in the declaration's order.
    declared = [n for n in video if n not in TaskRow.model_fields]
    assert declared == list(DIFFUSION.variants[fields.VIDEO])


def test_rows_in_memory_hold_their_kind_s_fields() -> None:
    names = [f.name for f in dataclass_fields(LLM.row_type)]
    assert names[names.index("extra") + 1 :] == [
        *(f.name for f in fields.of(fields.LLM_ROWS)),
        "length_bins_json",
        "length_counts_json",
    ]
    assert LLM.row_type.__dictoffset__ == 0  # slotted: no dict per row
    diffusion = [f.name for f in dataclass_fields(DIFFUSION.row_type)]
    assert ("fps" in diffusion, "max_num_seqs" in diffusion) == (True, False)


def test_the_kinds_filters_and_roles() -> None:
    assert [(f.name, f.column, f.most, f.setting) for f in LLM.filters] == [
        ("max_num_seqs_at_least", "max_num_seqs", False, True),
        ("max_num_seqs_at_most", "max_num_seqs", True, True),
        ("max_median_itl_ms", "median_itl_ms", True, False),
    ]
    assert DIFFUSION.filters == ()
    # The default of a role first.
    assert (LLM.batch_setting, LLM.latencies[0], LLM.energies, LLM.throughput) == (
        "max_num_seqs",
        "median_itl_ms",
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
    assert (LLM.power, DIFFUSION.power, DIFFUSION.throughput) == (
        "avg_power_watts",
        "avg_power_watts",
        "throughput_outputs_per_sec",
    )
