"""The fields of a task row, each declared once: its name, type, unit and description, the rows
that have it, and whether it orders, filters, identifies a run or is summarised.

Everything else is made from `TaskRowFields` below, in its order: the pydantic shapes of the
task files (db.shapes), the tables' columns (db.tables), the rows in memory (db.rows), each
kind's columns, metrics and filters (db.kinds), and the API's fields, enums, units and filter
inputs (graph.schema). Adding a numeric field to a task row is one entry here and one migration.

A field's description is the API's description of it, word for word. Its type is the row's (and
the column's): `None` in it means some rows have no value (the other variants' rows, or files
from before `since`). The API declares every field non-null: a value older rows lack is made
for them (avgOutputLen) or the field is nullable there too.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from enum import Enum
from operator import attrgetter
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin, get_type_hints

from pydantic import Field

from analysis.aggregate import Getter
from analysis.power import per_gpu_watts

# The checks a value passes at ingest (db.shapes), part of its type.
Measure = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1)]
# A parallelism degree: files before 2025-12-15 write 0 where a degree does not apply.
Degree = Annotated[int, Field(ge=0)]

# The rows a field can be of: LLM and MLLM tasks' rows, and diffusion tasks' image and video rows
# (a kind's variants, db.kinds).
TEXT, IMAGE, VIDEO = "text", "image", "video"
LLM_ROWS = (TEXT,)
DIFFUSION_ROWS = (IMAGE, VIDEO)
EVERY_ROW = (*LLM_ROWS, *DIFFUSION_ROWS)


class Role(Enum):
    """What rankings, frontiers and filters take a field for (one per kind, or several with a
    default among them)."""

    BATCH = "the batch-size setting"
    DEGREE = "a parallelism degree"
    ENERGY = "an energy figure"
    LATENCY = "a latency"
    THROUGHPUT = "the throughput"
    POWER = "the power"


# The order of the summarised metrics: these roles first (each kind's default one before the
# others), then the rest in the order of the declaration.
SUMMARY_ORDER = (Role.ENERGY, Role.LATENCY, Role.THROUGHPUT, Role.POWER)


@dataclass(frozen=True)
class As:
    """What one variant's rows call a field upstream (and the API), with its description there."""

    name: str
    description: str


@dataclass(frozen=True)
class Range:
    """A setting's filter: `{name}_at_least` and `{name}_at_most`, inclusive."""

    at_least: str
    at_most: str


@dataclass(frozen=True)
class AtMost:
    """A measurement's filter: `max_{name}`, inclusive."""

    description: str


@dataclass(frozen=True)
class Upstream:
    """What both kinds of field declare: the rows that have it (by variant, or by variant with
    the name and description it has there), and its description."""

    rows: tuple[str, ...] | Mapping[str, As]
    description: str = ""
    _: KW_ONLY
    role: Role | None = None
    # The kind's default field of its role (rankings use it unless told otherwise).
    default: bool = False
    # Whether a client may order configurations by it.
    order: bool = False
    # The first date of the files that have it; rows of earlier files have None.
    since: str | None = None
    # Said by the per-model file (under another name), not by the task file.
    model_file: bool = False


@dataclass(frozen=True, kw_only=True)
class Setting(Upstream):
    """A setting of the run: what was asked of the server, not measured."""

    # Whether it identifies the run (analysis.changes: pairing rows across releases, ids).
    key: bool = False
    filter: Range | None = None


@dataclass(frozen=True, kw_only=True)
class Measured(Upstream):
    """A figure measured (or derived upstream) for the run."""

    # The unit as the API's `unit` fields write it, and in words ("in milliseconds").
    unit: str = ""
    spelled: str = ""
    # Whether the statistics summarise it (aggregates, facets).
    aggregate: bool = False
    filter: AtMost | None = None


class TaskRowFields:
    """Every field of a task row, in the order the API lists them (a kind's columns, fields and
    ordering enums take them in this order, the settings first where they are apart)."""

    __slots__ = ()

    num_gpus: Annotated[
        Count,
        Setting(
            EVERY_ROW,
            "Setting: number of GPUs serving the model. Upstream `num_gpus`.",
            order=True,
            key=True,
        ),
    ]
    max_num_seqs: Annotated[
        Count,
        Setting(
            LLM_ROWS,
            "Setting: the server's maximum batch size (vLLM `max_num_seqs`), in requests. "
            "Upstream `max_num_seqs`.",
            role=Role.BATCH,
            order=True,
            key=True,
            filter=Range("Smallest max_num_seqs (inclusive).", "Largest max_num_seqs (inclusive)."),
        ),
    ]
    tensor_parallel: Annotated[
        Degree,
        Setting(
            LLM_ROWS,
            "Setting: tensor-parallel degree. Upstream `tensor_parallel`.",
            role=Role.DEGREE,
            order=True,
        ),
    ]
    data_parallel: Annotated[
        Degree,
        Setting(
            LLM_ROWS,
            "Setting: data-parallel degree. Upstream `data_parallel`.",
            role=Role.DEGREE,
            order=True,
        ),
    ]
    expert_parallel: Annotated[
        Degree,
        Setting(
            LLM_ROWS,
            "Setting: expert-parallel degree (1 for dense models). Upstream `expert_parallel`.",
            role=Role.DEGREE,
            order=True,
        ),
    ]
    parallel_notes: Annotated[
        str,
        Setting(
            LLM_ROWS,
            "Upstream `parallelization.notes`, e.g. how DP and EP are combined; often empty.",
            model_file=True,
        ),
    ]
    avg_batch_size: Annotated[
        Measure,
        Measured(
            LLM_ROWS,
            "Measured: average number of requests running concurrently in the server's batch. "
            "Upstream `avg_batch_size`.",
            order=True,
            unit="requests",
            spelled="concurrent requests",
            aggregate=True,
        ),
    ]
    avg_output_len: Annotated[
        Measure | None,
        Measured(
            LLM_ROWS,
            "Measured: average output length, in tokens per request. Upstream `avg_output_len`.",
            order=True,
            # Before: energy_per_request_joules ÷ energy_per_token_joules, exactly.
            since="2025-12-17",
            unit="tokens/response",
            spelled="tokens per response",
            aggregate=True,
        ),
    ]
    avg_power_watts: Annotated[
        Measure,
        Measured(
            EVERY_ROW,
            "Measured: average GPU power over the steady-state window, in watts, summed over all "
            "GPUs of the configuration. Upstream `avg_power_watts`.",
            role=Role.POWER,
            order=True,
            unit="W",
            spelled="watts (all GPUs together)",
            aggregate=True,
        ),
    ]
    energy_per_request_joules: Annotated[
        Measure,
        Measured(
            LLM_ROWS,
            "Derived upstream: energy per output token × average output length, in joules per "
            "request; not a separate measurement. Upstream `energy_per_request_joules`.",
            role=Role.ENERGY,
            order=True,
            unit="J/response",
            spelled="joules per response",
            aggregate=True,
        ),
    ]
    energy_per_token_joules: Annotated[
        Measure,
        Measured(
            LLM_ROWS,
            "Measured: steady-state GPU energy per output token, in joules (all GPUs of the "
            "configuration together). Upstream `energy_per_token_joules`.",
            role=Role.ENERGY,
            default=True,
            order=True,
            unit="J/token",
            spelled="joules per token",
            aggregate=True,
        ),
    ]
    median_itl_ms: Annotated[
        Measure,
        Measured(
            LLM_ROWS,
            "Measured: median inter-token latency, in milliseconds. Upstream `median_itl_ms`.",
            role=Role.LATENCY,
            default=True,
            order=True,
            unit="ms",
            spelled="milliseconds",
            aggregate=True,
            filter=AtMost("Largest median inter-token latency, in ms (inclusive)."),
        ),
    ]
    p90_itl_ms: Annotated[
        Measure,
        Measured(
            LLM_ROWS,
            "Measured: 90th-percentile inter-token latency, in milliseconds. Upstream "
            "`p90_itl_ms`.",
            role=Role.LATENCY,
            order=True,
            unit="ms",
            spelled="milliseconds",
            aggregate=True,
        ),
    ]
    p95_itl_ms: Annotated[
        Measure,
        Measured(
            LLM_ROWS,
            "Measured: 95th-percentile inter-token latency, in milliseconds. Upstream "
            "`p95_itl_ms`.",
            role=Role.LATENCY,
            order=True,
            unit="ms",
            spelled="milliseconds",
            aggregate=True,
        ),
    ]
    p99_itl_ms: Annotated[
        Measure,
        Measured(
            LLM_ROWS,
            "Measured: 99th-percentile inter-token latency, in milliseconds. Upstream "
            "`p99_itl_ms`.",
            role=Role.LATENCY,
            order=True,
            unit="ms",
            spelled="milliseconds",
            aggregate=True,
        ),
    ]
    output_throughput_tokens_per_sec: Annotated[
        Measure,
        Measured(
            LLM_ROWS,
            "Measured: output tokens generated per second, all GPUs together. "
            "Upstream `output_throughput_tokens_per_sec`.",
            role=Role.THROUGHPUT,
            order=True,
            unit="tokens/s",
            spelled="output tokens per second",
            aggregate=True,
        ),
    ]
    batch_size: Annotated[
        Count,
        Setting(
            DIFFUSION_ROWS,
            "Setting: outputs generated per batch. Upstream `batch_size`.",
            role=Role.BATCH,
            order=True,
            key=True,
        ),
    ]
    batch_latency_s: Annotated[
        Measure,
        Measured(
            DIFFUSION_ROWS,
            "Measured: time to generate one batch, in seconds. Upstream `batch_latency_s`.",
            role=Role.LATENCY,
            default=True,
            order=True,
            unit="s",
            spelled="seconds per batch",
            aggregate=True,
        ),
    ]
    inference_steps: Annotated[
        Count,
        Setting(
            DIFFUSION_ROWS,
            "Setting: denoising steps per output. Upstream `inference_steps`.",
            order=True,
            key=True,
        ),
    ]
    ulysses_degree: Annotated[
        Degree,
        Setting(
            DIFFUSION_ROWS,
            "Setting: Ulysses sequence-parallel degree. Upstream `ulysses_degree`.",
            role=Role.DEGREE,
            order=True,
        ),
    ]
    ring_degree: Annotated[
        Degree,
        Setting(
            DIFFUSION_ROWS,
            "Setting: ring-attention parallel degree. Upstream `ring_degree`.",
            role=Role.DEGREE,
            order=True,
        ),
    ]
    energy_per_output_joules: Annotated[
        Measure,
        Measured(
            {
                IMAGE: As(
                    "energy_per_image_joules",
                    "Measured: GPU energy per generated image, in joules (all GPUs together). "
                    "Upstream `energy_per_image_joules`.",
                ),
                VIDEO: As(
                    "energy_per_video_joules",
                    "Measured: GPU energy per generated video, in joules (all GPUs together). "
                    "Upstream `energy_per_video_joules`.",
                ),
            },
            role=Role.ENERGY,
            default=True,
            order=True,
            unit="J/output",
            spelled="joules per image or video",
            aggregate=True,
        ),
    ]
    throughput_outputs_per_sec: Annotated[
        Measure,
        Measured(
            {
                IMAGE: As(
                    "throughput_images_per_sec",
                    "Measured: images generated per second. Upstream `throughput_images_per_sec`.",
                ),
                VIDEO: As(
                    "throughput_videos_per_sec",
                    "Measured: videos generated per second. Upstream `throughput_videos_per_sec`.",
                ),
            },
            role=Role.THROUGHPUT,
            order=True,
            unit="outputs/s",
            spelled="images or videos per second",
            aggregate=True,
        ),
    ]
    height: Annotated[
        Count,
        Setting(
            {
                IMAGE: As("image_height", "Setting: image height, in pixels."),
                VIDEO: As("video_height", "Setting: video height, in pixels."),
            },
            order=True,
            key=True,
        ),
    ]
    width: Annotated[
        Count,
        Setting(
            {
                IMAGE: As("image_width", "Setting: image width, in pixels."),
                VIDEO: As("video_width", "Setting: video width, in pixels."),
            },
            order=True,
            key=True,
        ),
    ]
    fps: Annotated[
        Count | None,
        Setting((VIDEO,), "Setting: frames per second of the video.", key=True),
    ]
    num_frames: Annotated[
        Count | None,
        Setting((VIDEO,), "Setting: frames per video.", key=True),
    ]


@dataclass(frozen=True)
class Declared:
    """A field of `TaskRowFields`, read: its name (its column's and its row attribute's), its
    type as declared, and what it declares."""

    name: str
    # The row's type of it, with the checks a task file's value passes (Measure, Count ...).
    type: Any
    spec: Setting | Measured

    @property
    def python(self) -> type:
        """int, float or str: the column's and the API's type."""
        found = without_none(self.type)
        return get_args(found)[0] if get_origin(found) is Annotated else found

    @property
    def nullable(self) -> bool:
        return without_none(self.type) is not self.type

    @property
    def setting(self) -> bool:
        return isinstance(self.spec, Setting)

    def has(self, variant: str) -> bool:
        return variant in self.spec.rows

    def name_in(self, variant: str) -> str:
        """What rows of `variant` call it upstream, and what the API calls it there."""
        rows = self.spec.rows
        return rows[variant].name if isinstance(rows, Mapping) else self.name

    def description_in(self, variant: str) -> str:
        rows = self.spec.rows
        return rows[variant].description if isinstance(rows, Mapping) else self.spec.description

    def shape(self) -> tuple[Any, Any]:
        """Its type and default in a task file's row of a variant that has it: required, unless
        files before `since` lack it."""
        return (self.type, None) if self.spec.since else (without_none(self.type), ...)


@dataclass(frozen=True)
class Filter:
    """A condition a kind's configuration filter takes: a bound on a column, inclusive."""

    # The filter's field (`max_num_seqs_at_least`, `max_median_itl_ms`).
    name: str
    column: str
    # An upper bound, or a lower one.
    most: bool
    description: str
    python: type
    # A bound on a setting (checked as its values are), or on a measurement.
    setting: bool


@dataclass(frozen=True)
class Metric:
    """A figure the statistics summarise: a field, or one LeadGreen derives from a row's."""

    name: str
    unit: str
    spelled: str
    get: Getter
    # The variants whose rows have it (whichever kind's metrics it is asked among), and what the
    # API calls it on them (one name per variant that names it differently).
    rows: tuple[str, ...]
    names: tuple[str, ...]
    # The API's description of a derived figure (a field's is the field's).
    description: str = ""


# Figures LeadGreen derives from a row's fields, summarised right after the field they follow.
PER_GPU_POWER = Metric(
    "power_per_gpu_watts",
    unit="W/GPU",
    spelled="watts per GPU",
    get=per_gpu_watts,
    rows=EVERY_ROW,
    names=("power_per_gpu_watts",),
    description="Derived by LeadGreen: avgPowerWatts ÷ numGpus, in watts per GPU.",
)
DERIVED = {"avg_power_watts": (PER_GPU_POWER,)}


def without_none(annotation: Any) -> Any:
    """`annotation` without its None arm, if it has one."""
    if get_origin(annotation) in (Union, types.UnionType):
        arms = [arm for arm in get_args(annotation) if arm is not type(None)]
        if len(arms) == 1:
            return arms[0]
    return annotation


def _read(annotation: Any) -> tuple[Any, Setting | Measured]:
    """The type and the declaration of an `Annotated[type, Setting(...)]` (or Measured)."""
    found, *metadata = get_args(annotation)
    specs = [m for m in metadata if isinstance(m, Setting | Measured)]
    rest = [m for m in metadata if not isinstance(m, Setting | Measured)]
    return (Annotated[(found, *rest)] if rest else found), specs[0]


FIELDS = tuple(
    Declared(name, *_read(annotation))
    for name, annotation in get_type_hints(TaskRowFields, include_extras=True).items()
)
BY_NAME = {f.name: f for f in FIELDS}


def of(rows: Iterable[str]) -> list[Declared]:
    """The fields that rows of any of these variants have, in order."""
    wanted = tuple(rows)
    return [f for f in FIELDS if any(f.has(v) for v in wanted)]


def upstream_columns(variant: str) -> dict[str, str]:
    """The variant's task-file fields: upstream name → column, in order."""
    return {f.name_in(variant): f.name for f in of((variant,)) if not f.spec.model_file}


def orderable(rows: Iterable[str]) -> tuple[str, ...]:
    """The columns a client may order configurations by: the settings, then the figures."""
    ordered = [f for f in of(rows) if f.spec.order]
    return tuple(f.name for f in sorted(ordered, key=lambda f: not f.setting))


def with_role(rows: Iterable[str], role: Role) -> tuple[str, ...]:
    """The columns of this role, the default one first."""
    found = [f for f in of(rows) if f.spec.role is role]
    return tuple(f.name for f in sorted(found, key=lambda f: not f.spec.default))


def key_fields(rows: Iterable[str]) -> tuple[str, ...]:
    """The upstream names of the fields that identify a run, variant by variant."""
    return tuple(
        dict.fromkeys(
            f.name_in(variant) for variant in rows for f in of((variant,)) if _key(f.spec)
        )
    )


def _key(spec: Setting | Measured) -> bool:
    return isinstance(spec, Setting) and spec.key


def filters(rows: Iterable[str]) -> tuple[Filter, ...]:
    """The conditions on columns that a kind's configuration filter takes, in order."""
    found: list[Filter] = []
    for f in of(rows):
        bound = f.spec.filter
        if isinstance(bound, Range):
            found += [
                Filter(f"{f.name}_at_least", f.name, False, bound.at_least, f.python, True),
                Filter(f"{f.name}_at_most", f.name, True, bound.at_most, f.python, True),
            ]
        elif isinstance(bound, AtMost):
            found.append(Filter(f"max_{f.name}", f.name, True, bound.description, f.python, False))
    return tuple(found)


def metrics(rows: Iterable[str]) -> dict[str, Metric]:
    """The figures the statistics summarise for rows of these variants, in the API's order:
    energy (the default first), latency, throughput and power, then the rest, each followed by
    the figures derived from it."""
    variants = tuple(rows)
    summed = [f for f in of(variants) if isinstance(f.spec, Measured) and f.spec.aggregate]

    def place(f: Declared) -> tuple[int, bool]:
        role = f.spec.role
        rank = SUMMARY_ORDER.index(role) if role in SUMMARY_ORDER else len(SUMMARY_ORDER)
        return rank, not f.spec.default

    found: dict[str, Metric] = {}
    for f in sorted(summed, key=place):
        assert isinstance(f.spec, Measured)
        have = tuple(v for v in EVERY_ROW if f.has(v))
        names = tuple(dict.fromkeys(f.name_in(v) for v in have))
        found[f.name] = Metric(f.name, f.spec.unit, f.spec.spelled, attrgetter(f.name), have, names)
        found.update((d.name, d) for d in DERIVED.get(f.name, ()))
    return found


T = TypeVar("T")


def row_fields(rows: Iterable[str]) -> Callable[[type[T]], type[T]]:
    """A class decorator, before `dataclass`: the fields of these variants' rows become the
    class's first fields."""
    declared = of(rows)

    def add(cls: type[T]) -> type[T]:
        own = inspect.get_annotations(cls)
        cls.__annotations__ = {**{f.name: f.type for f in declared}, **own}
        return cls

    return add
