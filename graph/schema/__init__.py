"""The GraphQL schema: LeadGreen's types and root fields, over the engine.

Where things go: a root field in `roots/<area>.py` (it reads its arguments and calls one
function of `answers/<area>.py`), the answer's computation in `answers/`, output types in
`types/` (one module per family), input types, argument enums and shared argument declarations
in `inputs.py`. May import graph.engine, graph.settings, graph.errors, graph.caches, db and
analysis; never graph.server.
"""

from __future__ import annotations

from functools import lru_cache

import strawberry
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.name_converter import NameConverter

from graph.caches import Budget
from graph.engine.internals import CompiledQueries
from graph.engine.limits import QueryLimits
from graph.engine.masking import CodedErrors
from graph.engine.prepared import Documents
from graph.schema.costs import LIST_SIZES
from graph.schema.query import Query
from graph.schema.types.diffusion import ImageConfiguration, VideoConfiguration
from graph.settings import Settings


class _Names(NameConverter):
    """strawberry's names, each converted once (strawberry converts every argument's name on
    every call of a resolver)."""

    @lru_cache(maxsize=4096)  # noqa: B019 - one converter per schema, kept as long
    def apply_naming_config(self, name: str) -> str:
        return super().apply_naming_config(name)


def build_schema(settings: Settings | None = None) -> strawberry.Schema:
    """The schema, with LeadGreen's limits, error masking and execution; the documents it runs
    are kept within the settings' cache budget."""
    budget = Budget((settings or Settings.model_construct()).cache_max_bytes)
    return strawberry.Schema(
        query=Query,
        types=[ImageConfiguration, VideoConfiguration],
        # QueryLimits parses and validates each document once, within the request's limits.
        extensions=[CodedErrors, QueryLimits.of(LIST_SIZES, Documents(budget.documents))],
        execution_context_class=CompiledQueries,
        config=StrawberryConfig(name_converter=_Names()),
    )
