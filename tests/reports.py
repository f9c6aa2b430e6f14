"""The cost report every GraphQL answer carries (`extensions.cost`, docs/keys.md), as the tests
expect it whole."""

from __future__ import annotations

from typing import Any


def cost(
    requested: int | None = None,
    actual: int | None = None,
    throttle: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An answer's `extensions`: its requested and actual costs (None: not known), and the
    state of the bucket charged, when one was."""
    report: dict[str, Any] = {"requestedQueryCost": requested, "actualQueryCost": actual}
    if throttle is not None:
        report["throttleStatus"] = throttle
    return {"cost": report}


# The report of a request refused before any cost was known (nothing estimated, nothing run).
UNCOSTED = cost()
