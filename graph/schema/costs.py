"""The size the cost estimate gives each list field of the schema (see graph/engine/cost.py).

A field missing here costs DEFAULT_LIST_SIZE (50) elements. Connections' `nodes` and `edges` are
sized by their page size, not here.
"""

from __future__ import annotations

from graph.engine.cost import Arguments, Size, fixed, length_of, per_task, tasks_of_changes

# The types with a configuration's `history`.
HISTORIES = (
    "ServingConfiguration",
    "Configuration",
    "DiffusionConfiguration",
    "ImageConfiguration",
    "VideoConfiguration",
)


def plans_asked(_args: Arguments, parent: Arguments) -> int:
    """The deployment plans asked for: `deploymentPlan(first:)`, 10 when not given or null."""
    first = parent.get("first")
    return first if isinstance(first, int) and first >= 0 else 10


# The largest list in the 2026-02-16 data (46 models, 7 tasks, 2 GPU types) is in the comment.
LIST_SIZES: dict[str, Size] = {
    "Query.models": fixed(50),  # 46
    "LeadGreenIndex.models": fixed(50),  # 18
    "Query.gpus": fixed(4),  # 2
    "Query.tasks": fixed(8),  # 7
    "Query.facets": fixed(8),  # 7, one per task
    "Query.releases": fixed(16),  # one per ingest of new data: 2 so far
    "Release.identityChecks": fixed(8),  # 5
    "Model.tasks": fixed(8),  # 2, at most one per task
    "Model.configurations": per_task(32, 64),  # 31 on lm-arena-chat, 62 on every task
    "Model.diffusionConfigurations": fixed(128),  # 105 on both tasks
    "Model.curves": per_task(4, 10),  # 3 on lm-arena-chat, 8 on every task
    "Model.power": fixed(4),  # 2, one per GPU type
    "CurveSeries.points": fixed(16),  # 15
    "Leaderboard.entries": fixed(50),  # 18, at most one per model
    "DiffusionLeaderboard.entries": fixed(50),  # 7
    "Query.paretoFrontier": fixed(50),  # 18, one per model
    "Query.diffusionParetoFrontier": fixed(50),  # 7
    "ParetoFrontier.configurations": fixed(32),  # 16, within one model's on one task
    "DiffusionParetoFrontier.configurations": fixed(16),  # 8
    "Query.compareModels": length_of("models"),
    "Query.compareGpus": fixed(50),  # 18, one per model
    # At most `first` (up to the largest page): 382 plans on text-to-video, the largest task.
    "DeploymentPlans.plans": plans_asked,
    "DeploymentPlans.excluded": fixed(2),  # one per limit: latency and throughput
    "DeploymentPlan.unavailable": fixed(8),  # 7 figures can be null: 4 costs, 3 estimates
    "RequestImpact.excluded": fixed(1),  # the latency limit
    "RequestImpact.unavailable": fixed(1),  # carbon
    "GridZones.zones": fixed(256),  # 215 in ecologits 0.11.3
    "Query.fittedCurves": fixed(128),  # 114
    "FittedMetric.measured": fixed(16),  # 14
    "FittedMetric.estimates": length_of("batchSizes"),
    "TaskFacets.metrics": fixed(16),  # 11
    "ConfigurationAggregate.metrics": fixed(16),  # 11
    "ReleaseChanges.tasks": tasks_of_changes,  # 7, or the one `changes(task:)` names
    "ReleaseChanges.modelsChanged": fixed(50),  # one per model
    "ReleaseChanges.modelFilesChanged": fixed(64),  # 62 model files
    "TaskChanges.added": fixed(640),  # the largest task has 638 rows
    "TaskChanges.removed": fixed(640),
    "TaskChanges.changed": fixed(640),  # 328 from 2025-12-17 to 2026-02-16
    "ConfigurationChange.fields": fixed(4),  # 2
    "DocumentChange.fields": fixed(4),  # 2
    # Across releases: one entry per release (9 upstream commits touch the data since launch).
    "Query.timeline": fixed(16),
    "Query.nodes": length_of("ids"),
    **{f"{t}.history": fixed(16) for t in HISTORIES},
    "ConfigurationVersion.changed": fixed(8),
    "Release.files": fixed(128),  # 71
    "ReleaseSummary.tasks": fixed(8),  # 7
    "TaskSummary.fieldChanges": fixed(16),
}
