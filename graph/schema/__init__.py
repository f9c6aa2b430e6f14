"""The GraphQL schema: LeadGreen's types and root fields, executed by the engine.

Where things go: a root field in `query.py` (it reads its arguments and calls one
function of `answers/<area>.py`), the answer's computation in `answers/`, output types in
`types/` (one module per family), input types, argument enums and shared argument declarations
in `inputs.py`. May import graph.engine, graph.internals, graph.settings, graph.errors,
graph.caches, db and analysis; never graph.server.
"""

from __future__ import annotations

from strawberry.schema.config import StrawberryConfig

from graph import internals
from graph.caches import Bounded, Budget
from graph.engine.execution import Schema
from graph.engine.prepared import Documents
from graph.schema.costs import LIST_SIZES
from graph.schema.federation import Subgraph
from graph.schema.query import Query
from graph.schema.subscription import Subscription
from graph.schema.types.model import ImageConfiguration, VideoConfiguration
from graph.settings import Settings

# The schema's names as strawberry converts them: a few hundred short strings.
NAMES_BYTES = 256 * 1024


def build_schema(settings: Settings | None = None) -> Schema:
    """The schema, with LeadGreen's limits, error masking and execution, as a Federation 2
    subgraph (graph/schema/federation.py); the documents it runs are kept within the settings'
    cache budget."""
    settings = settings or Settings.model_construct()
    budget = Budget(settings.cache_max_bytes)
    names: Bounded[str, str] = Bounded(NAMES_BYTES, lambda name: 100 + 2 * len(name))
    return Subgraph(
        Query,
        subscription=Subscription,
        types=[ImageConfiguration, VideoConfiguration],
        config=StrawberryConfig(name_converter=internals.CachedNames(names)),
        sizes=LIST_SIZES,
        documents=Documents(budget.documents),
        page_size=settings.default_page_size,
    )
