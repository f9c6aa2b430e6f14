"""Rankings: leaderboards and comparisons (per model, the best configuration under constraints),
and time-energy Pareto frontiers (one per group of configurations the scope makes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import strawberry

from analysis.compare import compare_gpus, compare_models, ratios_to_best
from analysis.leaderboard import Constraints
from analysis.pareto import by_gpu, by_model
from db import derived
from db.kinds import DIFFUSION, LLM, Kind
from graph.errors import BadInput
from graph.schema.answers.filters import check_at_least
from graph.schema.answers.selection import Selection, select
from graph.schema.context import Context, known_gpu
from graph.schema.inputs import DiffusionConstraints, ItlPercentile, LlmConstraints, ParetoScope
from graph.schema.types.model import Configuration, Model, configuration, diffusion_of
from graph.schema.types.ranking import (
    DiffusionLeaderboard,
    DiffusionLeaderboardEntry,
    DiffusionParetoFrontier,
    GpuComparison,
    Leaderboard,
    LeaderboardEntry,
    ModelStanding,
    ParetoFrontier,
)
from graph.schema.types.task import Task


async def llm_ranking(
    context: Context,
    task: str,
    constraints: LlmConstraints | None,
    gpus: Sequence[str] | None,
    models: Sequence[str] | None,
    release: int | None,
) -> tuple[Selection, LlmConstraints, Constraints, str, str]:
    """The selection, constraints and rule of an LLM ranking, and its latency and energy."""
    c = constraints or LlmConstraints()
    check_at_least("maxItlMs", c.max_itl_ms)
    check_at_least("maxEnergyJoules", c.max_energy_joules)
    check_at_least("minThroughputTokensPerSec", c.min_throughput_tokens_per_sec)
    sel = await select(context, LLM, task, gpus, models, release, num_gpus=c.num_gpus)
    rule = Constraints(
        max_latency=c.max_itl_ms,
        max_energy=c.max_energy_joules,
        num_gpus=sel.num_gpus,
        min_throughput=c.min_throughput_tokens_per_sec,
    )
    latency, energy = str(c.itl_percentile.value), str(c.rank_by.value)
    return sel, c, rule, latency, energy


async def leaderboard(
    context: Context,
    task: str,
    constraints: LlmConstraints | None,
    gpus: Sequence[str] | None,
    models: Sequence[str] | None,
    release: int | None,
) -> Leaderboard:
    sel, c, rule, latency, energy = await llm_ranking(
        context, task, constraints, gpus, models, release
    )
    catalog = sel.catalog

    def entries() -> list[LeaderboardEntry]:
        ranked = sel.best_per_model(rule, latency, energy)
        ratios = ratios_to_best([x.energy for x in ranked])
        return [
            LeaderboardEntry(
                rank=i,
                energy_joules=x.energy,
                latency_ms=x.latency,
                ratio_to_best=ratio,
                configuration=Configuration.of(catalog, x.item),
                model=Model.of_id(catalog, x.item.model_id),
            )
            for i, (x, ratio) in enumerate(zip(ranked, ratios, strict=True), start=1)
        ]

    return Leaderboard(
        task=Task.of(catalog, sel.task.id),
        max_itl_ms=c.max_itl_ms,
        itl_percentile=c.itl_percentile,
        rank_by=c.rank_by,
        # The task's table with the leaderboard's defaults: its entries made once per release.
        entries=catalog.once((Leaderboard, sel.task.id), entries)
        if sel.default_table(rule, latency, energy)
        else entries(),
    )


async def diffusion_leaderboard(
    context: Context,
    task: str,
    constraints: DiffusionConstraints | None,
    gpus: Sequence[str] | None,
    models: Sequence[str] | None,
    release: int | None,
) -> DiffusionLeaderboard:
    c = constraints or DiffusionConstraints()
    deadline = c.max_batch_latency_s
    if deadline is strawberry.UNSET:
        deadline = DIFFUSION.default_deadline(task)
    check_at_least("maxBatchLatencyS", deadline)
    check_at_least("maxEnergyJoules", c.max_energy_joules)
    check_at_least("minThroughputOutputsPerSec", c.min_throughput_outputs_per_sec)
    sel = await select(context, DIFFUSION, task, gpus, models, release, num_gpus=c.num_gpus)
    rule = Constraints(
        max_latency=deadline,
        max_energy=c.max_energy_joules,
        num_gpus=sel.num_gpus,
        min_throughput=c.min_throughput_outputs_per_sec,
    )
    ranked = sel.best_per_model(rule, DIFFUSION.latencies[0], DIFFUSION.energies[0])
    ratios = ratios_to_best([x.energy for x in ranked])
    catalog = sel.catalog
    return DiffusionLeaderboard(
        task=Task.of(catalog, sel.task.id),
        max_batch_latency_s=deadline,
        entries=[
            DiffusionLeaderboardEntry(
                rank=i,
                energy_joules=x.energy,
                batch_latency_s=x.latency,
                ratio_to_best=ratio,
                configuration=diffusion_of(catalog, x.item),
                model=Model.of_id(catalog, x.item.model_id),
            )
            for i, (x, ratio) in enumerate(zip(ranked, ratios, strict=True), start=1)
        ],
    )


async def model_standings(
    context: Context,
    task: str,
    models: Sequence[str],
    constraints: LlmConstraints | None,
    gpus: Sequence[str] | None,
    release: int | None,
) -> list[ModelStanding]:
    sel, _, rule, latency, energy = await llm_ranking(
        context, task, constraints, gpus, models, release
    )
    candidates = sel.candidates(latency, energy)
    assert sel.models is not None
    standings = compare_models(candidates, rule, [m.id for m in sel.models])
    catalog = sel.catalog
    return [
        ModelStanding(
            model=Model.of_id(catalog, cast(int, s.model)),
            configuration=None if s.best is None else Configuration.of(catalog, s.best.item),
            energy_joules=None if s.best is None else s.best.energy,
            ratio_to_best=s.ratio_to_best,
            joules_above_best=s.above_best,
        )
        for s in standings
    ]


async def gpu_comparisons(
    context: Context,
    task: str,
    baseline: str,
    candidate: str,
    models: Sequence[str] | None,
    constraints: LlmConstraints | None,
    release: int | None,
) -> list[GpuComparison]:
    if baseline == candidate:
        raise BadInput(f"baseline and candidate are both {baseline!r}: compare two GPU types")
    for gpu, argument in ((baseline, "baseline"), (candidate, "candidate")):
        known_gpu(await context.catalog(release), gpu, argument)
    sel, _, rule, latency, energy = await llm_ranking(
        context, task, constraints, [baseline, candidate], models, release
    )
    candidates = sel.candidates(latency, energy)
    order = None if sel.models is None else [m.id for m in sel.models]
    catalog = sel.catalog
    answer = []
    for m in compare_gpus(candidates, rule, baseline, candidate, order):
        saving = m.saving
        answer.append(
            GpuComparison(
                model=Model.of_id(catalog, cast(int, m.model)),
                baseline_gpu=baseline,
                candidate_gpu=candidate,
                baseline=None if m.baseline is None else Configuration.of(catalog, m.baseline.item),
                candidate=None
                if m.candidate is None
                else Configuration.of(catalog, m.candidate.item),
                baseline_energy_joules=None if m.baseline is None else m.baseline.energy,
                candidate_energy_joules=None if m.candidate is None else m.candidate.energy,
                energy_saved_joules=None if saving is None else saving.saved,
                energy_ratio=None if saving is None else saving.ratio,
                energy_saved_fraction=None if saving is None else saving.saved_fraction,
            )
        )
    return answer


# The frontier's GraphQL type, by kind.
FRONTIER_TYPES = {LLM: ParetoFrontier, DIFFUSION: DiffusionParetoFrontier}


async def frontiers(
    context: Context,
    kind: Kind,
    task: str,
    scope: ParetoScope,
    gpus: Sequence[str] | None,
    models: Sequence[str] | None,
    release: int | None,
    percentile: ItlPercentile | None = None,
) -> list[Any]:
    """Per group of the scope (in order of its first row upstream), its frontier: latency (ITL
    at the percentile, for LLM tasks) against the kind's energy."""
    sel = await select(context, kind, task, gpus, models, release)
    catalog, how = sel.catalog, str(scope.value)
    latency = None if percentile is None else str(percentile.value)
    if gpus is None and models is None:  # the task's frontiers, made once per release
        found = derived.frontiers(catalog, kind, sel.task.id, how, latency)
    else:
        found = derived.frontiers_of(kind, sel.rows(), how, latency)
    return [
        FRONTIER_TYPES[kind](
            model=Model.of_id(catalog, f.first.model_id) if by_model(how) else None,
            gpu_model=f.first.gpu if by_gpu(how) else None,
            candidates=f.candidates,
            configurations=[configuration(catalog, kind, r) for r in f.rows],
        )
        for f in found
    ]
