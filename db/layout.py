"""A configuration as its kind's table stores it: the columns in order, and each row's values
as one tuple, read from the paired task-file and model-file rows (db.taskfile).

The values are what `Kind.figures` and the model file give, built without a dict per row: at
fifty times today's data the ingest builds some 93,000 of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from operator import attrgetter
from typing import Any

import orjson
from pydantic import BaseModel

from db.bulk import json_text
from db.kinds import Kind
from db.shapes import MODEL_FACTS
from db.tables import ModelRow
from db.taskfile import Measurement

# The columns every configuration has, before its kind's figures; its task's id comes last
# (`configuration` leaves it out: the task's row is written once all its rows are read).
COMMON = ("key", "release_id", "model_id", "gpu", "task_row", "model_row", "extra")
# What a detailed kind's model file adds (db.kinds.Kind.detailed).
DETAILS = ("parallel_notes", "length_bins", "length_counts")
_NULL = json_text(None)


def dumped(row: BaseModel) -> dict[str, Any]:
    """The row's fields as `model_dump()` gives them for rows of plain values (declared fields,
    then unknown ones), without copying when there are no unknown ones."""
    extra = row.model_extra
    return {**row.__dict__, **extra} if extra else row.__dict__


@dataclass(frozen=True)
class Layout:
    """A kind's configuration columns, and per variant how a row's figures are read."""

    kind: Kind
    columns: tuple[str, ...]
    figures: dict[str, Callable[[Any], list[Any]]]


@cache
def layout(kind: Kind) -> Layout:
    """The columns `Kind.figures` fills, in its order: every variant's columns (None where a
    variant has none), then the variant's own column."""
    order = list(dict.fromkeys(c for v in kind.variants.values() for c in v.values()))
    if kind.variant_column is not None and kind.variant_column not in order:
        order.append(kind.variant_column)
    figures = {variant: _reader(kind, variant, order) for variant in kind.variants}
    details = DETAILS if kind.detailed else ()
    return Layout(kind, (*COMMON, *order, *details, "task_id"), figures)


def _reader(kind: Kind, variant: str, order: list[str]) -> Callable[[Any], list[Any]]:
    template: list[Any] = [None] * len(order)
    if kind.variant_column is not None:
        template[order.index(kind.variant_column)] = variant
    names = list(kind.columns(variant).items())
    places = [order.index(column) for _, column in names]
    get = attrgetter(*(name for name, _ in names))

    def read(row: Any) -> list[Any]:
        values = template.copy()
        got = get(row)
        for place, value in zip(places, got if len(places) > 1 else (got,), strict=True):
            values[place] = value
        return values

    return read


def model_facts(model: ModelRow) -> dict[str, Any]:
    return {name: getattr(model, name) for name in MODEL_FACTS}


def configuration(
    shape: Layout,
    ids: tuple[int, int],
    facts: dict[str, Any],
    m: Measurement,
    key: str,
) -> tuple[Any, ...]:
    """The row's values in the order of `shape.columns` but its task's id (the last): its
    figures and settings, the model file's details, and whatever else it says in `extra` (JSON
    columns as JSON text); `ids` are the release's and the model's, `facts` the model's
    (`model_facts`)."""
    row = m.row
    # A row that says other model facts than index.json keeps its own, so nothing is lost.
    given = row.model_fields_set
    overrides = {
        name: getattr(row, name)
        for name in MODEL_FACTS
        if name in given and getattr(row, name) != facts[name]
    }
    extra = {**(row.model_extra or {}), **overrides}
    release_id, model_id = ids
    common = (key, release_id, model_id, row.gpu_model, m.task_row, m.model_row)
    values = (*common, json_text(extra) if extra else _NULL, *shape.figures[m.variant](row))
    if not shape.kind.detailed:
        return values
    detail: Any = m.detail
    histogram = detail.output_length_distribution
    return (
        *values,
        detail.parallelization.notes,
        _numbers(histogram.bins),
        _numbers(histogram.counts),
    )


def _numbers(values: list[float] | list[int]) -> str:
    """A list of numbers as JSON text: the same values json.dumps writes, written faster."""
    try:
        return orjson.dumps(values).decode()
    except orjson.JSONEncodeError:  # an integer beyond 64 bits
        return json_text(values)
