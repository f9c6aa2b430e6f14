"""Root fields for rankings: the leaderboard, Pareto frontiers, comparisons."""

from __future__ import annotations

import strawberry


@strawberry.type
class RankingQuery:
    """Mixed into the root Query."""
