"""The Source type (the dataset's provenance and licence evidence), and the v1 index."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

from db.catalog import Catalog
from db.tables import ReleaseRow, SourceRow
from graph.schema.types.release import Release

if TYPE_CHECKING:
    from graph.schema.types.model import Model


@strawberry.type(
    description="Provenance of the dataset: the `source` object of the LeadGreen v1 "
    "index, served unchanged for the release the index describes (checked at ingest: "
    "`release.describedByManifest`), with the licence and the evidence for it. For any other "
    "release only what its own files say: name, home page, data URL at its commit, its data "
    "date as `compiled` and when it was retrieved; the other fields are null."
)
class Source:
    name: str | None = strawberry.field(description="Name of the dataset.")
    publisher: str | None = strawberry.field(description="Who publishes the dataset.")
    url: str | None = strawberry.field(description="Home page of the dataset.")
    data_url: str | None = strawberry.field(description="URL of the published data file.")
    version: str | None = strawberry.field(description="Dataset version and dates, as stated.")
    released: str | None = strawberry.field(description="Release date of the version (YYYY-MM-DD).")
    compiled: str | None = strawberry.field(description="Date the data was compiled (YYYY-MM-DD).")
    compiled_evidence: str | None = strawberry.field(
        description="What the compilation date rests on."
    )
    retrieved: str | None = strawberry.field(
        description="Date LeadGreen retrieved the data (YYYY-MM-DD)."
    )
    licence: str | None = strawberry.field(description="Licence of the data, as determined.")
    licence_evidence: list[str] | None = strawberry.field(
        description="The evidence for the licence, one statement each."
    )
    workload: str | None = strawberry.field(description="The measured workload.")
    method: str | None = strawberry.field(
        description="How the figures were measured, and which are derived."
    )
    selection: str | None = strawberry.field(
        description="The rule that selects the v1 index rows from the configurations."
    )
    cite: str | None = strawberry.field(description="How to cite the data.")
    cite_url: str | None = strawberry.field(description="Link to the work to cite.")
    used_for: str | None = strawberry.field(description="What LeadGreen uses the data for.")
    configurations: str | None = strawberry.field(
        description="Statement of how many configurations the data holds and which runs they are."
    )
    release: Release = strawberry.field(description="The ingested snapshot this source describes.")

    @classmethod
    def from_rows(cls, row: SourceRow, release: ReleaseRow) -> Source:
        return cls(
            name=row.name,
            publisher=row.publisher,
            url=row.url,
            data_url=row.data_url,
            version=row.version,
            released=row.released,
            compiled=row.compiled,
            compiled_evidence=row.compiled_evidence,
            retrieved=row.retrieved,
            licence=row.licence,
            licence_evidence=row.licence_evidence,
            workload=row.workload,
            method=row.method,
            selection=row.selection,
            cite=row.cite,
            cite_url=row.cite_url,
            used_for=row.used_for,
            configurations=row.configurations,
            release=Release.from_row(release),
        )

    @classmethod
    def of(cls, catalog: Catalog) -> Source:
        """The release's source (one object per release)."""
        assert catalog.source is not None, "every release is ingested with its source"
        source = catalog.source
        return catalog.once((cls,), lambda: cls.from_rows(source, catalog.release))


@strawberry.type(
    description="The LeadGreen v1 index, rebuilt from the database: the manifest's "
    "top-level fields, the source and the models it lists, in its order."
)
class LeadGreenIndex:
    version: str | None = strawberry.field(description="Index format version (`version`).")
    updated: str | None = strawberry.field(description="Date the index was updated (YYYY-MM-DD).")
    data_version: str | None = strawberry.field(description="Version of the index's data.")
    source: Source = strawberry.field(description="Provenance of the dataset.")
    models: list[Annotated[Model, strawberry.lazy("graph.schema.types.model")]] = strawberry.field(
        description="The models the index lists, in the index's order."
    )
