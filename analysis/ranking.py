"""The groups a Pareto scope compares: all of a task's rows, or per model, GPU type or both."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

SCOPES = ("global", "model", "gpu", "model_gpu")


class Grouped(Protocol):
    @property
    def model_id(self) -> int: ...
    @property
    def gpu(self) -> str: ...


def scope_key(row: Grouped, scope: str) -> Hashable:
    """The group a row belongs to under a scope (one of SCOPES): rows of one group are compared."""
    if scope == "global":
        return None
    if scope == "model":
        return row.model_id
    if scope == "gpu":
        return row.gpu
    if scope == "model_gpu":
        return (row.model_id, row.gpu)
    raise ValueError(f"unknown scope {scope!r}; the scopes are {', '.join(SCOPES)}")


def by_model(scope: str) -> bool:
    """Whether each group of the scope is one model's rows."""
    return scope in ("model", "model_gpu")


def by_gpu(scope: str) -> bool:
    """Whether each group of the scope is one GPU type's rows."""
    return scope in ("gpu", "model_gpu")
