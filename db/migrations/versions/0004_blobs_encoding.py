"""blobs say how their bytes are encoded

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 16:49:08.207514

A file's bytes are stored as an LZ4 frame from now on (`encoding` "lz4", db.files): at fifty
times today's data the files' 205 MB are 39 MB so, which SQLite writes twice (its WAL, then the
database) and PostgreSQL receives by COPY. Blobs stored before keep their bytes as they are
(`encoding` null), and are read as they always were. SQLite adds the column in place.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("blobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("encoding", sa.String(length=16), nullable=True))


def downgrade() -> None:
    # Bytes stored as LZ4 frames would be read as they are without the column: a downgrade
    # would lose the files, so it refuses while there are any.
    bind = op.get_bind()
    encoded = bind.execute(sa.text("SELECT count(*) FROM blobs WHERE encoding IS NOT NULL"))
    if encoded.scalar():
        raise RuntimeError("blobs are stored as LZ4 frames: ingest again after downgrading")
    with op.batch_alter_table("blobs", schema=None) as batch_op:
        batch_op.drop_column("encoding")
