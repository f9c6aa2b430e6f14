"""Ranking types: the leaderboard, Pareto frontiers and comparisons, with their arguments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from graph.schema.inputs import EnergyBasis, ItlPercentile
from graph.schema.types.task import Task

if TYPE_CHECKING:
    from graph.schema.types.model import Configuration, DiffusionConfiguration, Model

LazyConfiguration = Annotated["Configuration", strawberry.lazy("graph.schema.types.model")]
LazyDiffusion = Annotated["DiffusionConfiguration", strawberry.lazy("graph.schema.types.model")]
LazyModel = Annotated["Model", strawberry.lazy("graph.schema.types.model")]


@strawberry.type(description="An answer about one model.")
class HasModel:
    model: LazyModel = strawberry.field(description="The model this answer is about.")


RANK = "Position in the table, from 1 (models of equal energy in upstream order)."
RATIO = (
    "Derived by LeadGreen: this energy ÷ the lowest energy of the answer (1.0 for the best); "
    "null only when the lowest is 0 J."
)


@strawberry.type(description="A row of the leaderboard: a model and its best configuration.")
class LeaderboardEntry(HasModel):
    rank: int = strawberry.field(description=RANK)
    energy_joules: float = strawberry.field(
        description="The energy ranked on, in joules per token or per response (the "
        "leaderboard's `rankBy`)."
    )
    latency_ms: float = strawberry.field(
        description="The configuration's ITL at the leaderboard's `itlPercentile`, in ms."
    )
    ratio_to_best: float | None = strawberry.field(description=RATIO)
    configuration: LazyConfiguration = strawberry.field(
        description="The model's lowest-energy configuration within the constraints."
    )


@strawberry.type(
    description="The ML.ENERGY leaderboard's main table for an LLM or MLLM task: per model, the "
    "lowest-energy configuration within the constraints, sorted by ascending energy."
)
class Leaderboard:
    task: Task = strawberry.field(description="The task ranked.")
    max_itl_ms: float | None = strawberry.field(
        description="The deadline applied, in ms; null for none."
    )
    itl_percentile: ItlPercentile = strawberry.field(
        description="The ITL percentile the deadline applies to."
    )
    rank_by: EnergyBasis = strawberry.field(description="The energy figure ranked on.")
    entries: list[LeaderboardEntry] = strawberry.field(
        description="One row per model with a configuration within the constraints; empty when "
        "none has one."
    )


@strawberry.type(
    description="A row of a diffusion leaderboard: a model and its best configuration."
)
class DiffusionLeaderboardEntry(HasModel):
    rank: int = strawberry.field(description=RANK)
    energy_joules: float = strawberry.field(
        description="Energy per generated image or video, in joules."
    )
    batch_latency_s: float = strawberry.field(
        description="The configuration's batch latency, in seconds."
    )
    ratio_to_best: float | None = strawberry.field(description=RATIO)
    configuration: LazyDiffusion = strawberry.field(
        description="The model's lowest-energy configuration within the constraints."
    )


@strawberry.type(
    description="The ML.ENERGY leaderboard's main table for a diffusion task: per model, the "
    "lowest energy per image or video within the constraints, sorted ascending."
)
class DiffusionLeaderboard:
    task: Task = strawberry.field(description="The task ranked.")
    max_batch_latency_s: float | None = strawberry.field(
        description="The deadline applied, in seconds; null for none."
    )
    entries: list[DiffusionLeaderboardEntry] = strawberry.field(
        description="One row per model with a configuration within the constraints; empty when "
        "none has one."
    )


@strawberry.type(description="A group of configurations, of one model or GPU type or all.")
class Grouped:
    model: LazyModel | None = strawberry.field(
        description="The model whose configurations this frontier compares; null unless the "
        "scope is MODEL or MODEL_GPU (then the frontier spans models)."
    )


FRONTIER_GPU = (
    "The GPU type whose configurations this frontier compares; null unless the scope is GPU or "
    "MODEL_GPU (then the frontier spans GPU types)."
)
CANDIDATES = "Number of configurations compared (on the frontier or not)."


@strawberry.type(
    description="A time–energy Pareto frontier of LLM or MLLM configurations: those no other "
    "configuration of the group beats with both strictly lower ITL (at the percentile asked) and "
    "strictly lower energy per token. Ties survive."
)
class ParetoFrontier(Grouped):
    gpu_model: str | None = strawberry.field(description=FRONTIER_GPU)
    candidates: int = strawberry.field(description=CANDIDATES)
    configurations: list[LazyConfiguration] = strawberry.field(
        description="The frontier, by ascending ITL, then energy, then upstream order."
    )


@strawberry.type(
    description="A time–energy Pareto frontier of diffusion configurations: those no other "
    "configuration of the group beats with both strictly lower batch latency and strictly lower "
    "energy per image or video. Ties survive."
)
class DiffusionParetoFrontier(Grouped):
    gpu_model: str | None = strawberry.field(description=FRONTIER_GPU)
    candidates: int = strawberry.field(description=CANDIDATES)
    configurations: list[LazyDiffusion] = strawberry.field(
        description="The frontier, by ascending batch latency, then energy, then upstream order."
    )


@strawberry.type(description="A model of a comparison: its best configuration and how it stands.")
class ModelStanding(HasModel):
    configuration: LazyConfiguration | None = strawberry.field(
        description="The model's lowest-energy configuration within the constraints; null when "
        "it has none (or was not measured on the task)."
    )
    energy_joules: float | None = strawberry.field(
        description="Its energy, in joules per token or per response (`rankBy`); null as above."
    )
    ratio_to_best: float | None = strawberry.field(
        description="Derived by LeadGreen: its energy ÷ the lowest energy of the models compared "
        "(1.0 for the best); null when it has no configuration within the constraints."
    )
    joules_above_best: float | None = strawberry.field(
        description="Derived by LeadGreen: its energy − the lowest energy of the models compared, "
        "in joules per token or per response; null as above."
    )


@strawberry.type(
    description="A model's best configuration on two GPU types under the same constraints, and "
    "the energy the candidate GPU saves against the baseline (per token or per response)."
)
class GpuComparison(HasModel):
    baseline_gpu: str = strawberry.field(description="The baseline GPU type, e.g. `H100`.")
    candidate_gpu: str = strawberry.field(description="The candidate GPU type, e.g. `B200`.")
    baseline: LazyConfiguration | None = strawberry.field(
        description="Lowest-energy configuration on the baseline GPU within the constraints; "
        "null when there is none."
    )
    candidate: LazyConfiguration | None = strawberry.field(
        description="Lowest-energy configuration on the candidate GPU within the constraints; "
        "null when there is none."
    )
    baseline_energy_joules: float | None = strawberry.field(
        description="The baseline's energy, in joules per token or per response; null as above."
    )
    candidate_energy_joules: float | None = strawberry.field(
        description="The candidate's energy, in joules per token or per response; null as above."
    )
    energy_saved_joules: float | None = strawberry.field(
        description="Derived by LeadGreen: baseline − candidate energy, in joules per token or "
        "per response (negative when the candidate uses more); null unless both have one."
    )
    energy_ratio: float | None = strawberry.field(
        description="Derived by LeadGreen: candidate ÷ baseline energy (below 1 when the "
        "candidate uses less); null unless both have one."
    )
    energy_saved_fraction: float | None = strawberry.field(
        description="Derived by LeadGreen: 1 − energyRatio, the share of the baseline's energy "
        "the candidate saves; null unless both have one."
    )
