"""The files of a K-times snapshot (bench/scale.py): the names of a copy's model and files, and
JSON written as the file it copies is (the style of a file, its indent, key order, ASCII
escaping and final newline, read from its text), a long list one item at a time."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

_SENTINELS = ("\x01leadgreen-scale-first\x01", "\x01leadgreen-scale-second\x01")


@dataclass(frozen=True)
class JsonStyle:
    """How a JSON file is written, as far as json.dumps can tell it apart."""

    indent: str | None
    sort_keys: bool
    ensure_ascii: bool
    separators: tuple[str, str]
    final_newline: bool

    def dumps(self, value: Any) -> str:
        return json.dumps(
            value,
            indent=self.indent,
            sort_keys=self.sort_keys,
            ensure_ascii=self.ensure_ascii,
            separators=self.separators,
            allow_nan=False,
        )

    def document(self, value: Any) -> str:
        return self.dumps(value) + ("\n" if self.final_newline else "")


def detect_style(raw: bytes, value: Any) -> JsonStyle:
    """The style `raw` (whose parsed `value` is given) was written in."""
    text = raw.decode()
    indent: str | None = None
    first, newline, rest = text.lstrip().partition("\n")
    if newline and first in ("{", "["):
        line = rest.partition("\n")[0]
        indent = line[: len(line) - len(line.lstrip(" \t"))] or None
    if indent is not None:
        separators = (",", ": ")
    else:
        compact = '":' in text and '": ' not in text
        separators = (",", ":") if compact else (", ", ": ")
    return JsonStyle(
        indent=indent,
        sort_keys=_keys_sorted(value),
        # Non-ASCII text written as is means no escaping; otherwise json.dumps' default.
        ensure_ascii=text.isascii(),
        separators=separators,
        final_newline=text.endswith("\n"),
    )


def _keys_sorted(value: Any) -> bool:
    """Whether every object's keys are in sorted order (then new keys are sorted in too)."""
    if isinstance(value, dict):
        keys = list(value)
        return keys == sorted(keys) and all(_keys_sorted(v) for v in value.values())
    if isinstance(value, list):
        return all(_keys_sorted(v) for v in value)
    return True


class _Counter:
    """A binary file that counts the bytes written to it."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.count = 0

    def write(self, text: str) -> None:
        data = text.encode()
        self.stream.write(data)
        self.count += len(data)


def stream_document(
    path: Path,
    skeleton: dict[str, Any],
    key: str,
    items: Iterable[dict[str, Any]],
    style: JsonStyle,
) -> int:
    """Write `skeleton` with `items` as the list under `key`, one item at a time; bytes."""
    # Lay the document out around two placeholder items; what lies between them is the
    # separator the list's items get at their depth.
    text = style.document({**skeleton, key: list(_SENTINELS)})
    first, second = (style.dumps(s) for s in _SENTINELS)
    head, _, rest = text.partition(first)
    separator, _, tail = rest.partition(second)
    assert head and separator and text.count(first) == text.count(second) == 1
    depth = separator.rpartition("\n")[2] if "\n" in separator else ""
    with path.open("wb") as stream:
        out = _Counter(stream)
        out.write(head)
        for i, item in enumerate(items):
            if i:
                out.write(separator)
            out.write(style.dumps(item).replace("\n", "\n" + depth))
        out.write(tail)
        return out.count


def read_json(path: Path) -> tuple[Any, JsonStyle]:
    raw = path.read_bytes()
    value = json.loads(raw)
    return value, detect_style(raw, value)


def write_json(path: Path, value: Any, style: JsonStyle) -> int:
    data = style.document(value).encode()
    path.write_bytes(data)
    return len(data)


def model_file(model_id: str, task: str) -> str:
    return f"models/{model_id.replace('/', '__')}__{task}.json"


def copy_id(model_id: str, i: int) -> str:
    return model_id if i == 0 else f"{model_id}-x{i}"


def copy_nickname(nickname: str, i: int) -> str:
    return nickname if i == 0 else f"{nickname} x{i}"


def renamed(document: dict[str, Any], i: int) -> dict[str, Any]:
    """`document` (an index entry, a row or a model file) as copy i says its model."""
    if i == 0:
        return document
    renamed = dict(document)
    if "model_id" in renamed:
        renamed["model_id"] = copy_id(renamed["model_id"], i)
    if "nickname" in renamed:
        renamed["nickname"] = copy_nickname(renamed["nickname"], i)
    return renamed
