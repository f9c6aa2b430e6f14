"""Task kinds as data: what differs between an LLM task and a diffusion task, said once.

Ingest (which shapes to validate, which columns to fill), reads (which table, which columns a
client may order by), answers (latency, energy, throughput, batch-size setting, metrics, filters,
default deadlines) and export (how a row is written back) all take a task's kind from here. What
a kind's rows hold is declared field by field in db.fields; its lists of columns are made from
that. A new kind of task (speech, embeddings) is one more `Kind` below, its rows' variants in
db.fields, its table and its GraphQL type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args, get_origin

from analysis.aggregate import Getter
from db import fields, shapes
from db.fields import Role
from db.rows import DiffusionRow, LlmRow, Row
from db.tables import ConfigurationRow, DiffusionConfigurationRow

Table = type[ConfigurationRow] | type[DiffusionConfigurationRow]


@dataclass(frozen=True, eq=False)
class Kind:
    """One kind of task and its row shape (equal only to itself)."""

    name: str
    # What error messages call the kind's tasks ("LLM or MLLM"), with its article ("an").
    called: str
    article: str
    # The variants of its task files' rows (db.fields: the rows a field is of).
    rows: tuple[str, ...]
    table: Table
    # The kind's rows in memory (db.rows): a release's catalog holds them.
    row_type: type[Row]
    # Which variant an upstream task-file row is, and the column that keeps it (if any).
    variant_of: Callable[[Mapping[str, Any]], str]
    variant_column: str | None
    # Pydantic shape of a per-model-file row.
    model_shape: type[shapes.ModelFileRow]
    # Whether the model file's rows carry parallelization notes and output-length histograms.
    detailed: bool
    # The leaderboard web app's default deadline for a task of this kind (None: none).
    default_deadline: Callable[[str], float | None]
    # Whether the data's identities (analysis.identities) are checked on its rows at ingest.
    checks_identities: bool

    # Made from the declaration of its rows' fields (db.fields), in its order:
    # Upstream field -> column of the kind's figures and settings, per variant (the diffusion
    # tasks write `energy_per_image_joules` or `energy_per_video_joules`).
    variants: Mapping[str, Mapping[str, str]] = field(init=False)
    # Pydantic shapes of a task-file row, per variant.
    task_shapes: Mapping[str, type[shapes.TaskRow]] = field(init=False)
    # Their fields, per variant, in order, each with its type (without None): what an export
    # of the rows writes.
    task_fields: Mapping[str, Mapping[str, type]] = field(init=False)
    # Columns a client may order configurations by.
    orderable: tuple[str, ...] = field(init=False)
    # The batch-size setting's column, and the parallelism settings (flat in the task file,
    # under `parallelization` in the model file).
    batch_setting: str = field(init=False)
    degrees: tuple[str, ...] = field(init=False)
    # Latency columns (the first is the default) and energy columns (likewise) for rankings.
    latencies: tuple[str, ...] = field(init=False)
    energies: tuple[str, ...] = field(init=False)
    throughput: str = field(init=False)
    # The average power column, all GPUs of a configuration together.
    power: str = field(init=False)
    # The figures the statistics summarise, by name, with how to read each from a row.
    metrics: Mapping[str, Getter] = field(init=False)
    # The conditions on columns its configuration filter takes.
    filters: tuple[fields.Filter, ...] = field(init=False)

    def __post_init__(self) -> None:
        rows = self.rows
        made: dict[str, Any] = {
            "variants": {v: fields.upstream_columns(v) for v in rows},
            "task_shapes": {v: shapes.TASK_ROWS[v] for v in rows},
            "task_fields": {
                v: {
                    name: _plain(info.annotation)
                    for name, info in shapes.TASK_ROWS[v].model_fields.items()
                }
                for v in rows
            },
            "orderable": fields.orderable(rows),
            "batch_setting": fields.with_role(rows, Role.BATCH)[0],
            "degrees": fields.with_role(rows, Role.DEGREE),
            "latencies": fields.with_role(rows, Role.LATENCY),
            "energies": fields.with_role(rows, Role.ENERGY),
            "throughput": fields.with_role(rows, Role.THROUGHPUT)[0],
            "power": fields.with_role(rows, Role.POWER)[0],
            "metrics": {name: m.get for name, m in fields.metrics(rows).items()},
            "filters": fields.filters(rows),
        }
        for name, value in made.items():
            object.__setattr__(self, name, value)

    def columns(self, variant: str) -> Mapping[str, str]:
        return self.variants[variant]

    def variant(self, row: Any) -> str:
        """Which of the kind's variants a stored row is."""
        return getattr(row, self.variant_column) if self.variant_column else self.rows[0]

    def upstream(self, row: Any) -> dict[str, Any]:
        """A stored row's figures and settings by upstream name."""
        columns = self.columns(self.variant(row))
        return {name: getattr(row, column) for name, column in columns.items()}

    def task_file_row(self, row: Any, model: Any) -> dict[str, Any]:
        """A stored row as its task file has it: the model (`model`, its table row) and its
        facts (the row's own where it said others: kept in `extra`), the GPU type, the row's
        figures and settings."""
        said = row.extra or {}
        values = {"model_id": model.model_id, "gpu_model": row.gpu}
        values.update((name, said.get(name, getattr(model, name))) for name in shapes.MODEL_FACTS)
        values.update(self.upstream(row))
        return {name: values[name] for name in self.task_fields[self.variant(row)]}

    def point(self, row: Any, latency: str | None = None) -> tuple[float, float]:
        """(latency, energy) of a row on the time-energy plane (the default energy)."""
        return float(getattr(row, latency or self.latencies[0])), float(
            getattr(row, self.energies[0])
        )


def _plain(annotation: Any) -> type:
    """The type a field's values have (`float` for `Annotated[float, ...] | None`)."""
    found = fields.without_none(annotation)
    return get_args(found)[0] if get_origin(found) is Annotated else found  # type: ignore[no-any-return]


# The leaderboard web app's default batch-latency deadlines, in seconds (github.com/ml-energy/
# leaderboard, src/config/tasks.ts at df188d9, `defaultLatencyDeadlineS`); its LLM and MLLM
# tasks all default to an ITL of 500 ms (`defaultItlDeadlineMs`).
DIFFUSION_DEADLINES_S = {"text-to-image": 30.0, "text-to-video": 300.0}
LLM_DEADLINE_MS = 500.0

LLM = Kind(
    name="llm",
    called="LLM or MLLM",
    article="an",
    rows=fields.LLM_ROWS,
    table=ConfigurationRow,
    row_type=LlmRow,
    variant_of=lambda _row: fields.TEXT,
    variant_column=None,
    model_shape=shapes.ModelFileConfiguration,
    detailed=True,
    default_deadline=lambda _task: LLM_DEADLINE_MS,
    checks_identities=True,
)
DIFFUSION = Kind(
    name="diffusion",
    called="diffusion",
    article="a",
    rows=fields.DIFFUSION_ROWS,
    table=DiffusionConfigurationRow,
    row_type=DiffusionRow,
    variant_of=lambda row: fields.VIDEO if "energy_per_video_joules" in row else fields.IMAGE,
    variant_column="output",
    model_shape=shapes.DiffusionModelFileConfiguration,
    detailed=False,
    default_deadline=DIFFUSION_DEADLINES_S.get,
    checks_identities=False,
)
KINDS = (LLM, DIFFUSION)
BY_ROW_TYPE: dict[type[Row], Kind] = {kind.row_type: kind for kind in KINDS}
# The upstream fields that identify a run, where a row has them (analysis.changes), in the
# order a configuration's key names them.
KEY_FIELDS = ("model_id", "gpu_model", *fields.key_fields(fields.EVERY_ROW))


def kind_of(*architectures: str | None) -> Kind:
    """The kind of a task, from its architecture in index.json and in its own file: diffusion
    when either says so, otherwise LLM (LLM and MLLM tasks share the row shape)."""
    return DIFFUSION if "diffusion" in architectures else LLM


def kind_of_row(row: Row) -> Kind:
    return BY_ROW_TYPE[type(row)]
