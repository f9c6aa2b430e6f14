"""Rebuild a release's files in the upstream layout (index.json, tasks/, models/) from tables."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from db.kinds import KINDS, Kind, Row
from db.shapes import MODEL_FACTS
from db.tables import (
    ConfigurationRow,
    ModelRow,
    ModelTaskRow,
    OrphanDocumentRow,
    ReleaseRow,
    TaskRow,
)

Document = dict[str, Any]


def _model_facts(model: ModelRow) -> Document:
    facts = {
        "nickname": model.nickname,
        "total_params_billions": model.total_params_billions,
        "activated_params_billions": model.activated_params_billions,
        "weight_precision": model.weight_precision,
    }
    if model.architecture is not None:
        facts["architecture"] = model.architecture
    return facts


def _own_fields(extra: Document | None) -> Document:
    """A row's extra fields that the per-model file repeats (not the model facts)."""
    return {k: v for k, v in (extra or {}).items() if k not in MODEL_FACTS}


def _rows(kind: Kind, row: Row) -> tuple[Document, Document]:
    """The row as the task file writes it, and as the per-model file writes it."""
    measured = {"gpu_model": row.gpu, **kind.upstream(row)}
    degrees = {k: measured.pop(k) for k in kind.degrees}
    task_row = {**measured, **degrees, **(row.extra or {})}
    model_row = {**measured, **_own_fields(row.extra), "parallelization": degrees}
    if kind.detailed:
        llm = cast(ConfigurationRow, row)
        degrees["notes"] = llm.parallel_notes
        model_row["output_length_distribution"] = {
            "bins": llm.length_bins,
            "counts": llm.length_counts,
        }
    return task_row, model_row


async def export_documents(session: AsyncSession, *, release_id: int) -> dict[str, Document]:
    """Every file of the release, by its path in the upstream layout."""
    release = await session.get_one(ReleaseRow, release_id)
    models = {
        m.id: m
        for m in await session.scalars(select(ModelRow).where(ModelRow.release_id == release_id))
    }
    tasks = list(await session.scalars(select(TaskRow).where(TaskRow.release_id == release_id)))
    documents: dict[str, Document] = {
        "index.json": {
            **release.index_fields,
            "last_updated": release.last_updated,
            "tasks": release.index_tasks,
            "architectures": release.index_architectures,
            "models": {m.model_id: {**_model_facts(m), **m.index_fields} for m in models.values()},
        }
    }
    files: dict[tuple[int, int], Document] = {}
    for task in tasks:
        for mt in await session.scalars(
            select(ModelTaskRow).where(ModelTaskRow.task_id == task.id)
        ):
            model = models[mt.model_id]
            doc: Document = {"model_id": model.model_id, "task": task.name, **mt.fields}
            if mt.length_bins is not None:
                doc["output_length_distribution"] = {
                    "bins": mt.length_bins,
                    "counts": mt.length_counts,
                }
            doc["configurations"] = []
            files[(mt.model_id, task.id)] = doc
            documents[mt.file] = doc
        header: Document = {"task": task.name, "task_display_name": task.display_name}
        if task.file_architecture is not None:
            header["architecture"] = task.file_architecture
        rows: list[tuple[int, int, Document, Document, int]] = []
        stored: list[tuple[Kind, Row]] = [
            (kind, cast(Row, row))
            for kind in KINDS
            for row in await session.scalars(
                select(kind.table).where(kind.table.task_id == task.id)
            )
        ]
        for kind, row in stored:
            task_row, model_row = _rows(kind, row)
            model = models[row.model_id]
            task_row = {"model_id": model.model_id, **_model_facts(model), **task_row}
            rows.append((row.task_row, row.model_row, task_row, model_row, row.model_id))
        rows.sort(key=lambda r: r[0])
        header["configurations"] = [r[2] for r in rows]
        for _, _, _, model_row, model_id in sorted(rows, key=lambda r: (r[4], r[1])):
            files[(model_id, task.id)]["configurations"].append(model_row)
        documents[f"tasks/{task.name}.json"] = header
    for orphan in await session.scalars(
        select(OrphanDocumentRow).where(OrphanDocumentRow.release_id == release_id)
    ):
        documents[orphan.path] = orphan.document
    return documents
