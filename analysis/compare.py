"""Comparisons: models against the best of them, and one GPU type against another."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from analysis.leaderboard import Candidate, Constraints, best_per_model

T = TypeVar("T")


def ratio(value: float, base: float) -> float | None:
    """value / base; None when base is zero (1.0 when both are: equal amounts)."""
    if base:
        return value / base
    return 1.0 if value == 0 else None


def ratios_to_best(values: Sequence[float | None]) -> list[float | None]:
    """Each value / the lowest value; None stays None (no value to compare)."""
    present = [v for v in values if v is not None]
    if not present:
        return [None] * len(values)
    best = min(present)
    return [None if v is None else ratio(v, best) for v in values]


@dataclass(frozen=True)
class Standing(Generic[T]):
    """A model's best candidate and how it stands against the best model's."""

    model: Hashable
    best: Candidate[T] | None
    ratio_to_best: float | None
    above_best: float | None


def compare_models(
    candidates: Sequence[Candidate[T]], constraints: Constraints, models: Sequence[Hashable]
) -> list[Standing[T]]:
    """For each model in `models` (in that order), its best candidate under the constraints,
    its energy / the lowest of them and its energy - the lowest; None where it has none."""
    chosen = {c.model: c for c in best_per_model(candidates, constraints)}
    energies = [chosen[m].energy if m in chosen else None for m in models]
    lowest = min((e for e in energies if e is not None), default=None)
    return [
        Standing(
            model=m,
            best=chosen.get(m),
            ratio_to_best=r,
            above_best=None if e is None or lowest is None else e - lowest,
        )
        for m, e, r in zip(models, energies, ratios_to_best(energies), strict=True)
    ]


@dataclass(frozen=True)
class Saving:
    """The energy of a candidate GPU's configuration against a baseline GPU's."""

    baseline: float
    candidate: float

    @property
    def saved(self) -> float:
        """baseline - candidate: positive when the candidate uses less."""
        return self.baseline - self.candidate

    @property
    def ratio(self) -> float | None:
        """candidate / baseline."""
        return ratio(self.candidate, self.baseline)

    @property
    def saved_fraction(self) -> float | None:
        """1 - candidate / baseline: the share of the baseline's energy the candidate saves."""
        r = self.ratio
        return None if r is None else 1.0 - r


@dataclass(frozen=True)
class Matchup(Generic[T]):
    """A model's best candidate on each of two GPU types under the same constraints."""

    model: Hashable
    baseline: Candidate[T] | None
    candidate: Candidate[T] | None

    @property
    def saving(self) -> Saving | None:
        if self.baseline is None or self.candidate is None:
            return None
        return Saving(self.baseline.energy, self.candidate.energy)


def compare_gpus(
    candidates: Sequence[Candidate[T]],
    constraints: Constraints,
    baseline: str,
    candidate: str,
    models: Sequence[Hashable] | None = None,
) -> list[Matchup[T]]:
    """Per model, its best candidate on `baseline` and on `candidate` (constraints' own GPU
    choice is replaced). Models are `models` in that order, or by default every model of the
    candidates in order of first appearance."""
    best = {
        gpu: {
            c.model: c
            for c in best_per_model(
                candidates, dataclasses.replace(constraints, gpus=frozenset({gpu}))
            )
        }
        for gpu in (baseline, candidate)
    }
    order = models if models is not None else list(dict.fromkeys(c.model for c in candidates))
    return [Matchup(m, best[baseline].get(m), best[candidate].get(m)) for m in order]
