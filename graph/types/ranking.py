"""Ranking types: the leaderboard, Pareto frontiers and comparisons, with their arguments."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from db.tables import ConfigurationRow, DiffusionConfigurationRow
from graph.types.task import Task

if TYPE_CHECKING:
    from graph.types.configuration import Configuration
    from graph.types.diffusion import DiffusionConfiguration
    from graph.types.model import Model

LazyConfiguration = Annotated["Configuration", strawberry.lazy("graph.types.configuration")]
LazyDiffusion = Annotated["DiffusionConfiguration", strawberry.lazy("graph.types.diffusion")]
LazyModel = Annotated["Model", strawberry.lazy("graph.types.model")]


@strawberry.enum(
    description="Which inter-token latency (ITL) percentile a deadline or frontier uses."
)
class ItlPercentile(Enum):
    P50 = strawberry.enum_value("median_itl_ms", description="Median ITL (`medianItlMs`).")
    P90 = strawberry.enum_value("p90_itl_ms", description="90th-percentile ITL (`p90ItlMs`).")
    P95 = strawberry.enum_value("p95_itl_ms", description="95th-percentile ITL (`p95ItlMs`).")
    P99 = strawberry.enum_value("p99_itl_ms", description="99th-percentile ITL (`p99ItlMs`).")


@strawberry.enum(description="Which energy figure of an LLM or MLLM configuration ranks it.")
class EnergyBasis(Enum):
    PER_TOKEN = strawberry.enum_value(
        "energy_per_token_joules", description="Energy per output token, in joules."
    )
    PER_RESPONSE = strawberry.enum_value(
        "energy_per_request_joules",
        description="Energy per response (per token × average output length), in joules.",
    )


@strawberry.enum(description="Which configurations a Pareto frontier compares with each other.")
class ParetoScope(Enum):
    GLOBAL = strawberry.enum_value("global", description="All configurations of the task.")
    MODEL = strawberry.enum_value("model", description="Each model's configurations apart.")
    GPU = strawberry.enum_value("gpu", description="Each GPU type's configurations apart.")
    MODEL_GPU = strawberry.enum_value(
        "model_gpu", description="Each model's configurations on each GPU type apart."
    )


def itl_ms(row: ConfigurationRow, percentile: ItlPercentile) -> float:
    """The row's ITL at a percentile, in ms."""
    return float(getattr(row, str(percentile.value)))


def energy_joules(row: ConfigurationRow, basis: EnergyBasis) -> float:
    """The row's energy per token or per response, in joules."""
    return float(getattr(row, str(basis.value)))


def scope_key(row: ConfigurationRow | DiffusionConfigurationRow, scope: ParetoScope) -> Any:
    """The group a row belongs to under a scope: rows of one group are compared."""
    return {
        ParetoScope.GLOBAL: None,
        ParetoScope.MODEL: row.model_id,
        ParetoScope.GPU: row.gpu,
        ParetoScope.MODEL_GPU: (row.model_id, row.gpu),
    }[scope]


@strawberry.input(
    description="Constraints on LLM and MLLM configurations; every bound is inclusive. The "
    "defaults are the ML.ENERGY leaderboard's: median ITL within 500 ms, no energy budget, "
    "ranked by energy per token."
)
class LlmConstraints:
    max_itl_ms: float | None = strawberry.field(
        default=500.0,
        description="Latency deadline: the largest ITL (at `itlPercentile`) allowed, in ms; "
        "500 when not given; null for no deadline.",
    )
    itl_percentile: ItlPercentile = strawberry.field(
        default=ItlPercentile.P50, description="The ITL percentile the deadline applies to."
    )
    max_energy_joules: float | None = strawberry.field(
        default=None,
        description="Energy budget: the largest energy allowed, in joules per token or per "
        "response (as `rankBy` says); none when not given.",
    )
    num_gpus: list[int] | None = strawberry.field(
        default=None, description="Only configurations on these numbers of GPUs; all if not given."
    )
    min_throughput_tokens_per_sec: float | None = strawberry.field(
        default=None,
        description="Throughput floor: the smallest output throughput allowed, in tokens per "
        "second (all GPUs together); none when not given.",
    )
    rank_by: EnergyBasis = strawberry.field(
        default=EnergyBasis.PER_TOKEN,
        description="The energy figure minimised, bounded by `maxEnergyJoules` and sorted on.",
    )


@strawberry.input(
    description="Constraints on diffusion configurations; every bound is inclusive. The "
    "defaults are the ML.ENERGY leaderboard's."
)
class DiffusionConstraints:
    max_batch_latency_s: float | None = strawberry.field(
        default=strawberry.UNSET,
        description="Latency deadline: the largest batch latency allowed, in seconds. When not "
        "given, the leaderboard's default: 30 for text-to-image, 300 for text-to-video (none for "
        "another task); null for no deadline.",
    )
    max_energy_joules: float | None = strawberry.field(
        default=None,
        description="Energy budget: the largest energy per image or video allowed, in joules; "
        "none when not given.",
    )
    num_gpus: list[int] | None = strawberry.field(
        default=None, description="Only configurations on these numbers of GPUs; all if not given."
    )
    min_throughput_outputs_per_sec: float | None = strawberry.field(
        default=None,
        description="Throughput floor: the fewest images or videos per second allowed; none when "
        "not given.",
    )


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
