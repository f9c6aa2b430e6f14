"""The one error ingest raises: it names the file, the row and the field that were wrong."""

from __future__ import annotations


class IngestError(Exception):
    def __init__(
        self, file: str, message: str, *, row: int | None = None, field: str | None = None
    ):
        self.file, self.row, self.field, self.message = file, row, field, message
        where = file
        if row is not None:
            where += f", row {row}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")
