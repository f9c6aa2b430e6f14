"""The SQLAlchemy tables: one release of the upstream data, its provenance, its files and its
measurements. Every table is here by name; db.migrations builds them.

May import sqlalchemy and db.fields only (no other module of LeadGreen's): the configurations'
columns are made from the declaration of their fields.
"""

from db.tables.base import Base, metadata
from db.tables.measurements import (
    ConfigurationRow,
    DiffusionConfigurationRow,
    GpuRow,
    ModelRow,
    ModelTaskRow,
    TaskRow,
)
from db.tables.releases import (
    BlobRow,
    CatalogRow,
    ReleaseChangesRow,
    ReleaseFileRow,
    ReleaseRow,
    SourceRow,
)

__all__ = [
    "Base",
    "BlobRow",
    "CatalogRow",
    "ConfigurationRow",
    "DiffusionConfigurationRow",
    "GpuRow",
    "ModelRow",
    "ModelTaskRow",
    "ReleaseChangesRow",
    "ReleaseFileRow",
    "ReleaseRow",
    "SourceRow",
    "TaskRow",
    "metadata",
]
