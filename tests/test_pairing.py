"""Pairing a task file's row with its model file's row (db.taskfile): the fast comparison
(`_Same`, one getter per set of fields) says "the same" exactly when the field-by-field
reference (`_disagreement`) finds nothing to report, on rows Hypothesis writes: declared fields
given or left to their defaults, unknown fields, fields only the model file states, values of
several JSON types (1, 1.0 and True among them, and a NaN, unequal to itself)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from db.errors import IngestError
from db.taskfile import _disagreement, _Same


class Row(BaseModel):
    model_config = ConfigDict(extra="allow")
    gpu_model: str = "H100"
    num_gpus: int = 1
    max_num_seqs: int | None = None
    energy: float | None = None


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([1.0, 0.5, float("nan")]),
    st.sampled_from(["H100", "B200"]),
)
KEYS = st.sampled_from(["gpu_model", "num_gpus", "max_num_seqs", "energy", "extra_a", "extra_b"])


def _row(fields: dict[str, Any]) -> Row | None:
    try:
        return Row.model_validate(fields)
    except ValueError:
        return None


def _reference(row: Row, flat: dict[str, Any]) -> bool:
    try:
        _disagreement(row, flat, "m.json", 0, "t.json", 0)
    except IngestError:
        return False
    return True


@given(
    st.lists(
        st.tuples(st.dictionaries(KEYS, VALUES), st.dictionaries(KEYS, VALUES)),
        min_size=1,
        max_size=6,
    )
)
def test_the_fast_comparison_agrees_with_the_field_by_field_one(pairs) -> None:
    same = _Same()  # one per model file: its getters carry over from row to row
    for fields, flat in pairs:
        row = _row(fields)
        if row is None:
            continue
        flat = {**row.model_dump(include=row.model_fields_set), **flat}  # mostly agreeing
        assert same(row, flat) == _reference(row, flat), (fields, flat)


def test_a_disagreement_on_an_unknown_field_is_found() -> None:
    row = Row.model_validate({"gpu_model": "H100", "extra_a": 2})
    same = _Same()
    assert same(row, {"gpu_model": "H100", "extra_a": 2, "only_model_file": 1})
    assert not same(row, {"gpu_model": "H100", "extra_a": 3})
    with pytest.raises(IngestError, match=r"field 'extra_a': 3 disagrees with t\.json row 0 \(2\)"):
        _disagreement(row, {"gpu_model": "H100", "extra_a": 3}, "m.json", 0, "t.json", 0)
    # A default the task file does not state is not compared.
    assert same(row, {"gpu_model": "H100", "extra_a": 2, "num_gpus": 8})
