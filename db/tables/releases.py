"""A release's tables: the release and its provenance, its files as published (blobs stored
once), and what changed between releases."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    LargeBinary,
    String,
    Text,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column

from db.tables.base import Base, intpk, text


class ReleaseRow(Base):
    """One ingested snapshot of the upstream data, with what is known of where it came from."""

    __tablename__ = "releases"

    id: Mapped[intpk]
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    # The files' digest alone (`digest` also covers the manifest).
    data_digest: Mapped[str] = mapped_column(String(64), index=True)
    # The files' content, whatever its formatting and row order (db.snapshot.content_digest).
    content_digest: Mapped[str | None] = mapped_column(String(64), index=True)
    location: Mapped[str] = mapped_column(Text)
    upstream_commit: Mapped[str | None] = mapped_column(String(40))
    # The upstream commit's date (ISO 8601) and subject, when the files came from one.
    commit_date: Mapped[text]
    commit_subject: Mapped[text]
    # Where the files can be read (an http(s) base URL at the commit, where known).
    source_url: Mapped[text]
    last_updated: Mapped[str] = mapped_column(Text)
    ingested_at: Mapped[datetime]
    # When LeadGreen retrieved the files (YYYY-MM-DD): the manifest's date when it applies.
    retrieved: Mapped[text]
    manifest_version: Mapped[text]
    manifest_updated: Mapped[text]
    manifest_data_version: Mapped[text]
    # Whether the manifest's statements describe this release's data (checked at ingest).
    manifest_applies: Mapped[bool] = mapped_column(Boolean, server_default=false())
    # The release whose data this one's equals (its files differ only in formatting).
    same_data_as: Mapped[int | None]
    # Whether the release's files are kept (releases ingested before they were are not).
    files_kept: Mapped[bool] = mapped_column(Boolean, server_default=false())
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


class BlobRow(Base):
    """A file's bytes as published, stored once whatever the releases that hold it."""

    __tablename__ = "blobs"

    # The file's SHA-256 and size as published; `data` is the file's bytes as `encoding` says
    # (db.files): "lz4" (an LZ4 frame), or null for the bytes as they are (blobs stored before
    # 0.2, and any reader's fallback).
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int]
    data: Mapped[bytes] = mapped_column(LargeBinary)
    encoding: Mapped[str | None] = mapped_column(String(16))

    def __repr__(self) -> str:
        return f"BlobRow(sha256={self.sha256[:12]!r}, size={self.size})"


class ReleaseFileRow(Base):
    """A file of a release, by its path in the upstream layout, and its bytes' digest."""

    __tablename__ = "release_files"

    release_id: Mapped[int] = mapped_column(
        ForeignKey("releases.id", ondelete="CASCADE"), primary_key=True
    )
    path: Mapped[str] = mapped_column(Text, primary_key=True)
    sha256: Mapped[str] = mapped_column(ForeignKey("blobs.sha256"), index=True)
    size: Mapped[int]

    def __repr__(self) -> str:
        return f"ReleaseFileRow(release_id={self.release_id}, path={self.path!r})"


class ReleaseChangesRow(Base):
    """What changed from one release to another, summarised (computed at ingest)."""

    __tablename__ = "release_changes"

    from_release: Mapped[int] = mapped_column(
        ForeignKey("releases.id", ondelete="CASCADE"), primary_key=True
    )
    to_release: Mapped[int] = mapped_column(
        ForeignKey("releases.id", ondelete="CASCADE"), primary_key=True
    )
    summary: Mapped[dict[str, Any]] = mapped_column(JSON)

    def __repr__(self) -> str:
        return f"ReleaseChangesRow({self.from_release} -> {self.to_release})"


class CatalogRow(Base):
    """A release's configurations as the API holds them in memory (db.catalog), written by
    the ingest's transaction and read whole when a server loads the release: one read of one
    value instead of every configuration's row. `format` names the layout of `data` (an LZ4
    frame of JSON); a release without it, or with another format, is read row by row."""

    __tablename__ = "catalogs"

    release_id: Mapped[int] = mapped_column(
        ForeignKey("releases.id", ondelete="CASCADE"), primary_key=True
    )
    format: Mapped[int]
    data: Mapped[bytes] = mapped_column(LargeBinary)

    def __repr__(self) -> str:
        return f"CatalogRow(release_id={self.release_id}, format={self.format})"
