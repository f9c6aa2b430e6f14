"""A release's measurements: tasks, models, their per-model files, GPU types and the
configurations of each kind of task."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from db.tables.base import Base, intpk, json_value, name, release_fk, text


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
    # What identifies the configuration in every release (db.keys): stable across releases.
    key: Mapped[str] = mapped_column(Text, index=True)
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
    # Absent from the files before 2025-12-17.
    avg_output_len: Mapped[float | None]
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
    key: Mapped[str] = mapped_column(Text, index=True)
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
