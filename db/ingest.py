"""Write a validated snapshot and its manifest into the tables, in one transaction."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from analysis import identities
from db.errors import IngestError
from db.gpus import gpu_facts
from db.kinds import Kind
from db.shapes import (
    MODEL_FACTS,
    Histogram,
    Manifest,
    ManifestModel,
    ModelFile,
)
from db.snapshot import Measurement, Snapshot, combined_digest
from db.tables import (
    GpuRow,
    ModelRow,
    ModelTaskRow,
    OrphanDocumentRow,
    ReleaseRow,
    SourceRow,
    TaskRow,
)


@dataclass
class IngestReport:
    release_id: int
    unchanged: bool
    last_updated: str
    digest: str
    configurations: dict[str, int] = field(default_factory=dict)
    models: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if self.unchanged:
            return (
                f"unchanged: this data is already stored as release {self.release_id} "
                f"(data of {self.last_updated}); nothing was written"
            )
        counts = ", ".join(f"{task}: {n}" for task, n in self.configurations.items())
        return (
            f"ingested release {self.release_id} (data of {self.last_updated}): "
            f"{self.models} models, configurations {counts}"
        )


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


async def ingest(
    session: AsyncSession,
    snapshot: Snapshot,
    manifest: Manifest | None = None,
    manifest_raw: bytes | None = None,
    manifest_name: str = "manifest",
) -> IngestReport:
    """Store `snapshot` as a new release, unless identical data is stored already.

    `manifest_name` (the manifest's path) is what errors about the manifest name.
    """
    digest = combined_digest(snapshot, manifest_raw)
    async with session.begin():
        same = ReleaseRow.digest == digest
        if manifest is None:
            # Files without a manifest add nothing to a release that has the same files.
            same = same | (ReleaseRow.data_digest == snapshot.digest)
        existing = await session.scalar(select(ReleaseRow).where(same).limit(1))
        if existing is not None:
            return IngestReport(existing.id, True, existing.last_updated, digest)
        report = IngestReport(
            0, False, snapshot.index.last_updated, digest, warnings=list(snapshot.warnings)
        )
        release = ReleaseRow(
            digest=digest,
            data_digest=snapshot.digest,
            location=snapshot.location,
            upstream_commit=snapshot.commit,
            last_updated=snapshot.index.last_updated,
            ingested_at=datetime.now(UTC).replace(tzinfo=None),
            manifest_version=manifest.version if manifest else None,
            manifest_updated=manifest.updated if manifest else None,
            manifest_data_version=manifest.data_version if manifest else None,
            index_tasks=snapshot.index.tasks,
            index_architectures=snapshot.index.architectures,
            index_fields=snapshot.index.model_extra or {},
            checks=[asdict(v) for v in _identity_checks(snapshot)],
        )
        session.add(release)
        await session.flush()
        report.release_id = release.id
        report.warnings += [_describe(v) for v in _identity_checks(snapshot)]
        session.add_all(
            OrphanDocumentRow(release_id=release.id, path=path, document=document)
            for path, document in snapshot.orphans.items()
        )
        session.add(_source_row(release.id, snapshot, manifest))
        await _ensure_gpus(session, snapshot, report)
        models = await _add_models(session, release.id, snapshot, manifest, manifest_name)
        report.models = len(models)
        for task in snapshot.tasks:
            task_row = TaskRow(
                release_id=release.id,
                name=task.name,
                display_name=task.display_name,
                architecture=task.architecture,
                file_architecture=task.file_architecture,
            )
            session.add(task_row)
            await session.flush()
            session.add_all(
                _model_task(models[model_id].id, task_row.id, path, doc)
                for model_id, (path, doc) in task.model_files.items()
            )
            rows = [
                _configuration(task.kind, release.id, task_row.id, models[m.row.model_id], m)
                for m in task.measurements
            ]
            if rows:
                await session.execute(insert(task.kind.table), rows)
            report.configurations[task.name] = len(task.measurements)
    return report


def _source_row(release_id: int, snapshot: Snapshot, manifest: Manifest | None) -> SourceRow:
    if manifest is not None:
        return SourceRow(release_id=release_id, **manifest.source.model_dump())
    # Without a manifest, only what the snapshot itself tells is known.
    return SourceRow(
        release_id=release_id,
        name="ML.ENERGY Leaderboard",
        url="https://ml.energy/leaderboard/",
        data_url=snapshot.location,
        compiled=snapshot.index.last_updated,
    )


async def _ensure_gpus(session: AsyncSession, snapshot: Snapshot, report: IngestReport) -> None:
    names = {m.row.gpu_model for task in snapshot.tasks for m in task.measurements}
    known = set(await session.scalars(select(GpuRow.name).where(GpuRow.name.in_(names))))
    for name in sorted(names):
        facts = gpu_facts(name)
        if facts is None:
            report.warnings.append(
                f"GPU {name!r} is not in the reference table: its facts "
                "(full name, architecture, memory, TDP) are left empty"
            )
        if name not in known:
            session.add(GpuRow(name=name, **(facts or {})))
    await session.flush()


async def _add_models(
    session: AsyncSession,
    release_id: int,
    snapshot: Snapshot,
    manifest: Manifest | None,
    manifest_name: str,
) -> dict[str, ModelRow]:
    measured = {m.row.model_id for t in snapshot.tasks for m in t.measurements}
    entries: dict[str, tuple[int, ManifestModel]] = {}
    for i, listed in enumerate(manifest.models if manifest else []):
        if listed.model_id not in measured:
            raise IngestError(
                manifest_name,
                f"model {listed.model_id!r} has no configuration in the ingested tasks",
                row=i,
                field=f"models[{i}].model_id",
            )
        entries[listed.model_id] = (i, listed)
    models: dict[str, ModelRow] = {}
    slugs: dict[str, str] = {}
    for model_id, facts in snapshot.index.models.items():
        position, entry = entries.get(model_id) or (None, None)
        slug = entry.slug if entry else slugify(facts.nickname)
        if slug in slugs:
            raise IngestError(
                manifest_name if entry else "index.json",
                f"slug {slug!r} of {model_id!r} is taken by {slugs[slug]!r}",
                row=position,
                field=f"models[{position}].slug" if entry else f"models.{model_id}.nickname",
            )
        slugs[slug] = model_id
        models[model_id] = ModelRow(
            release_id=release_id,
            model_id=model_id,
            slug=slug,
            name=entry.name if entry else facts.nickname,
            params_b=entry.params_b if entry else facts.total_params_billions,
            active_params_b=entry.active_params_b if entry else facts.activated_params_billions,
            architecture=facts.architecture,
            weight_precision=facts.weight_precision,
            nickname=facts.nickname,
            total_params_billions=facts.total_params_billions,
            activated_params_billions=facts.activated_params_billions,
            index_fields=facts.model_extra or {},
            gpus=entry.gpus if entry else None,
            url=entry.url if entry else None,
            page=entry.page if entry else None,
            manifest_position=position,
        )
    session.add_all(models.values())
    await session.flush()
    return models


def _identity_checks(snapshot: Snapshot) -> list[identities.Violations]:
    return [
        violation
        for task in snapshot.tasks
        if task.kind.checks_identities
        for violation in identities.check(
            f"tasks/{task.name}.json", [m.row.model_dump() for m in task.measurements]
        )
    ]


def _describe(v: identities.Violations) -> str:
    note = f" ({v.note})" if v.note else ""
    return (
        f"{v.file}: {len(v.rows)} of {v.checked} rows break {v.statement}, by up to "
        f"{v.max_relative_difference:.3g} relative; first rows {v.rows[:5]}{note}"
    )


def _model_task(model_id: int, task_id: int, path: str, doc: ModelFile) -> ModelTaskRow:
    histogram = doc.output_length_distribution
    return ModelTaskRow(
        model_id=model_id,
        task_id=task_id,
        file=path,
        length_bins=histogram.bins if histogram else None,
        length_counts=histogram.counts if histogram else None,
        fields=doc.model_extra or {},
    )


def _configuration(
    kind: Kind, release_id: int, task_id: int, model: ModelRow, m: Measurement
) -> dict[str, Any]:
    """The row's values for its kind's table: its figures and settings by column, the model
    file's details, and whatever else it says in `extra`."""
    # A row that says other model facts than index.json keeps its own, so nothing is lost.
    overrides = {
        key: getattr(m.row, key)
        for key in MODEL_FACTS
        if key in m.row.model_fields_set and getattr(m.row, key) != getattr(model, key)
    }
    values = {
        "release_id": release_id,
        "task_id": task_id,
        "model_id": model.id,
        "gpu": m.row.gpu_model,
        "task_row": m.task_row,
        "model_row": m.model_row,
        "extra": {**(m.row.model_extra or {}), **overrides} or None,
        **kind.figures(m.variant, m.row),
    }
    if kind.detailed:
        histogram: Histogram = getattr(m.detail, "output_length_distribution")  # noqa: B009
        values |= {
            "parallel_notes": getattr(m.detail, "parallelization").notes,  # noqa: B009
            "length_bins": histogram.bins,
            "length_counts": histogram.counts,
        }
    return values
