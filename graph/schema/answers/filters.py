"""A client's configuration filter, checked and turned into the catalog's filter."""

from __future__ import annotations

from dataclasses import replace

from strawberry.utils.str_converters import to_camel_case

from db.catalog import EVERYTHING, Bound, Catalog, ConfigurationFilter
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
    A bound on a measurement below 0 is a BadInput either way.
    """
    if given is None:
        return EVERYTHING
    if strict and given.task is not None:
        known_task(catalog, given.task, kind)
    asked = [(f, getattr(given, f.name)) for f in kind.filters]
    for f, value in asked:
        if not f.setting:
            check_at_least(to_camel_case(f.name), value)
    ids = None
    if strict:
        ids = model_ids(catalog, given.model, given.model_id)
        _positive("numGpus", given.num_gpus)
        for f, value in asked:
            if f.setting:
                _positive(to_camel_case(f.name), value)
    elif given.model is not None or given.model_id is not None:
        row = catalog.model(slug=given.model, model_id=given.model_id)
        if row is None:
            return None
        ids = [row.id]
    bounds: dict[str, Bound] = {}
    for f, value in asked:
        if value is not None:
            bound = bounds.get(f.column, Bound(f.column))
            bounds[f.column] = replace(bound, most=value) if f.most else replace(bound, least=value)
    return ConfigurationFilter(
        model_ids=ids,
        gpu=given.gpu,
        num_gpus=given.num_gpus,
        task=given.task,
        bounds=tuple(bounds.values()),
    )
