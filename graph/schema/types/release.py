"""The Release type: one ingested snapshot of the upstream data, with its provenance and files."""

from __future__ import annotations

from datetime import datetime

import strawberry

from db import reads
from db.tables import ReleaseRow
from graph.schema.context import Context
from graph.schema.types.node import Node, entity_keys, global_id

Info = strawberry.Info[Context, None]


def release_key(row: ReleaseRow) -> str:
    """A release's identity in every database: the digest of its files and of the manifest
    that describes them (when one does)."""
    return row.digest[:20]


@strawberry.type(description="An identity of the data that some rows of a file break.")
class IdentityCheck:
    identity: str = strawberry.field(description="Short name of the identity.")
    statement: str = strawberry.field(description="The identity, in upstream field names.")
    file: str = strawberry.field(description="The task file checked.")
    rows: list[int] = strawberry.field(description="Rows (from 0) that break it.")
    checked: int = strawberry.field(description="Rows checked.")
    max_relative_difference: float = strawberry.field(
        description="Largest |left - right| / max(|left|, |right|) among the rows that break it."
    )
    note: str = strawberry.field(description="What is known about why, if anything.")


@strawberry.type(description="A file of a release, as it was published.")
class ReleaseFile:
    path: str = strawberry.field(
        description="Path in the upstream layout, e.g. `tasks/lm-arena-chat.json`; the file is "
        "served byte for byte at `/data/{path}?release={number}`."
    )
    bytes: int = strawberry.field(description="Size of the file, in bytes.")
    sha256: str = strawberry.field(description="SHA-256 of the file's bytes, in hex.")


@strawberry.type(
    directives=entity_keys("id"),
    description="One ingested snapshot of the upstream data, with its provenance.",
)
class Release(Node):
    number: int = strawberry.field(
        description="Release number in this database, in the order releases were ingested: what "
        "the `release` arguments take."
    )
    last_updated: str = strawberry.field(
        description="Date of the data, from the upstream index.json `last_updated` (YYYY-MM-DD)."
    )
    upstream_commit: str | None = strawberry.field(
        description="Upstream repository commit the files were read at, where known."
    )
    commit_date: str | None = strawberry.field(
        description="When that commit was made (ISO 8601, with its offset), where known."
    )
    commit_subject: str | None = strawberry.field(
        description="The first line of that commit's message, where known."
    )
    source_url: str | None = strawberry.field(
        description="Where the release's files can be read: the upstream repository's files "
        "at the commit, where known; else where they were read from."
    )
    location: str = strawberry.field(
        description="Where the files were read from: an http(s) base URL, a directory name, or "
        "a repository and commit."
    )
    digest: str = strawberry.field(
        description="SHA-256 over the files and the manifest that describes them (if one does)."
    )
    data_digest: str = strawberry.field(
        description="SHA-256 over the files' paths and bytes: equal digests, equal files."
    )
    ingested_at: datetime = strawberry.field(description="When it was ingested (UTC).")
    retrieved: str | None = strawberry.field(
        description="When LeadGreen retrieved the files (YYYY-MM-DD): the manifest's date where "
        "the manifest describes this data, else the day of the ingest."
    )
    described_by_manifest: bool = strawberry.field(
        description="Whether the LeadGreen manifest's statements (compiled date and evidence, "
        "retrieved, configuration count, version) were checked to describe this release's data: "
        "`source` and `index` carry them only then."
    )
    same_data_as: int | None = strawberry.field(
        description="The number of an earlier release whose data this one's equals: the files "
        "differ only in how they are written (formatting, key or row order). Null otherwise."
    )
    identity_checks: list[IdentityCheck] = strawberry.field(
        description="Identities of the data that some rows break (energy per request = energy "
        "per token × average output length; average power ÷ throughput = energy per token), "
        "checked at ingest; empty when every row keeps them (to a relative 1e-9)."
    )

    @classmethod
    def from_row(cls, row: ReleaseRow) -> Release:
        return cls(
            id=global_id("Release", release_key(row)),
            number=row.id,
            identity_checks=[IdentityCheck(**check) for check in row.checks],
            last_updated=row.last_updated,
            upstream_commit=row.upstream_commit,
            commit_date=row.commit_date,
            commit_subject=row.commit_subject,
            source_url=row.source_url,
            location=row.location,
            digest=row.digest,
            data_digest=row.data_digest,
            ingested_at=row.ingested_at,
            retrieved=row.retrieved,
            described_by_manifest=row.manifest_applies,
            same_data_as=row.same_data_as,
        )

    @strawberry.field(
        description="The release's files, as published, by path; empty for a release ingested "
        "before LeadGreen kept files."
    )
    async def files(self, info: Info) -> list[ReleaseFile]:
        rows = await info.context.read(reads.release_files, release_id=self.number)
        return [ReleaseFile(path=r.path, bytes=r.size, sha256=r.sha256) for r in rows]
