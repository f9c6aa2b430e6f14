"""Small value types and the metric descriptions shared by several type families."""

from __future__ import annotations

import strawberry

from analysis.power import Spread as SpreadValue

ENERGY_PER_TOKEN = (
    "Measured: steady-state GPU energy per output token, in joules (all GPUs of the "
    "configuration together). Upstream `energy_per_token_joules`."
)
ENERGY_PER_REQUEST = (
    "Derived upstream: energy per output token × average output length, in joules per request; "
    "not a separate measurement. Upstream `energy_per_request_joules`."
)
MEDIAN_ITL = "Measured: median inter-token latency, in milliseconds. Upstream `median_itl_ms`."
P90_ITL = "Measured: 90th-percentile inter-token latency, in milliseconds. Upstream `p90_itl_ms`."
P95_ITL = "Measured: 95th-percentile inter-token latency, in milliseconds. Upstream `p95_itl_ms`."
P99_ITL = "Measured: 99th-percentile inter-token latency, in milliseconds. Upstream `p99_itl_ms`."
THROUGHPUT = (
    "Measured: output tokens generated per second, all GPUs together. "
    "Upstream `output_throughput_tokens_per_sec`."
)
AVG_POWER = (
    "Measured: average GPU power over the steady-state window, in watts, summed over all GPUs "
    "of the configuration. Upstream `avg_power_watts`."
)
AVG_BATCH = (
    "Measured: average number of requests running concurrently in the server's batch. "
    "Upstream `avg_batch_size`."
)
AVG_OUTPUT_LEN = (
    "Measured: average output length, in tokens per request. Upstream `avg_output_len`."
)
MAX_NUM_SEQS = (
    "Setting: the server's maximum batch size (vLLM `max_num_seqs`), in requests. "
    "Upstream `max_num_seqs`."
)
NUM_GPUS = "Setting: number of GPUs serving the model. Upstream `num_gpus`."
GPU_MODEL = "GPU type the configuration ran on, as upstream names it (`H100`, `B200`)."
PER_GPU_POWER = "Derived by LeadGreen: avgPowerWatts ÷ numGpus, in watts per GPU."
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
