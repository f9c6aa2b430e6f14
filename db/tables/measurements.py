"""A release's measurements: tasks, models, their per-model files, GPU types and the
configurations of each kind of task."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    Double,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from db import fields
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
    """One measured serving configuration: a row of the upstream task file (its fields'
    columns are added below, from db.fields)."""

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
    length_bins: Mapped[json_value]
    length_counts: Mapped[json_value]
    extra: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    def __repr__(self) -> str:
        return f"ConfigurationRow(id={self.id}, key={self.key!r})"


class DiffusionConfigurationRow(Base):
    """One measured configuration of a diffusion task (text-to-image or text-to-video); its
    fields' columns are added below, from db.fields."""

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
    # "image" or "video": which upstream names its fields stand for (db.fields).
    output: Mapped[str] = mapped_column(String(10))
    extra: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    def __repr__(self) -> str:
        return f"DiffusionConfigurationRow(id={self.id}, key={self.key!r})"


def _add_columns(table: type[Base], rows: tuple[str, ...]) -> None:
    """A column for each field of these variants' rows (db.fields), as its type says: NULL
    where some rows have none."""
    for f in fields.of(rows):
        setattr(table, f.name, mapped_column(_TYPES[f.python], nullable=f.nullable))


_TYPES = {int: Integer, float: Double, str: Text}
_add_columns(ConfigurationRow, fields.LLM_ROWS)
_add_columns(DiffusionConfigurationRow, fields.DIFFUSION_ROWS)
