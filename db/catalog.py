"""A release in memory: its models, tasks, GPUs, source and configurations, read once.

A release never changes once ingested and holds about 2,000 rows (some 93,000 at fifty times
today's data), so the API reads each release once per process and answers every request from
these rows: no SQL on the request path. A new ingest is a new release, and so a new catalog.
"""

from __future__ import annotations

import gc
import logging
from array import array
from collections import defaultdict
from collections.abc import (
    Callable,
    Hashable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, TypeVar

import lz4.frame
import orjson
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from analysis.pareto import pareto_optimal_within, scope_key
from db import reads
from db.kinds import KINDS, LLM, Kind, kind_of, kind_of_row
from db.rows import Row, columns
from db.tables import (
    CatalogRow,
    GpuRow,
    ModelRow,
    ModelTaskRow,
    ReleaseRow,
    SourceRow,
    TaskRow,
)

T = TypeVar("T")
log = logging.getLogger("leadgreen")


@dataclass(frozen=True)
class Bound:
    """Inclusive bounds on a column's values; None means no bound."""

    column: str
    least: float | None = None
    most: float | None = None


@dataclass(frozen=True)
class ConfigurationFilter:
    """Which configurations to read; None means no constraint."""

    model_ids: Sequence[int] | None = None
    gpu: str | None = None
    num_gpus: int | None = None
    task: str | None = None
    # Bounds on the kind's columns (its filters, db.fields), every one to be met.
    bounds: tuple[Bound, ...] = ()

    def accepts(self, row: Row) -> bool:
        """Whether `row` meets every condition but `task` (the catalog picks the task's rows)."""
        if self.model_ids is not None and row.model_id not in self.model_ids:
            return False
        if self.gpu is not None and row.gpu != self.gpu:
            return False
        if self.num_gpus is not None and row.num_gpus != self.num_gpus:
            return False
        for bound in self.bounds:
            value = getattr(row, bound.column)
            if bound.least is not None and value < bound.least:
                return False
            if bound.most is not None and value > bound.most:
                return False
        return True


EVERYTHING = ConfigurationFilter()


@dataclass(eq=False)
class Catalog:
    """One release's rows, in the order the read functions give them, with their indexes.

    The rows are detached from any session; nothing may change them. `once` keeps what the
    layers above derive from the rows, for as long as the catalog lives.
    """

    release: ReleaseRow
    source: SourceRow | None
    # The release's tasks and models by name and slug; every GPU type by name.
    tasks: Sequence[TaskRow]
    models: Sequence[ModelRow]
    gpus: Sequence[GpuRow]
    model_tasks: Sequence[ModelTaskRow]
    # Each kind's configurations in upstream order: by task, then by row of the task file.
    rows: Mapping[Kind, Sequence[Row]]
    _derived: dict[Hashable, Any] = field(default_factory=dict, repr=False)
    # Objects made per row for the layers above (there can be one per row of the release):
    # whoever holds the catalog may bound them (graph.schema.memory does).
    objects: MutableMapping[Hashable, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.task_by_id = {t.id: t for t in self.tasks}
        self.task_by_name = {t.name: t for t in self.tasks}
        self.kind_of_task = {t.id: kind_of(t.architecture, t.file_architecture) for t in self.tasks}
        self.model_by_id = {m.id: m for m in self.models}
        self.model_by_slug = {m.slug: m for m in self.models}
        self.model_by_model_id = {m.model_id: m for m in self.models}
        self.gpu_by_name = {g.name: g for g in self.gpus}
        self.in_manifest = sorted(
            (m for m in self.models if m.manifest_position is not None),
            key=lambda m: m.manifest_position or 0,
        )
        self.tasks_of_model: dict[int, list[ModelTaskRow]] = defaultdict(list)
        for model_task in self.model_tasks:
            self.tasks_of_model[model_task.model_id].append(model_task)
        self._by_task = {
            (kind, task_id): rows
            for kind, all_rows in self.rows.items()
            for task_id, rows in _grouped(all_rows, attrgetter("task_id")).items()
        }
        self._by_model = {
            (kind, model_id): rows
            for kind, all_rows in self.rows.items()
            for model_id, rows in _grouped(all_rows, attrgetter("model_id")).items()
        }
        self.by_key = KeyIndex({row.key: row for rows in self.rows.values() for row in rows})

    def model(self, *, slug: str | None = None, model_id: str | None = None) -> ModelRow | None:
        """The model with this slug and/or Hugging Face id, or None."""
        found = None
        if slug is not None:
            found = self.model_by_slug.get(slug)
            if found is None:
                return None
        if model_id is not None:
            by_id = self.model_by_model_id.get(model_id)
            if by_id is None or (found is not None and by_id is not found):
                return None
            found = by_id
        return found

    def of_model(self, kind: Kind, model_id: int) -> Sequence[Any]:
        """A model's configurations of one kind, in upstream order."""
        return self._by_model.get((kind, model_id), ())

    def of_task(self, kind: Kind, task_id: int) -> Sequence[Any]:
        """A task's configurations (of its kind), in upstream order."""
        return self._by_task.get((kind, task_id), ())

    def configurations(
        self, kind: Kind = LLM, where: ConfigurationFilter = EVERYTHING
    ) -> list[Any]:
        """Every configuration of the kind matching `where`, in upstream order."""
        task_id = None
        if where.task is not None:
            task = self.task_by_name.get(where.task)
            if task is None:
                return []
            task_id = task.id
        rows: Sequence[Any]
        if where.model_ids is not None and len(where.model_ids) == 1:
            rows = self.of_model(kind, where.model_ids[0])
            if task_id is not None:
                rows = [r for r in rows if r.task_id == task_id]
        elif task_id is not None:
            rows = self._by_task.get((kind, task_id), ())
        else:
            rows = self.rows.get(kind, ())
        return [r for r in rows if where.accepts(r)]

    def page(
        self,
        kind: Kind = LLM,
        *,
        where: ConfigurationFilter = EVERYTHING,
        order_by: str = "id",
        descending: bool = False,
        after: tuple[Any, int] | None = None,
        first: int = 50,
    ) -> tuple[list[Any], int]:
        """One page (keyset, ties broken by id) of `first + 1` rows, so that callers see a next
        page, and how many rows match `where` over all pages."""
        rows = self.configurations(kind, where)
        key = attrgetter(order_by, "id")
        ordered = sorted(rows, key=key, reverse=descending)
        if after is not None:
            if descending:
                ordered = [r for r in ordered if key(r) < after]
            else:
                ordered = [r for r in ordered if key(r) > after]
        return ordered[: first + 1], len(rows)

    def pareto(self, kind: Kind, row: Row, scope: str, latency: str | None = None) -> bool:
        """Whether `row` is on the time-energy frontier of its group under `scope` (see
        analysis.pareto), within its task; `latency` is the kind's latency column to use.

        Each task's memberships are computed once per scope and latency, for all its rows.
        """

        def compute() -> frozenset[int]:
            rows = self._by_task.get((kind, row.task_id), ())
            kept = pareto_optimal_within(
                [kind.point(r, latency) for r in rows], [scope_key(r, scope) for r in rows]
            )
            return frozenset(r.id for r, on in zip(rows, kept, strict=True) if on)

        key = ("pareto", kind.name, row.task_id, scope, latency)
        return row.id in self.once(key, compute)

    def object(self, key: Hashable, make: Callable[[], T]) -> T:
        """An object made of one row: kept in `objects` (as long as they keep it)."""
        try:
            return self.objects[key]  # type: ignore[no-any-return]
        except KeyError:
            value = self.objects[key] = make()
            return value

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()` the first time `key` is asked for; the same value every time after."""
        try:
            return self._derived[key]  # type: ignore[no-any-return]
        except KeyError:
            value = self._derived[key] = make()
            return value


class KeyIndex(Mapping[str, tuple[Kind, Row]]):
    """Each configuration by its key (analysis.changes), with its kind: (kind, row)."""

    def __init__(self, rows: dict[str, Row]) -> None:
        self._rows = rows

    def __getitem__(self, key: str) -> tuple[Kind, Row]:
        row = self._rows[key]
        return kind_of_row(row), row

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


def _grouped(rows: Iterable[T], key: Callable[[T], Hashable]) -> dict[Hashable, list[T]]:
    groups: dict[Hashable, list[T]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    return groups


class NoSuchRelease(LookupError):
    pass


async def load_catalog(session: AsyncSession, release_id: int) -> Catalog:
    """Read a release's rows: its configurations from its stored catalog (one read) when it
    has one that reads back, else one statement per table; the rest one statement per table.
    Raises NoSuchRelease for an unknown id."""
    release = await reads.release(session, release_id=release_id)
    if release is None:
        raise NoSuchRelease(release_id)
    rows = await stored_rows(session, release_id)
    if rows is None:
        rows = {
            kind: await reads.all_configurations(session, release_id=release_id, kind=kind)
            for kind in KINDS
        }
    return Catalog(
        release=release,
        source=await reads.source(session, release_id=release_id),
        tasks=await reads.tasks(session, release_id=release_id),
        models=await reads.models(session, release_id=release_id),
        gpus=await reads.gpus(session),
        model_tasks=await reads.model_tasks(session, release_id=release_id),
        rows=rows,
    )


# --- The stored catalog ----------------------------------------------------------------------

# The layout of a stored catalog (db.tables.CatalogRow.format), an LZ4 frame of: the length
# of a JSON head (4 bytes, little-endian), the head, then each column's values as the head says.
# The head: {kind's name: {"rows": n, "columns": [[name, encoding, bytes], ...]}}, the columns
# of each kind's row type in order, each kind's after the one before. A column is encoded as
# "f8" (every value a float: doubles), "i8" (every value an int: 64-bit integers), "shared" (a
# few distinct strings, or None: a JSON list of them, then a 32-bit index per row, -1 for
# None) or "json" (a JSON list of the values: `extra` as its value). A reader that finds another
# format, or columns that are not its row type's, reads the release row by row instead.
CATALOG_FORMAT = 1
_ARRAYS = {"f8": "d", "i8": "q"}


def pack(rows: Mapping[Kind, Sequence[Row]]) -> bytes:
    """Each kind's rows as a stored catalog's data."""
    head: dict[str, Any] = {}
    parts: list[bytes] = []
    for kind in KINDS:
        kept = rows.get(kind, ())
        described = []
        for name in columns(kind.row_type):
            encoding, data = _encoded([getattr(row, name) for row in kept])
            described.append([name, encoding, len(data)])
            parts.append(data)
        head[kind.name] = {"rows": len(kept), "columns": described}
    encoded_head = orjson.dumps(head)
    framed = [len(encoded_head).to_bytes(4, "little"), encoded_head, *parts]
    packed: bytes = lz4.frame.compress(b"".join(framed))
    return packed


def _encoded(values: list[Any]) -> tuple[str, bytes]:
    """A column's encoding and bytes (see CATALOG_FORMAT)."""
    if values and all(type(v) is float for v in values):
        return "f8", array("d", values).tobytes()
    if values and all(type(v) is int and -(2**63) <= v < 2**63 for v in values):
        return "i8", array("q", values).tobytes()
    if all(v is None or type(v) is str for v in values):
        distinct = list(dict.fromkeys(v for v in values if v is not None))
        if len(distinct) * 4 < len(values):
            index = {text: i for i, text in enumerate(distinct)}
            numbers = array("i", [-1 if v is None else index[v] for v in values])
            table = orjson.dumps(distinct)
            return "shared", len(table).to_bytes(4, "little") + table + numbers.tobytes()
    return "json", orjson.dumps(values)


def _decoded(encoding: str, data: bytes, count: int) -> list[Any]:
    if encoding in _ARRAYS:
        numbers = array(_ARRAYS[encoding])
        numbers.frombytes(data)
        decoded: list[Any] = numbers.tolist()
    elif encoding == "shared":
        size = int.from_bytes(data[:4], "little")
        table = [*orjson.loads(data[4 : 4 + size]), None]  # (index -1: None)
        indexes = array("i")
        indexes.frombytes(data[4 + size :])
        decoded = [table[i] for i in indexes]
    elif encoding == "json":
        decoded = orjson.loads(data)
    else:
        raise ValueError(f"encoding {encoding!r}")
    if len(decoded) != count:
        raise ValueError(f"{len(decoded)} values for {count} rows")
    return decoded


def unpack(data: bytes) -> dict[Kind, list[Row]]:
    """The rows of a stored catalog's data; ValueError when it is not what `pack` makes for
    this code's kinds and rows."""
    # The collector paused: the rows hold no cycles, and its passes over the objects made so
    # far would be some two fifths of the time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _unpacked(memoryview(lz4.frame.decompress(data)))
    except (RuntimeError, ValueError, TypeError, LookupError, AttributeError) as exc:
        # (lz4 raises RuntimeError; orjson and array ValueError; a wrong head LookupError)
        raise ValueError(f"not a stored catalog of this code's rows: {exc!r}") from None
    finally:
        if collecting:
            gc.enable()


def _unpacked(data: memoryview) -> dict[Kind, list[Row]]:
    size = int.from_bytes(data[:4], "little")
    head, at = orjson.loads(data[4 : 4 + size]), 4 + size
    if set(head) != {kind.name for kind in KINDS}:
        raise ValueError(f"kinds {sorted(head)}")
    found: dict[Kind, list[Row]] = {}
    for kind in KINDS:
        part, names = head[kind.name], columns(kind.row_type)
        if [name for name, _, _ in part["columns"]] != names:
            raise ValueError(f"other {kind.name} columns")
        values = []
        for _name, encoding, length in part["columns"]:
            values.append(_decoded(encoding, bytes(data[at : at + length]), part["rows"]))
            at += length
        # Each row made of its column values in one call; the strings of SHARED columns are
        # one object per distinct text ("shared" columns), as db.rows.RowMaker makes them.
        found[kind] = list(map(kind.row_type, *values)) if names and part["rows"] else []
    if at != len(data):
        raise ValueError(f"{len(data) - at} bytes past the columns")
    return found


async def store_catalog(session: AsyncSession, release_id: int) -> None:
    """Store the release's catalog (its configurations read back as a server reads them),
    in the session's transaction: what `load_catalog` reads whole afterwards."""
    rows = {
        kind: await reads.all_configurations(session, release_id=release_id, kind=kind)
        for kind in KINDS
    }
    session.add(CatalogRow(release_id=release_id, format=CATALOG_FORMAT, data=pack(rows)))
    await session.flush()


async def stored_rows(session: AsyncSession, release_id: int) -> dict[Kind, list[Row]] | None:
    """The release's configurations from its stored catalog; None when it has none of this
    format (releases ingested before it was stored), or one that does not read back (logged:
    the release is then read row by row)."""
    data = await session.scalar(
        select(CatalogRow.data).where(
            CatalogRow.release_id == release_id, CatalogRow.format == CATALOG_FORMAT
        )
    )
    if data is None:
        return None
    try:
        return unpack(data)
    except ValueError as exc:
        log.warning(
            "release %d: its stored catalog is not read (%s); reading its rows", release_id, exc
        )
        return None
