"""The size the cost estimate gives each list field of the schema (see graph/engine/cost.py).

A field missing here costs DEFAULT_LIST_SIZE (50) elements. Connections' `nodes` and `edges` are
sized by their page size, not here.
"""

from __future__ import annotations

from collections.abc import Mapping

from graphql import (
    GraphQLNamedType,
    GraphQLOutputType,
    GraphQLSchema,
    get_named_type,
    get_nullable_type,
    is_composite_type,
    is_leaf_type,
    is_list_type,
    is_object_type,
)
from strawberry import UNSET
from strawberry.federation.schema_directives import Cost, ListSize

from graph.engine.cost import (
    DEFAULT_LIST_SIZE,
    PAGE_LISTS,
    Arguments,
    Size,
    fixed,
    length_of,
    per_task,
    tasks_of_changes,
)

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
    # Federation's entities: one per representation the gateway sends.
    "Query._entities": length_of("representations"),
    **{f"{t}.history": fixed(16) for t in HISTORIES},
    "ConfigurationVersion.changed": fixed(8),
    "Release.files": fixed(128),  # 71
    "ReleaseSummary.tasks": fixed(8),  # 7
    "TaskSummary.fieldChanges": fixed(16),
}


# The directives of demand control (IBM's cost specification, Federation 2.9's @cost and
# @listSize), derived from the sizes above and the engine's rule, so that a gateway's estimate
# and the server's charge are made of the same figures (docs/federation.md).
def list_size_of(size: Size) -> int:
    """The elements a gateway assumes for a list the server sizes so: the largest the server
    charges when the arguments it reads are not given (`per_task`: every task); a list as long
    as a list argument (`length_of`) is assumed DEFAULT_LIST_SIZE long."""
    largest = max(size({}, {}), size({"task": None}, {}), size({}, {"task": None}))
    return largest or DEFAULT_LIST_SIZE


def sized_by_first(size: Size) -> bool:
    """Whether the list's size is the `first` of the field above it (`plans_asked`)."""
    return size({}, {"first": 3}) == 3 and size({}, {"first": 7}) == 7


def demand_control(
    schema: GraphQLSchema, sizes: Mapping[str, Size], page_size: int
) -> dict[tuple[str, str], list[object]]:
    """The @cost and @listSize directives of each field (type name, field name) that needs them
    for a gateway to charge what `graph.engine.cost` charges: every field costs 1 (a leaf's
    default weight is 0: `@cost(weight: 1)`); a list of objects is charged once per element
    (`@listSize(assumedSize:)` its size here, else DEFAULT_LIST_SIZE), a list of leaves once
    (`assumedSize: 1`); a field with `first` sizes its connection's `nodes` and `edges` (and
    any list sized by it) by `first`, else by the default page size."""
    found: dict[tuple[str, str], list[object]] = {}
    for type_ in schema.type_map.values():
        # Apollo's composition takes them on object types' fields alone.
        if type_.name.startswith("__") or not is_object_type(type_):
            continue
        for name, field in type_.fields.items():
            named = get_named_type(field.type)
            directives: list[object] = []
            size = sizes.get(f"{type_.name}.{name}")
            if is_leaf_type(named):
                directives.append(Cost(weight=1))
            if _is_list(field.type):
                if is_leaf_type(named):
                    directives.append(assumed_size(1))
                elif not _sized_above(name, size):
                    assumed = DEFAULT_LIST_SIZE if size is None else list_size_of(size)
                    directives.append(assumed_size(assumed))
            elif "first" in field.args and is_composite_type(named):
                sized = _sized_fields(named, sizes)
                if sized:
                    directives.append(
                        ListSize(
                            assumed_size=_assumed(named, sized, sizes, page_size),
                            slicing_arguments=["first"],
                            sized_fields=sized,
                            require_one_slicing_argument=False,
                        )
                    )
            if directives:
                found[(type_.name, name)] = directives
    return found


def assumed_size(size: int) -> ListSize:
    """`@listSize(assumedSize: size)`, its other arguments left out of the SDL."""
    return ListSize(
        assumed_size=size,
        slicing_arguments=UNSET,
        sized_fields=UNSET,
        require_one_slicing_argument=UNSET,
    )


def _is_list(type_: GraphQLOutputType) -> bool:
    return is_list_type(get_nullable_type(type_))


def _sized_fields(type_: GraphQLNamedType, sizes: Mapping[str, Size]) -> list[str]:
    """The lists of a type that the `first` of a field returning it sizes."""
    fields = getattr(type_, "fields", {})
    return [
        name
        for name, field in fields.items()
        if _is_list(field.type) and _sized_above(name, sizes.get(f"{type_.name}.{name}"))
    ]


def _sized_above(name: str, size: Size | None) -> bool:
    """Whether a list is sized by the `first` of the field above it: a connection's page (its
    `nodes` or `edges`, without a size of their own), or a list its Size says is."""
    return (size is None and name in PAGE_LISTS) or (size is not None and sized_by_first(size))


def _assumed(
    type_: GraphQLNamedType, sized: list[str], sizes: Mapping[str, Size], page_size: int
) -> int:
    """Without `first`: the default page for a connection, else the list's own default."""
    if any(name in PAGE_LISTS for name in sized):
        return page_size
    return max(sizes[f"{type_.name}.{name}"]({}, {}) for name in sized)
