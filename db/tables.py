"""SQLAlchemy tables: one release of the upstream data, its provenance and its measurements."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from sqlalchemy import JSON, ForeignKey, Index, MetaData, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

intpk = Annotated[int, mapped_column(primary_key=True)]
name = Annotated[str, mapped_column(Text)]
text = Annotated[str | None, mapped_column(Text)]
release_fk = Annotated[int, mapped_column(ForeignKey("releases.id", ondelete="CASCADE"))]
json_value = Annotated[Any, mapped_column(JSON)]

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class Base(DeclarativeBase):
    metadata = metadata


class ReleaseRow(Base):
    """One ingested snapshot of the upstream data, with the manifest it came with."""

    __tablename__ = "releases"

    id: Mapped[intpk]
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    # The files' digest alone (`digest` also covers the manifest).
    data_digest: Mapped[str] = mapped_column(String(64), index=True)
    location: Mapped[str] = mapped_column(Text)
    upstream_commit: Mapped[str | None] = mapped_column(String(40))
    last_updated: Mapped[str] = mapped_column(Text)
    ingested_at: Mapped[datetime]
    manifest_version: Mapped[text]
    manifest_updated: Mapped[text]
    manifest_data_version: Mapped[text]
    # The upstream index.json's structure, kept so the release can be exported as it came.
    index_tasks: Mapped[list[str]] = mapped_column(JSON)
    index_architectures: Mapped[dict[str, list[str]]] = mapped_column(JSON)
    index_fields: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Identities of the data that some rows break (analysis.identities), found at ingest.
    checks: Mapped[list[dict[str, Any]]] = mapped_column(JSON)

    def __repr__(self) -> str:
        return f"ReleaseRow(id={self.id}, last_updated={self.last_updated!r})"


class SourceRow(Base):
    """The dataset's provenance: the `source` object of a LeadGreen v1 manifest, unchanged."""

    __tablename__ = "sources"

    release_id: Mapped[int] = mapped_column(
        ForeignKey("releases.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[text]
    publisher: Mapped[text]
    url: Mapped[text]
    data_url: Mapped[text]
    version: Mapped[text]
    released: Mapped[text]
    compiled: Mapped[text]
    compiled_evidence: Mapped[text]
    retrieved: Mapped[text]
    licence: Mapped[text]
    licence_evidence: Mapped[list[str] | None] = mapped_column(JSON)
    workload: Mapped[text]
    method: Mapped[text]
    selection: Mapped[text]
    cite: Mapped[text]
    cite_url: Mapped[text]
    used_for: Mapped[text]
    configurations: Mapped[text]

    def __repr__(self) -> str:
        return f"SourceRow(release_id={self.release_id}, name={self.name!r})"


class TaskRow(Base):
    """A benchmark workload (`lm-arena-chat`, `gpqa`, ...) within a release."""

    __tablename__ = "tasks"
    __table_args__ = (UniqueConstraint("release_id", "name"),)

    id: Mapped[intpk]
    release_id: Mapped[release_fk]
    name: Mapped[name]
    display_name: Mapped[str] = mapped_column(Text)
    architecture: Mapped[str | None] = mapped_column(String(40))
    # The task file's own `architecture` field, where it has one (the diffusion tasks do).
    file_architecture: Mapped[str | None] = mapped_column(String(40))

    def __repr__(self) -> str:
        return f"TaskRow(id={self.id}, name={self.name!r})"


class ModelRow(Base):
    """An AI model (an LLM, in the LLM tasks) of a release, with its manifest entry if any."""

    __tablename__ = "models"
    __table_args__ = (
        UniqueConstraint("release_id", "model_id"),
        UniqueConstraint("release_id", "slug"),
    )

    id: Mapped[intpk]
    release_id: Mapped[release_fk]
    model_id: Mapped[name]
    slug: Mapped[name]
    name: Mapped[str] = mapped_column(Text)
    params_b: Mapped[float]
    active_params_b: Mapped[float]
    architecture: Mapped[text]
    weight_precision: Mapped[text]
    # The upstream index.json entry as published (the manifest may name and size it itself).
    nickname: Mapped[str] = mapped_column(Text)
    total_params_billions: Mapped[float]
    activated_params_billions: Mapped[float]
    index_fields: Mapped[dict[str, Any]] = mapped_column(JSON)
    gpus: Mapped[list[str] | None] = mapped_column(JSON)
    url: Mapped[text]
    page: Mapped[text]
    manifest_position: Mapped[int | None]

    def __repr__(self) -> str:
        return f"ModelRow(id={self.id}, model_id={self.model_id!r})"


class ModelTaskRow(Base):
    """A model measured on a task: the upstream per-model file and its output-length histogram."""

    __tablename__ = "model_tasks"
    __table_args__ = (UniqueConstraint("model_id", "task_id"),)

    id: Mapped[intpk]
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"))
    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"))
    file: Mapped[str] = mapped_column(Text)
    length_bins: Mapped[list[float] | None] = mapped_column(JSON)
    length_counts: Mapped[list[int] | None] = mapped_column(JSON)
    # Top-level fields of the model file other than model_id, task, histogram and rows.
    fields: Mapped[dict[str, Any]] = mapped_column(JSON)

    def __repr__(self) -> str:
        return f"ModelTaskRow(model_id={self.model_id}, task_id={self.task_id})"


class GpuRow(Base):
    """Reference facts about a GPU type; shared by all releases."""

    __tablename__ = "gpus"

    name: Mapped[str] = mapped_column(Text, primary_key=True)
    full_name: Mapped[text]
    architecture: Mapped[text]
    memory_gb: Mapped[float | None]
    tdp_watts: Mapped[float | None]
    source: Mapped[text]
    source_url: Mapped[text]

    def __repr__(self) -> str:
        return f"GpuRow(name={self.name!r})"


class ConfigurationRow(Base):
    """One measured serving configuration: a row of the upstream task file."""

    __tablename__ = "configurations"
    __table_args__ = (
        Index("ix_configurations_release_task_model", "release_id", "task_id", "model_id"),
        Index("ix_configurations_release_gpu", "release_id", "gpu"),
    )

    id: Mapped[intpk]
    release_id: Mapped[release_fk]
    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"))
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"))
    gpu: Mapped[str] = mapped_column(ForeignKey("gpus.name"))
    task_row: Mapped[int]
    model_row: Mapped[int]
    num_gpus: Mapped[int]
    max_num_seqs: Mapped[int]
    tensor_parallel: Mapped[int]
    data_parallel: Mapped[int]
    expert_parallel: Mapped[int]
    parallel_notes: Mapped[str] = mapped_column(Text, default="")
    avg_batch_size: Mapped[float]
    avg_output_len: Mapped[float]
    avg_power_watts: Mapped[float]
    energy_per_request_joules: Mapped[float]
    energy_per_token_joules: Mapped[float]
    median_itl_ms: Mapped[float]
    p90_itl_ms: Mapped[float]
    p95_itl_ms: Mapped[float]
    p99_itl_ms: Mapped[float]
    output_throughput_tokens_per_sec: Mapped[float]
    length_bins: Mapped[json_value]
    length_counts: Mapped[json_value]
    extra: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    def __repr__(self) -> str:
        return f"ConfigurationRow(id={self.id}, gpu={self.gpu!r}, max_num_seqs={self.max_num_seqs})"


class DiffusionConfigurationRow(Base):
    """One measured configuration of a diffusion task (text-to-image or text-to-video)."""

    __tablename__ = "diffusion_configurations"
    __table_args__ = (
        Index(
            "ix_diffusion_configurations_release_task_model", "release_id", "task_id", "model_id"
        ),
    )

    id: Mapped[intpk]
    release_id: Mapped[release_fk]
    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"))
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"))
    gpu: Mapped[str] = mapped_column(ForeignKey("gpus.name"))
    task_row: Mapped[int]
    model_row: Mapped[int]
    # "image" or "video": which upstream names the output columns below stand for.
    output: Mapped[str] = mapped_column(String(10))
    num_gpus: Mapped[int]
    batch_size: Mapped[int]
    inference_steps: Mapped[int]
    ulysses_degree: Mapped[int]
    ring_degree: Mapped[int]
    height: Mapped[int]
    width: Mapped[int]
    fps: Mapped[int | None]
    num_frames: Mapped[int | None]
    avg_power_watts: Mapped[float]
    batch_latency_s: Mapped[float]
    energy_per_output_joules: Mapped[float]
    throughput_outputs_per_sec: Mapped[float]
    extra: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    def __repr__(self) -> str:
        return f"DiffusionConfigurationRow(id={self.id}, gpu={self.gpu!r}, output={self.output!r})"


class OrphanDocumentRow(Base):
    """A per-model file of the snapshot that no task file refers to, kept as published."""

    __tablename__ = "orphan_documents"
    __table_args__ = (UniqueConstraint("release_id", "path"),)

    id: Mapped[intpk]
    release_id: Mapped[release_fk]
    path: Mapped[str] = mapped_column(Text)
    document: Mapped[dict[str, Any]] = mapped_column(JSON)

    def __repr__(self) -> str:
        return f"OrphanDocumentRow(release_id={self.release_id}, path={self.path!r})"
