"""What a snapshot's files say, whatever how they are written: parsed, and digested as content.

Two releases whose files differ only in formatting (indentation, key order, row order) have the
same content digest: the second is recorded as the same data as the first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson


def parsed(files: Mapping[str, bytes]) -> dict[str, Any]:
    """Each JSON file's document, by path (a file that is not JSON is left out)."""
    documents = {}
    for path, raw in files.items():
        try:
            documents[path] = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
    return documents


def _canonical(value: Any) -> Any:
    """The content of a document whatever its formatting: rows as a multiset (sorted)."""
    if isinstance(value, dict):
        canonical = {k: _canonical(v) for k, v in value.items()}
        rows = canonical.get("configurations")
        if isinstance(rows, list):
            canonical["configurations"] = sorted(
                rows, key=lambda r: orjson.dumps(r, option=orjson.OPT_SORT_KEYS)
            )
        return canonical
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def content_digest(files: Mapping[str, bytes]) -> str:
    hasher = hashlib.sha256()
    for path in sorted(files):
        try:
            content = _canonical(orjson.loads(files[path]))
        except orjson.JSONDecodeError:
            content = files[path].decode("latin-1")
        hasher.update(path.encode() + b"\0")
        hasher.update(orjson.dumps(content, option=orjson.OPT_SORT_KEYS) + b"\0")
    return hasher.hexdigest()
