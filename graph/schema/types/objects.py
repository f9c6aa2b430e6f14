"""A configuration row's GraphQL object, by the kind of its task: one entry per kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from db.catalog import Catalog
from db.kinds import DIFFUSION, LLM, Kind
from graph.schema.types.configuration import Configuration
from graph.schema.types.diffusion import diffusion_of

_MAKERS: dict[Kind, Callable[[Catalog, Any], Any]] = {
    LLM: Configuration.of,
    DIFFUSION: diffusion_of,
}


def configuration(catalog: Catalog, kind: Kind, row: Any) -> Any:
    """The object of this row (one per release and row)."""
    return _MAKERS[kind](catalog, row)
