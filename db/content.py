"""What a snapshot's files say, whatever how they are written: parsed, and digested as content.

Two releases whose files differ only in formatting (indentation, key order, row order) have the
same content digest: the second is recorded as the same data as the first.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

import orjson

# A \u escape of a letter a-z (U+0061 to U+007A), as JSON may write one.
_LETTER_ESCAPE = re.compile(rb"\\u00[67][0-9a-fA-F]")


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


def _content(raw: bytes) -> Any:
    """`_canonical` of the document in `raw` (its text, when it is not JSON), its sorted rows
    as they are written (an orjson.Fragment) where the document has them."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("latin-1")
    # Without a \u escape of a lowercase letter, every "configurations" key is written as such:
    # when the text names it at most once, only the top level's rows (if any) need sorting,
    # and nothing else is rebuilt (the upstream files are so; others take the general way).
    named = raw.count(b'"configurations"')
    if named > 1 or _LETTER_ESCAPE.search(raw):
        return _canonical(value)
    if named == 0:
        return value
    rows = value.get("configurations") if isinstance(value, dict) else None
    if not isinstance(rows, list):
        return _canonical(value)
    # Each row is written once: its text is its sort key and its place in the document (each
    # copied to its own size: orjson's buffer for a row is some kilobytes, whatever its size).
    written = sorted(
        bytes(memoryview(orjson.dumps(row, option=orjson.OPT_SORT_KEYS))) for row in rows
    )
    return {**value, "configurations": orjson.Fragment(b"[" + b",".join(written) + b"]")}


def content_digest(files: Mapping[str, bytes]) -> str:
    """SHA-256 over each file's content (`_canonical`), the files by path, read one at a time."""
    hasher = hashlib.sha256()
    for path in sorted(files):
        content = _content(files[path])
        hasher.update(path.encode() + b"\0")
        hasher.update(orjson.dumps(content, option=orjson.OPT_SORT_KEYS) + b"\0")
    return hasher.hexdigest()
