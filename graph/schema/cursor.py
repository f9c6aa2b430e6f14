"""Opaque keyset cursors: the ordering field, its value and the row id, base64-encoded."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from graph.errors import BadInput


def encode(field: str, value: Any, row_id: int) -> str:
    raw = json.dumps([field, value, row_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# Longer than any cursor this API issues (the field's name, a number and an id, in base64).
MAX_CURSOR_CHARS = 512


def decode(cursor: str, field: str) -> tuple[Any, int]:
    """The (value, id) a cursor points at, for a page ordered by `field`."""
    not_ours = BadInput(f"`after` is not a cursor this API issued: {cursor[:40]!r}")
    if len(cursor) > MAX_CURSOR_CHARS:
        raise not_ours
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        name, value, row_id = json.loads(raw)
    # RecursionError: JSON nested deeper than the parser goes (a forged cursor).
    except (binascii.Error, ValueError, TypeError, RecursionError) as exc:
        raise not_ours from exc
    if name != field:
        raise BadInput(f"`after` is a cursor for ordering by {name!r}, not {field!r}")
    if (
        not isinstance(row_id, int)
        or isinstance(row_id, bool)
        or not isinstance(value, int | float)
        or isinstance(value, bool)
    ):
        raise not_ours
    return value, row_id
