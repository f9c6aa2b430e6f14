"""The GPU type: reference facts served next to the measurements."""

from __future__ import annotations

import strawberry

from db.catalog import Catalog
from db.tables import GpuRow
from graph.schema.types.node import Node, entity_keys, global_id


@strawberry.type(
    directives=entity_keys("id", "name"),
    description="A GPU type the leaderboard measured on, with reference facts and "
    "the source they come from. Facts are null for a GPU the reference table does "
    "not know.",
)
class Gpu(Node):
    name: str = strawberry.field(
        description="GPU name as the upstream data writes it (`gpu_model`)."
    )
    full_name: str | None = strawberry.field(description="Full product name and form factor.")
    architecture: str | None = strawberry.field(description="NVIDIA GPU architecture.")
    memory_gb: float | None = strawberry.field(description="Memory per GPU, in gigabytes.")
    tdp_watts: float | None = strawberry.field(
        description="Thermal design power (maximum board power) per GPU, in watts."
    )
    source: str | None = strawberry.field(description="Where these facts come from.")
    source_url: str | None = strawberry.field(description="Link to the source of these facts.")

    @classmethod
    def from_row(cls, row: GpuRow) -> Gpu:
        return cls(
            id=global_id("Gpu", row.name),
            name=row.name,
            full_name=row.full_name,
            architecture=row.architecture,
            memory_gb=row.memory_gb,
            tdp_watts=row.tdp_watts,
            source=row.source,
            source_url=row.source_url,
        )

    @classmethod
    def of(cls, catalog: Catalog, name: str) -> Gpu:
        """The GPU type of this name, as the catalog knows it (one object per release)."""

        def make() -> Gpu:
            row = catalog.gpu_by_name.get(name)
            return cls.from_row(row) if row else cls.unknown(name)

        return catalog.once((cls, name), make)

    @classmethod
    def unknown(cls, name: str) -> Gpu:
        """A GPU the reference table does not know: its name only."""
        return cls(
            id=global_id("Gpu", name),
            name=name,
            full_name=None,
            architecture=None,
            memory_gb=None,
            tdp_watts=None,
            source=None,
            source_url=None,
        )
