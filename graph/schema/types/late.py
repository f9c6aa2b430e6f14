"""Late-bound constructors, for the one edge of the type graph that points up.

A configuration links to its model, but the model's module builds configurations: `model.py`
registers Model's constructor here when it is imported (building the schema imports it), and
`configuration.py` asks for it by name, so neither module imports the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MAKERS: dict[str, Callable[..., Any]] = {}


def provide(name: str, maker: Callable[..., Any]) -> None:
    _MAKERS[name] = maker


def make(name: str, *args: Any) -> Any:
    """The object `name`'s registered constructor makes of `args`."""
    return _MAKERS[name](*args)
