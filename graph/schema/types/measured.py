"""A model's measurements as the model page shows them: concurrency curves, power, tasks."""

from __future__ import annotations

import strawberry

from db.rows import LlmRow
from graph.schema.types import common as metric
from graph.schema.types.common import OutputLengthDistribution, Spread
from graph.schema.types.gpu import Gpu
from graph.schema.types.node import global_id


@strawberry.type(
    description="One point of a concurrency curve: a configuration's figures at its max_num_seqs."
)
class CurvePoint:
    max_num_seqs: int = strawberry.field(description=metric.describe("max_num_seqs"))
    energy_per_token_joules: float = strawberry.field(
        description=metric.describe("energy_per_token_joules")
    )
    energy_per_request_joules: float = strawberry.field(
        description=metric.describe("energy_per_request_joules")
    )
    median_itl_ms: float = strawberry.field(description=metric.describe("median_itl_ms"))
    p99_itl_ms: float = strawberry.field(description=metric.describe("p99_itl_ms"))
    output_throughput_tokens_per_sec: float = strawberry.field(
        description=metric.describe("output_throughput_tokens_per_sec")
    )
    avg_power_watts: float = strawberry.field(description=metric.describe("avg_power_watts"))
    avg_batch_size: float = strawberry.field(description=metric.describe("avg_batch_size"))
    configuration_id: strawberry.ID = strawberry.field(
        description="The configuration this point is (its global `id`)."
    )

    @classmethod
    def from_row(cls, row: LlmRow) -> CurvePoint:
        return cls(
            max_num_seqs=row.max_num_seqs,
            energy_per_token_joules=row.energy_per_token_joules,
            energy_per_request_joules=row.energy_per_request_joules,
            median_itl_ms=row.median_itl_ms,
            p99_itl_ms=row.p99_itl_ms,
            output_throughput_tokens_per_sec=row.output_throughput_tokens_per_sec,
            avg_power_watts=row.avg_power_watts,
            avg_batch_size=row.avg_batch_size,
            configuration_id=global_id("Configuration", row.key),
        )


@strawberry.type(
    description="A concurrency curve: how a model's energy, latency, throughput and "
    "power change with the batch size (max_num_seqs) at one GPU type, GPU count and "
    "parallelism. Repeated runs of one setting appear as separate points."
)
class CurveSeries:
    task: str = strawberry.field(description="Task the points were measured on.")
    gpu_model: str = strawberry.field(description=metric.GPU_MODEL)
    num_gpus: int = strawberry.field(description=metric.describe("num_gpus"))
    tensor_parallel: int = strawberry.field(description="Tensor-parallel degree.")
    data_parallel: int = strawberry.field(description="Data-parallel degree.")
    expert_parallel: int = strawberry.field(description="Expert-parallel degree.")
    points: list[CurvePoint] = strawberry.field(
        description="Points in ascending max_num_seqs (then in upstream order)."
    )


@strawberry.type(description="Measured GPU power of a model's configurations on one GPU type.")
class GpuPower:
    gpu_model: str = strawberry.field(description=metric.GPU_MODEL)
    configurations: int = strawberry.field(description="Number of configurations summarised.")
    total_watts: Spread = strawberry.field(
        description="Measured average power of each configuration, all its GPUs together, in "
        "watts (upstream `avg_power_watts`)."
    )
    per_gpu_watts: Spread = strawberry.field(
        description="Derived by LeadGreen: average power per GPU (avgPowerWatts ÷ numGpus), "
        "in watts."
    )
    fraction_of_tdp: Spread | None = strawberry.field(
        description="Derived by LeadGreen: per-GPU power ÷ the GPU's TDP; null when the TDP "
        "is unknown."
    )
    gpu: Gpu = strawberry.field(description="The GPU type, with its reference facts.")


@strawberry.type(
    description="A model measured on a task, with its output-length histogram over all its runs."
)
class ModelTask:
    task: str = strawberry.field(description="Task identifier.")
    file: str = strawberry.field(description="Upstream per-model file, relative to the data root.")
    output_length_distribution: OutputLengthDistribution | None = strawberry.field(
        description="Measured: output lengths over all of the model's runs on the task; null "
        "for diffusion tasks, whose outputs are images or videos."
    )
