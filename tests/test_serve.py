"""What `leadgreen serve` (and so `scripts/serve`) says as it starts: its database and GraphiQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.cli import where
from graph.settings import Settings

# Every setting `where` reads, given (the environment may set any of them).
DEFAULTS = {"database_url": "leadgreen.db", "host": "127.0.0.1", "port": 8000, "graphiql": True}


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        (
            {},
            [
                f"database: SQLite file {Path('leadgreen.db').resolve()}",
                "GraphiQL: http://127.0.0.1:8000/graphql",
            ],
        ),
        (
            {"database_url": "sqlite+aiosqlite:///data/lg.db", "host": "0.0.0.0", "port": 8080},
            [
                f"database: SQLite file {Path('data/lg.db').resolve()}",
                "GraphiQL: http://127.0.0.1:8080/graphql",
            ],
        ),
        (
            {"database_url": "postgresql://lg:secret@db.internal:5433/leadgreen", "host": "::"},
            [
                "database: postgresql+asyncpg://lg:***@db.internal:5433/leadgreen",
                "GraphiQL: http://[::1]:8000/graphql",
            ],
        ),
        (
            {"database_url": "sqlite+aiosqlite://", "host": "10.0.0.7", "graphiql": False},
            [
                "database: SQLite, in memory",
                "GraphQL: http://10.0.0.7:8000/graphql (GraphiQL is off)",
            ],
        ),
    ],
)
def test_serve_says_where_its_database_and_graphiql_are(
    settings: dict[str, object], said: list[str]
) -> None:
    """The SQLite file as an absolute path, a server's URL without its password, and the
    address a browser opens (the loopback one for a server listening on every interface)."""
    given = {**DEFAULTS, **settings}
    assert where(Settings(manifest=None, **given)) == said
