"""One task of a snapshot, read: its file's rows validated, then its models' files one at a time,
each row paired with the task-file row it details (per db.kinds).

`TaskReading.models()` reads one model's file at a time, so that the ingest holds one task's
rows and one model file's, whatever the size of the data; `read_task` reads them all at once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from operator import itemgetter, ne
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from db.errors import IngestError
from db.fetch import parse_json
from db.kinds import Kind, kind_of
from db.shapes import ModelFile, ModelFileRow, TaskFile, TaskRow, UpstreamIndex, validate

M = TypeVar("M", bound=BaseModel)
# Keys of a model file's row that the task-file row does not repeat as they are.
_NESTED = ("parallelization", "output_length_distribution")


@dataclass(frozen=True)
class Measurement:
    """A task-file row paired with its row in the per-model file."""

    row: TaskRow
    task_row: int
    model_row: int
    detail: ModelFileRow
    variant: str


@dataclass(frozen=True)
class TaskData:
    name: str
    display_name: str
    architecture: str | None
    file_architecture: str | None
    kind: Kind
    measurements: list[Measurement]
    model_files: dict[str, tuple[str, ModelFile]]


@dataclass(frozen=True)
class ModelPart:
    """One model's file of a task and its rows, paired (in the order of the task file)."""

    model_id: str
    path: str
    document: ModelFile
    measurements: list[Measurement]


def model_file_name(model_id: str, task: str) -> str:
    return f"models/{model_id.replace('/', '__')}__{task}.json"


@dataclass(frozen=True)
class TaskReading:
    """A task whose file is read and whose rows are validated; its models' files are not yet."""

    name: str
    display_name: str
    architecture: str | None
    file_architecture: str | None
    kind: Kind
    path: str
    # The task file's rows, validated, in file order, with their variants (db.kinds).
    rows: list[TaskRow]
    variants: list[str]
    # Each model's rows (their places in the file), the models in order of their first row.
    by_model: dict[str, list[int]]
    files: Mapping[str, bytes]

    def models(self) -> Iterator[ModelPart]:
        """Each model's file, read, checked and paired with its rows, one at a time."""
        for model_id, own in self.by_model.items():
            model_path = model_file_name(model_id, self.name)
            model_doc = validate(
                ModelFile, parse_json(model_path, self.files[model_path]), model_path
            )
            if model_doc.model_id != model_id:
                raise IngestError(
                    model_path,
                    f"says model {model_doc.model_id!r}, expected {model_id!r}",
                    field="model_id",
                )
            paired = [(i, self.rows[i], self.variants[i]) for i in own]
            yield ModelPart(
                model_id,
                model_path,
                model_doc,
                _pair(self.kind, self.path, paired, model_path, model_doc),
            )


def start_task(
    files: Mapping[str, bytes], index: UpstreamIndex, task: str, warnings: list[str]
) -> TaskReading:
    """Read and validate a task's file; its unknown fields are reported in `warnings`."""
    path = f"tasks/{task}.json"
    doc = validate(TaskFile, parse_json(path, files[path]), path)
    if doc.task != task:
        raise IngestError(path, f"says task {doc.task!r}, expected {task!r}", field="task")
    architecture = next((a for a, ts in index.architectures.items() if task in ts), None)
    kind = kind_of(architecture, doc.architecture)
    variants = [kind.variant_of(raw) for raw in doc.configurations]
    rows = _all_valid(doc.configurations, set(variants), kind.task_shapes) or [
        validate(kind.task_shapes[v], raw, path, row=i, prefix=f"configurations[{i}].")
        for i, (raw, v) in enumerate(zip(doc.configurations, variants, strict=True))
    ]
    unknown: dict[str, int] = defaultdict(int)
    by_model: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_model[row.model_id].append(i)
        for key in row.model_extra or {}:
            unknown[key] += 1
    warnings.extend(
        f"{path}: kept field {k!r}, unknown to LeadGreen, on {n} rows" for k, n in unknown.items()
    )
    return TaskReading(
        task,
        doc.task_display_name,
        architecture,
        doc.architecture,
        kind,
        path,
        rows,
        variants,
        dict(by_model),
        files,
    )


def read_task(
    files: Mapping[str, bytes], index: UpstreamIndex, task: str, warnings: list[str]
) -> TaskData:
    """The task's rows, validated and paired, all at once (an IngestError names what is wrong)."""
    reading = start_task(files, index, task, warnings)
    model_files = {}
    measurements: list[Measurement] = []
    for part in reading.models():
        model_files[part.model_id] = (part.path, part.document)
        measurements += part.measurements
    measurements.sort(key=lambda m: m.task_row)
    return TaskData(
        task,
        reading.display_name,
        reading.architecture,
        reading.file_architecture,
        reading.kind,
        measurements,
        model_files,
    )


def _pair(
    kind: Kind,
    task_path: str,
    own: list[tuple[int, TaskRow, str]],
    model_path: str,
    model_doc: ModelFile,
) -> list[Measurement]:
    """Pair the i-th task-file row of a model with the i-th row of its model file, checked."""
    if len(own) != len(model_doc.configurations):
        raise IngestError(
            model_path,
            f"{len(model_doc.configurations)} configurations, but "
            f"{task_path} has {len(own)} for this model",
            field="configurations",
        )
    paired = []
    details = _all_valid(model_doc.configurations, {"rows"}, {"rows": kind.model_shape})
    same = _Same()
    for model_row, ((task_row, row, variant), raw) in enumerate(
        zip(own, model_doc.configurations, strict=True)
    ):
        detail = details[model_row] if details else None
        if detail is None:
            detail = validate(
                kind.model_shape,
                raw,
                model_path,
                row=model_row,
                prefix=f"configurations[{model_row}].",
            )
        # Everything the model file says of the row, flattened as the task file writes it.
        flat = {k: v for k, v in raw.items() if k not in _NESTED}
        flat.update((k, v) for k, v in raw["parallelization"].items() if k != "notes")
        if not same(row, flat):
            _disagreement(row, flat, model_path, model_row, task_path, task_row)
        paired.append(Measurement(row, task_row, model_row, detail, variant))
    return paired


class _Same:
    """Whether a task-file row states every field the model file's row states as the model file
    does (a field the task file does not state is the model file's alone: a newer field, kept
    there). The fields both state are looked up as a set per row, and compared by one getter
    made for that set (the rows of a model file state the same fields, mostly)."""

    def __init__(self) -> None:
        self._keys: tuple[set[str], set[str]] | None = None
        self._get: tuple[Callable[[Any], Any], Callable[[Any], Any]] | None = None

    def __call__(self, row: TaskRow, flat: dict[str, Any]) -> bool:
        unknown = row.model_extra or {}
        extra = unknown.keys() & flat.keys()
        declared = (row.model_fields_set & flat.keys()) - extra  # the set holds the unknown too
        if self._keys != (declared, extra):
            self._keys = (declared, extra)
            self._get = (_getter(declared), _getter(extra))
        assert self._get is not None
        from_declared, from_extra = self._get
        # `!=` on each pair, as the reference compares (a tuple's `==` takes a value as equal
        # to itself, a NaN too).
        return not any(map(ne, from_declared(row.__dict__), from_declared(flat))) and not any(
            map(ne, from_extra(unknown), from_extra(flat))
        )


def _getter(keys: set[str]) -> Callable[[Any], Any]:
    """The values of `keys` of a mapping, as one tuple (empty for no keys)."""
    if not keys:
        return lambda _mapping: ()
    get = itemgetter(*sorted(keys))
    return get if len(keys) > 1 else lambda mapping: (get(mapping),)


def _disagreement(
    row: TaskRow,
    flat: dict[str, Any],
    model_path: str,
    model_row: int,
    task_path: str,
    task_row: int,
) -> None:
    """Raise the first field of the model file's row that the task-file row states otherwise."""
    extra, given, declared = row.model_extra or {}, row.model_fields_set, row.__dict__
    for key, value in flat.items():
        if key in declared and key in given:
            stated = declared[key]
        elif key in extra:
            stated = extra[key]
        else:
            continue  # said by the model file only (a newer field): kept there
        if stated != value:
            raise IngestError(
                model_path,
                f"{value!r} disagrees with {task_path} row {task_row} ({stated!r})",
                row=model_row,
                field=key,
            )


@cache
def _list_of(shape: type[M]) -> TypeAdapter[list[M]]:
    return TypeAdapter(list[shape])  # type: ignore[valid-type]


def _all_valid(
    raws: list[dict[str, Any]], variants: set[str], shapes: Mapping[str, type[M]]
) -> list[M] | None:
    """The rows of one variant validated in one call, or None when they are not all of one
    variant or not all valid (validated one by one then, the first problem named)."""
    if len(variants) != 1:
        return None
    try:
        return _list_of(shapes[next(iter(variants))]).validate_python(raws)
    except ValidationError:
        return None
