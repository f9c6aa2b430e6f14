"""A client's configuration filter, checked and turned into the catalog's filter."""

from __future__ import annotations

from db.catalog import EVERYTHING, Catalog, ConfigurationFilter
from db.kinds import Kind
from graph.errors import BadInput
from graph.schema.inputs import AnyFilter


def check_at_least(name: str, value: float | None, least: float = 0) -> None:
    """Raise BadInput unless `value` is absent or at least `least`."""
    if value is not None and not value >= least:
        raise BadInput(f"{name} must be a number >= {least:g}, got {value}")


def known_task(catalog: Catalog, name: str, kind: Kind | None) -> None:
    """Raise BadInput unless `name` is a task of the release (of `kind`, when given)."""
    found = catalog.kind(name)
    if found is None:
        known = ", ".join(sorted(catalog.task_by_name))
        raise BadInput(f"unknown task {name!r}; the tasks are {known}")
    if kind is not None and found is not kind:
        raise BadInput(
            f"task {name!r} is {found.article} {found.called} task; this field takes the other kind"
        )


def model_ids(catalog: Catalog, slug: str | None, model_id: str | None) -> list[int] | None:
    """The model's catalog id as a filter (None: every model); BadInput for an unknown one."""
    if slug is None and model_id is None:
        return None
    row = catalog.model(slug=slug, model_id=model_id)
    if row is None:
        given = " and ".join(
            f"{k} {v!r}" for k, v in (("slug", slug), ("modelId", model_id)) if v is not None
        )
        raise BadInput(f"there is no model with {given}")
    return [row.id]


def _positive(name: str, value: int | None) -> int | None:
    if value is not None and value < 1:
        raise BadInput(f"{name} must be at least 1, got {value}")
    return value


def to_filter(
    catalog: Catalog, given: AnyFilter | None, kind: Kind, *, strict: bool
) -> ConfigurationFilter | None:
    """The catalog's filter for `given`.

    Strict (the statistics): an unknown task or model, a task of the other kind or a count
    below 1 is a BadInput. Otherwise (the connections): an unknown model selects nothing (None).
    """
    if given is None:
        return EVERYTHING
    if strict and given.task is not None:
        known_task(catalog, given.task, kind)
    max_itl = getattr(given, "max_median_itl_ms", None)
    check_at_least("maxMedianItlMs", max_itl)
    at_least_seqs = getattr(given, "max_num_seqs_at_least", None)
    at_most_seqs = getattr(given, "max_num_seqs_at_most", None)
    ids = None
    if strict:
        ids = model_ids(catalog, given.model, given.model_id)
        _positive("numGpus", given.num_gpus)
        _positive("maxNumSeqsAtLeast", at_least_seqs)
        _positive("maxNumSeqsAtMost", at_most_seqs)
    elif given.model is not None or given.model_id is not None:
        row = catalog.model(slug=given.model, model_id=given.model_id)
        if row is None:
            return None
        ids = [row.id]
    return ConfigurationFilter(
        model_ids=ids,
        gpu=given.gpu,
        num_gpus=given.num_gpus,
        min_batch_setting=at_least_seqs,
        max_batch_setting=at_most_seqs,
        task=given.task,
        max_latency=max_itl,
    )
