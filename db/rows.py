"""A release's configurations in memory: one small object per row, read without the ORM.

A catalog holds every row of a release (92,900 at fifty times the data of 2026-02-16), so rows
are slotted objects read with plain SELECTs, each row's output-length histogram stays the JSON
text it is stored as until something asks for it, and the strings many rows repeat (GPU type,
parallelization notes, histogram bin edges) are held once (RowMaker).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import orjson

from db.fields import DIFFUSION_ROWS, LLM_ROWS, TaskRowFields, row_fields


@dataclass(slots=True, eq=False)
class Row(TaskRowFields):
    """What every configuration row has besides its fields (db.fields: each kind's rows have
    theirs, declared there; to type checkers every row has them all)."""

    id: int
    key: str
    release_id: int
    task_id: int
    model_id: int
    gpu: str
    task_row: int
    model_row: int
    extra: dict[str, Any] | None


@dataclass(slots=True, eq=False)
@row_fields(LLM_ROWS)
class LlmRow(Row):
    # The histogram as stored (JSON text), read when asked for.
    length_bins_json: str | None
    length_counts_json: str | None

    @property
    def length_bins(self) -> list[float] | None:
        return None if self.length_bins_json is None else orjson.loads(self.length_bins_json)

    @property
    def length_counts(self) -> list[int] | None:
        return None if self.length_counts_json is None else orjson.loads(self.length_counts_json)


@dataclass(slots=True, eq=False)
@row_fields(DIFFUSION_ROWS)
class DiffusionRow(Row):
    # Which variant's rows it is ("image" or "video").
    output: str


def columns(row_type: type[Row]) -> list[str]:
    """The row type's fields, in order: each a column of its table (a `_json` one as text)."""
    return [f.name for f in fields(row_type)]


# Columns whose few distinct values many rows repeat: each value is held once per catalog.
SHARED = frozenset({"gpu", "parallel_notes", "output", "length_bins_json"})


class RowMaker:
    """Makes a row type's rows of `columns(row_type)` values (`extra` as its JSON text),
    sharing the strings of SHARED columns between rows."""

    def __init__(self, row_type: type[Row], strings: dict[str, str] | None = None) -> None:
        names = columns(row_type)
        self.row_type = row_type
        self.shared = [i for i, name in enumerate(names) if name in SHARED]
        self.extra = names.index("extra")
        self.strings = {} if strings is None else strings

    def __call__(self, values: Sequence[Any]) -> Row:
        made = list(values)
        strings = self.strings
        for i in self.shared:
            value = made[i]
            if value is not None:
                made[i] = strings.setdefault(value, value)
        extra = made[self.extra]
        made[self.extra] = None if extra is None or extra == "null" else json.loads(extra)
        return self.row_type(*made)
