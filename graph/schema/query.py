"""The root Query type: the fields of every area (graph/schema/roots), in one type."""

from __future__ import annotations

import strawberry

from graph.schema.roots.catalog import CatalogFields
from graph.schema.roots.history import HistoryFields
from graph.schema.roots.impact import ImpactFields
from graph.schema.roots.plan import PlanFields
from graph.schema.roots.ranking import RankingFields
from graph.schema.roots.statistics import StatisticsFields


@strawberry.type(
    description="Measured energy of LLM inference (ML.ENERGY Leaderboard v3.0), "
    "with its provenance. Answers come from the release with the newest data unless a "
    "field's `release` argument names another."
)
class Query(
    RankingFields, PlanFields, ImpactFields, StatisticsFields, CatalogFields, HistoryFields
):
    pass
