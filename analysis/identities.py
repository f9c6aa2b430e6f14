"""The data's own identities, checked row by row: what holds, and where it does not."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Relative difference below which two sides count as equal (float rounding is ~1e-16).
TOLERANCE = 1e-9

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Identity:
    name: str
    statement: str
    left: Callable[[Row], float]
    right: Callable[[Row], float]
    note: str = ""


IDENTITIES = (
    Identity(
        "energy_per_request",
        "energy_per_request_joules = energy_per_token_joules × avg_output_len",
        lambda r: r["energy_per_request_joules"],
        lambda r: r["energy_per_token_joules"] * r["avg_output_len"],
    ),
    Identity(
        "power_over_throughput",
        "avg_power_watts ÷ output_throughput_tokens_per_sec = energy_per_token_joules",
        lambda r: r["avg_power_watts"] / r["output_throughput_tokens_per_sec"],
        lambda r: r["energy_per_token_joules"],
        note="holds from the 2026-01-01 throughput correction on; data compiled before it "
        "fails it on every row",
    ),
)


@dataclass(frozen=True)
class Violations:
    """The rows of one file that break one identity."""

    identity: str
    statement: str
    file: str
    rows: list[int]
    checked: int
    max_relative_difference: float
    note: str


def relative_difference(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale else 0.0


def check(file: str, rows: Sequence[Row]) -> list[Violations]:
    """Every identity that applies to these rows (LLM rows), with the rows that break it."""
    found = []
    for identity in IDENTITIES:
        differences = []
        for i, row in enumerate(rows):
            try:
                differences.append(
                    (i, relative_difference(identity.left(row), identity.right(row)))
                )
            except (KeyError, TypeError, ZeroDivisionError):  # absent, null or 0: not checked
                continue
        broken = [(i, d) for i, d in differences if d > TOLERANCE]
        if broken:
            found.append(
                Violations(
                    identity.name,
                    identity.statement,
                    file,
                    [i for i, _ in broken],
                    len(differences),
                    max(d for _, d in broken),
                    identity.note,
                )
            )
    return found
