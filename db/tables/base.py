"""What every table shares: the metadata (with its naming convention), the base class and the
column types used throughout."""

from __future__ import annotations

from typing import Annotated, Any

from sqlalchemy import JSON, ForeignKey, MetaData, Text
from sqlalchemy.orm import DeclarativeBase, mapped_column

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
