"""initial tables

Revision ID: 0001
Revises:
Create Date: 2026-11-29 17:17:28.434101
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "gpus",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("full_name", sa.Text(), nullable=True),
        sa.Column("architecture", sa.Text(), nullable=True),
        sa.Column("memory_gb", sa.Double(), nullable=True),
        sa.Column("tdp_watts", sa.Double(), nullable=True),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("source_url", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_gpus")),
    )
    op.create_table(
        "releases",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("data_digest", sa.String(length=64), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("upstream_commit", sa.String(length=40), nullable=True),
        sa.Column("last_updated", sa.Text(), nullable=False),
        sa.Column("ingested_at", sa.DateTime(), nullable=False),
        sa.Column("manifest_version", sa.Text(), nullable=True),
        sa.Column("manifest_updated", sa.Text(), nullable=True),
        sa.Column("manifest_data_version", sa.Text(), nullable=True),
        sa.Column("index_tasks", sa.JSON(), nullable=False),
        sa.Column("index_architectures", sa.JSON(), nullable=False),
        sa.Column("index_fields", sa.JSON(), nullable=False),
        sa.Column("checks", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_releases")),
        sa.UniqueConstraint("digest", name=op.f("uq_releases_digest")),
    )
    with op.batch_alter_table("releases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_releases_data_digest"), ["data_digest"], unique=False)

    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("release_id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Text(), nullable=False),
        sa.Column("slug", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("params_b", sa.Double(), nullable=False),
        sa.Column("active_params_b", sa.Double(), nullable=False),
        sa.Column("architecture", sa.Text(), nullable=True),
        sa.Column("weight_precision", sa.Text(), nullable=True),
        sa.Column("nickname", sa.Text(), nullable=False),
        sa.Column("total_params_billions", sa.Double(), nullable=False),
        sa.Column("activated_params_billions", sa.Double(), nullable=False),
        sa.Column("index_fields", sa.JSON(), nullable=False),
        sa.Column("gpus", sa.JSON(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("page", sa.Text(), nullable=True),
        sa.Column("manifest_position", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
            name=op.f("fk_models_release_id_releases"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_models")),
        sa.UniqueConstraint("release_id", "model_id", name=op.f("uq_models_release_id_model_id")),
        sa.UniqueConstraint("release_id", "slug", name=op.f("uq_models_release_id_slug")),
    )
    op.create_table(
        "orphan_documents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("release_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
            name=op.f("fk_orphan_documents_release_id_releases"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_orphan_documents")),
        sa.UniqueConstraint("release_id", "path", name=op.f("uq_orphan_documents_release_id_path")),
    )
    op.create_table(
        "sources",
        sa.Column("release_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("publisher", sa.Text(), nullable=True),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("data_url", sa.Text(), nullable=True),
        sa.Column("version", sa.Text(), nullable=True),
        sa.Column("released", sa.Text(), nullable=True),
        sa.Column("compiled", sa.Text(), nullable=True),
        sa.Column("compiled_evidence", sa.Text(), nullable=True),
        sa.Column("retrieved", sa.Text(), nullable=True),
        sa.Column("licence", sa.Text(), nullable=True),
        sa.Column("licence_evidence", sa.JSON(), nullable=True),
        sa.Column("workload", sa.Text(), nullable=True),
        sa.Column("method", sa.Text(), nullable=True),
        sa.Column("selection", sa.Text(), nullable=True),
        sa.Column("cite", sa.Text(), nullable=True),
        sa.Column("cite_url", sa.Text(), nullable=True),
        sa.Column("used_for", sa.Text(), nullable=True),
        sa.Column("configurations", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
            name=op.f("fk_sources_release_id_releases"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("release_id", name=op.f("pk_sources")),
    )
    op.create_table(
        "tasks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("release_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("display_name", sa.Text(), nullable=False),
        sa.Column("architecture", sa.String(length=40), nullable=True),
        sa.Column("file_architecture", sa.String(length=40), nullable=True),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
            name=op.f("fk_tasks_release_id_releases"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tasks")),
        sa.UniqueConstraint("release_id", "name", name=op.f("uq_tasks_release_id_name")),
    )
    op.create_table(
        "configurations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("release_id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("gpu", sa.Text(), nullable=False),
        sa.Column("task_row", sa.Integer(), nullable=False),
        sa.Column("model_row", sa.Integer(), nullable=False),
        sa.Column("num_gpus", sa.Integer(), nullable=False),
        sa.Column("max_num_seqs", sa.Integer(), nullable=False),
        sa.Column("tensor_parallel", sa.Integer(), nullable=False),
        sa.Column("data_parallel", sa.Integer(), nullable=False),
        sa.Column("expert_parallel", sa.Integer(), nullable=False),
        sa.Column("parallel_notes", sa.Text(), nullable=False),
        sa.Column("avg_batch_size", sa.Double(), nullable=False),
        sa.Column("avg_output_len", sa.Double(), nullable=False),
        sa.Column("avg_power_watts", sa.Double(), nullable=False),
        sa.Column("energy_per_request_joules", sa.Double(), nullable=False),
        sa.Column("energy_per_token_joules", sa.Double(), nullable=False),
        sa.Column("median_itl_ms", sa.Double(), nullable=False),
        sa.Column("p90_itl_ms", sa.Double(), nullable=False),
        sa.Column("p95_itl_ms", sa.Double(), nullable=False),
        sa.Column("p99_itl_ms", sa.Double(), nullable=False),
        sa.Column("output_throughput_tokens_per_sec", sa.Double(), nullable=False),
        sa.Column("length_bins", sa.JSON(), nullable=False),
        sa.Column("length_counts", sa.JSON(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["gpu"], ["gpus.name"], name=op.f("fk_configurations_gpu_gpus")),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_configurations_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
            name=op.f("fk_configurations_release_id_releases"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.id"],
            name=op.f("fk_configurations_task_id_tasks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_configurations")),
    )
    with op.batch_alter_table("configurations", schema=None) as batch_op:
        batch_op.create_index("ix_configurations_release_gpu", ["release_id", "gpu"], unique=False)
        batch_op.create_index(
            "ix_configurations_release_task_model",
            ["release_id", "task_id", "model_id"],
            unique=False,
        )

    op.create_table(
        "diffusion_configurations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("release_id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("gpu", sa.Text(), nullable=False),
        sa.Column("task_row", sa.Integer(), nullable=False),
        sa.Column("model_row", sa.Integer(), nullable=False),
        sa.Column("output", sa.String(length=10), nullable=False),
        sa.Column("num_gpus", sa.Integer(), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("inference_steps", sa.Integer(), nullable=False),
        sa.Column("ulysses_degree", sa.Integer(), nullable=False),
        sa.Column("ring_degree", sa.Integer(), nullable=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("width", sa.Integer(), nullable=False),
        sa.Column("fps", sa.Integer(), nullable=True),
        sa.Column("num_frames", sa.Integer(), nullable=True),
        sa.Column("avg_power_watts", sa.Double(), nullable=False),
        sa.Column("batch_latency_s", sa.Double(), nullable=False),
        sa.Column("energy_per_output_joules", sa.Double(), nullable=False),
        sa.Column("throughput_outputs_per_sec", sa.Double(), nullable=False),
        sa.Column("extra", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["gpu"], ["gpus.name"], name=op.f("fk_diffusion_configurations_gpu_gpus")
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_diffusion_configurations_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
            name=op.f("fk_diffusion_configurations_release_id_releases"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.id"],
            name=op.f("fk_diffusion_configurations_task_id_tasks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_diffusion_configurations")),
    )
    with op.batch_alter_table("diffusion_configurations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_diffusion_configurations_release_task_model",
            ["release_id", "task_id", "model_id"],
            unique=False,
        )

    op.create_table(
        "model_tasks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("file", sa.Text(), nullable=False),
        sa.Column("length_bins", sa.JSON(), nullable=True),
        sa.Column("length_counts", sa.JSON(), nullable=True),
        sa.Column("fields", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_model_tasks_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name=op.f("fk_model_tasks_task_id_tasks"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_tasks")),
        sa.UniqueConstraint("model_id", "task_id", name=op.f("uq_model_tasks_model_id_task_id")),
    )


def downgrade() -> None:
    op.drop_table("model_tasks")
    with op.batch_alter_table("diffusion_configurations", schema=None) as batch_op:
        batch_op.drop_index("ix_diffusion_configurations_release_task_model")

    op.drop_table("diffusion_configurations")
    with op.batch_alter_table("configurations", schema=None) as batch_op:
        batch_op.drop_index("ix_configurations_release_task_model")
        batch_op.drop_index("ix_configurations_release_gpu")

    op.drop_table("configurations")
    op.drop_table("tasks")
    op.drop_table("sources")
    op.drop_table("orphan_documents")
    op.drop_table("models")
    with op.batch_alter_table("releases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_releases_data_digest"))

    op.drop_table("releases")
    op.drop_table("gpus")
