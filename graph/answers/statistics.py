"""Root fields for statistics: fitted curves, distributions, facets, aggregates."""

from __future__ import annotations

import strawberry


@strawberry.type
class StatisticsQuery:
    """Mixed into the root Query."""
