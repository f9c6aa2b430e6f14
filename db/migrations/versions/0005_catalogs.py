"""a release's catalog stored whole

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 03:53:27.891222

A release's configurations as the API holds them (db.catalog), written by the ingest's
transaction: a server then reads one value (an LZ4 frame of JSON, 2-3 MB at fifty times today's
data) instead of every configuration's row, and is ready sooner. Releases ingested before have
none and are read row by row, as before. On PostgreSQL the value is stored as it is (it is
compressed already: no second compression by TOAST).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "catalogs",
        sa.Column("release_id", sa.Integer(), nullable=False),
        sa.Column("format", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["release_id"],
            ["releases.id"],
            name=op.f("fk_catalogs_release_id_releases"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("release_id", name=op.f("pk_catalogs")),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE catalogs ALTER COLUMN data SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.drop_table("catalogs")
