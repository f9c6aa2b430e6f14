"""The shapes of the input documents (upstream files and the LeadGreen manifest), validated."""

from __future__ import annotations

import datetime
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    create_model,
    model_validator,
)

from db import fields
from db.errors import IngestError
from db.fields import Count, Degree, Measure

# Names that become parts of paths (tasks/{task}.json, models/{org}__{name}__{task}.json):
# letters, digits, dots, dashes and underscores; a model id is "org/name".
TaskName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")]
ModelId = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"),
]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]


def _calendar_date(value: str) -> str:
    """A YYYY-MM-DD date that exists (the release order sorts on it)."""
    try:
        parsed = datetime.date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a date written YYYY-MM-DD") from None
    if parsed.isoformat() != value:
        raise ValueError(f"{value!r} is not a date written YYYY-MM-DD")
    return value


Date = Annotated[str, AfterValidator(_calendar_date)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class _Open(BaseModel):
    """A document whose unknown fields are kept (and reported), not refused."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)


class Histogram(_Open):
    bins: list[Annotated[float, Field(allow_inf_nan=False)]]
    counts: list[Annotated[int, Field(ge=0)]]

    @model_validator(mode="after")
    def _edges_match_counts(self) -> Histogram:
        if len(self.bins) != len(self.counts) + 1:
            raise ValueError(
                f"{len(self.bins)} bin edges for {len(self.counts)} counts (want one more edge)"
            )
        return self


class IndexModel(_Open):
    nickname: Name
    total_params_billions: Measure
    activated_params_billions: Measure
    architecture: str | None = None
    weight_precision: str


class UpstreamIndex(_Open):
    last_updated: Date
    tasks: list[TaskName]
    architectures: dict[str, list[str]]
    models: dict[ModelId, IndexModel]


class TaskRow(_Open):
    """The fields every task-file row has besides its own (db.fields): the model and the GPU
    type, and the model's facts it repeats from index.json."""

    model_id: ModelId
    nickname: Name
    gpu_model: Name
    total_params_billions: Measure
    activated_params_billions: Measure
    # Diffusion rows before 2025-12-15 do not repeat it.
    weight_precision: str | None = None


def _task_row(variant: str, **more: Any) -> type[TaskRow]:
    """The shape of a task-file row of this variant: TaskRow, then the variant's fields."""
    own: dict[str, Any] = {
        f.name_in(variant): f.shape() for f in fields.of((variant,)) if not f.spec.model_file
    }
    return create_model(f"{variant.capitalize()}TaskRow", __base__=TaskRow, **own, **more)


# A row of each variant's task files: an LLM or MLLM task's (lm-arena-chat, gpqa,
# sourcegraph-fim, image-chat, ...), whose rows name the model's architecture; text-to-image's;
# text-to-video's.
TASK_ROWS = {
    fields.TEXT: _task_row(fields.TEXT, architecture=(str, ...)),
    fields.IMAGE: _task_row(fields.IMAGE),
    fields.VIDEO: _task_row(fields.VIDEO),
}


# Model facts every task-file row repeats from index.json.
MODEL_FACTS = (
    "nickname",
    "total_params_billions",
    "activated_params_billions",
    "architecture",
    "weight_precision",
)


class TaskFile(_Open):
    task: TaskName
    task_display_name: Name
    architecture: str | None = None
    configurations: list[dict[str, Any]]


class Parallelization(_Open):
    tensor_parallel: Degree
    data_parallel: Degree
    expert_parallel: Degree
    notes: str = ""


class DiffusionParallelization(_Open):
    ulysses_degree: Degree
    ring_degree: Degree


class ModelFileRow(_Open):
    """What every row of a per-model file has."""

    gpu_model: Name
    num_gpus: Count


class ModelFileConfiguration(ModelFileRow):
    """A row of an LLM or MLLM per-model file."""

    max_num_seqs: Count
    parallelization: Parallelization
    output_length_distribution: Histogram


class DiffusionModelFileConfiguration(ModelFileRow):
    """A row of a diffusion per-model file."""

    batch_size: Count
    parallelization: DiffusionParallelization


class ModelFile(_Open):
    model_id: ModelId
    task: TaskName
    output_length_distribution: Histogram | None = None
    configurations: list[dict[str, Any]]


class ManifestSource(_Strict):
    name: str
    publisher: str
    url: str
    data_url: str
    version: str
    released: str
    compiled: str
    compiled_evidence: str
    retrieved: str
    licence: str
    licence_evidence: list[str]
    workload: str
    method: str
    selection: str
    cite: str
    cite_url: str
    used_for: str
    configurations: str


class ManifestModel(_Strict):
    slug: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    name: str
    model_id: str
    params_b: Measure
    active_params_b: Measure
    gpus: list[str]
    url: str
    page: str


class Manifest(_Strict):
    """A LeadGreen v1 index: the dataset's provenance and the models it lists."""

    version: str
    updated: str
    data_version: str
    source: ManifestSource
    models: list[ManifestModel]


M = TypeVar("M", bound=BaseModel)


def validate(
    shape: type[M], data: Any, file: str, *, row: int | None = None, prefix: str = ""
) -> M:
    """Validate `data` as `shape`, turning the first problem into an IngestError that says where."""
    try:
        return shape.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = prefix + ".".join(str(part) for part in error["loc"])
        got = "" if error["type"] == "missing" else f" (got {error['input']!r:.80})"
        raise IngestError(file, f"{error['msg']}{got}", row=row, field=loc or None) from exc
