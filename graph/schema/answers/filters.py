"""A client's configuration filter, checked and turned into the catalog's filter."""

from __future__ import annotations

from dataclasses import replace

from strawberry.utils.str_converters import to_camel_case

from db.catalog import EVERYTHING, Bound, Catalog, ConfigurationFilter
from db.kinds import Kind
from graph.errors import BadInput
from graph.schema.context import known_gpu, known_model, known_task
from graph.schema.inputs import AnyFilter
from graph.settings import Settings


def check_at_least(name: str, value: float | None, least: float = 0) -> None:
    """Raise BadInput unless `value` is absent or at least `least`."""
    if value is not None and not value >= least:
        raise BadInput(f"{name} must be a number >= {least:g}, got {value}")


def page_size(settings: Settings, first: int | None, default: int | None = None) -> int:
    """`first`, else `default` (else the server's default page size), within the largest page."""
    if first is None:
        first = settings.default_page_size if default is None else default
    if not 0 <= first <= settings.max_page_size:
        raise BadInput(f"`first` must be between 0 and {settings.max_page_size}, got {first}")
    return first


def _positive(name: str, value: int | None) -> int | None:
    if value is not None and value < 1:
        raise BadInput(f"{name} must be at least 1, got {value}")
    return value


def to_filter(
    catalog: Catalog, given: AnyFilter | None, kind: Kind, *, strict: bool
) -> ConfigurationFilter:
    """The catalog's filter for `given`; an unknown GPU, task or model is a BadInput.

    Strict (the statistics) also refuses a task of the other kind, a count below 1 and a slug
    and model id of two different models; a connection takes them as selecting nothing. A bound
    on a measurement below 0 is a BadInput either way.
    """
    if given is None:
        return EVERYTHING
    if given.task is not None:
        known_task(catalog, given.task, "filter.task", kind if strict else None)
    if given.gpu is not None:
        known_gpu(catalog, given.gpu, "filter.gpu")
    ids = _model_ids(catalog, given, strict)
    asked = [(f, getattr(given, f.name)) for f in kind.filters]
    for f, value in asked:
        if not f.setting:
            check_at_least(to_camel_case(f.name), value)
    if strict:
        _positive("numGpus", given.num_gpus)
        for f, value in asked:
            if f.setting:
                _positive(to_camel_case(f.name), value)
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


def _model_ids(catalog: Catalog, given: AnyFilter, strict: bool) -> list[int] | None:
    """The filter's model as catalog ids (None: every model; empty: none)."""
    rows = [
        known_model(catalog, name, f"filter.{argument}", by_id=by_id)
        for name, argument, by_id in (
            (given.model, "model", False),
            (given.model_id, "modelId", True),
        )
        if name is not None
    ]
    if not rows:
        return None
    if any(row is not rows[0] for row in rows):
        if strict:
            raise BadInput(
                f"there is no model with slug {given.model!r} and modelId {given.model_id!r}"
            )
        return []
    return [rows[0].id]
