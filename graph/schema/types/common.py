"""Small value types, and the fields of task rows (db.fields) as the types hold them."""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar

import strawberry

from analysis.power import Spread as SpreadValue
from db import fields
from graph.schema.inputs import add_fields

T = TypeVar("T")


def describe(name: str) -> str:
    """The API's description of a field of a task row (db.fields) that has one name wherever it
    is, for the types that show it among others (curves, fits, distributions)."""
    found = fields.BY_NAME[name]
    assert found.spec.description, f"{name} is described per variant"
    return found.spec.description


class Figures:
    """The fields of a task row (db.fields) that one type of configuration holds: those that
    every variant in `rows` has under one name and that the type it extends (the variants
    `within`) does not hold; in the order of the declaration."""

    def __init__(self, rows: tuple[str, ...], within: tuple[str, ...] = ()) -> None:
        def shared(f: fields.Declared, variants: tuple[str, ...]) -> bool:
            names = {f.name_in(v) for v in variants if f.has(v)}
            return bool(variants) and all(f.has(v) for v in variants) and len(names) == 1

        held = [f for f in fields.FIELDS if shared(f, rows) and not shared(f, within)]
        first = rows[0]
        self.names = tuple(f.name_in(first) for f in held)
        self.made = {
            f.name_in(first): (
                f.python,
                strawberry.field(description=f.description_in(first)),
            )
            for f in held
        }
        columns = [f.name for f in held]
        get = attrgetter(*columns) if columns else (lambda _row: ())
        self._get = get if len(columns) != 1 else (lambda row: (get(row),))

    def declare(self, before: str | None = None) -> Callable[[type[T]], type[T]]:
        """A class decorator, under strawberry's: the fields join the class's own (before the
        one named `before`, else after them)."""
        return add_fields(self.made, before=before)

    def add(self, values: dict[str, Any], row: Any) -> dict[str, Any]:
        """`values` (the type's constructor's arguments) with the fields' values of a row, by
        field name: added to the dict in place, which is cheaper than one more dict per row."""
        values.update(zip(self.names, self._get(row), strict=True))
        return values


GPU_MODEL = "GPU type the configuration ran on, as upstream names it (`H100`, `B200`)."
PER_GPU_POWER = fields.PER_GPU_POWER.description
FRACTION_OF_TDP = (
    "Derived by LeadGreen: per-GPU average power ÷ the GPU's TDP (a fraction, 1.0 = at TDP); "
    "null when the GPU's TDP is unknown."
)


@strawberry.type(
    description="Minimum, median and maximum of a set of values, in the unit the "
    "field that holds it names."
)
class Spread:
    minimum: float = strawberry.field(description="Smallest value.")
    median: float = strawberry.field(
        description="Median value (the mean of the two middle values for an even count)."
    )
    maximum: float = strawberry.field(description="Largest value.")

    @classmethod
    def from_value(cls, value: SpreadValue) -> Spread:
        return cls(minimum=value.minimum, median=value.median, maximum=value.maximum)


@strawberry.type(
    description="A histogram of output lengths, in tokens per request: `counts[i]` "
    "requests had a length between `bins[i]` and `bins[i+1]`. Upstream "
    "`output_length_distribution`."
)
class OutputLengthDistribution:
    bins: list[float] = strawberry.field(
        description="Bin edges, in output tokens; one more than there are counts."
    )
    counts: list[int] = strawberry.field(description="Number of requests in each bin.")
