"""Every GraphQL query the README shows runs on the real data and answers without errors."""

from __future__ import annotations

import re

import pytest

from graph.settings import Settings
from tests.conftest import EARLIER, ROOT, SEED, SNAPSHOT, ingest_dir, make_execute

pytestmark = [pytest.mark.anyio, pytest.mark.realdata]

QUERIES = re.findall(r"```graphql\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
TWO_RELEASES = "needs two releases"
FAILS = "(BAD_USER_INPUT)"


def test_the_readme_shows_queries() -> None:
    assert len(QUERIES) >= 15


@pytest.mark.parametrize("query", [q for q in QUERIES if TWO_RELEASES not in q and FAILS not in q])
async def test_readme_query(execute_real, query: str) -> None:
    data = await execute_real(query)
    assert "errors" not in data, data
    assert all(value not in (None, []) for value in data.values()), data


@pytest.mark.parametrize("query", [q for q in QUERIES if TWO_RELEASES in q])
async def test_readme_query_over_two_releases(engine, settings: Settings, query: str) -> None:
    await ingest_dir(engine, SNAPSHOT, SEED)
    await ingest_dir(engine, EARLIER)
    data = await make_execute(engine, settings)(query)
    assert "errors" not in data, data


@pytest.mark.parametrize("query", [q for q in QUERIES if FAILS in q])
async def test_readme_error_example(execute_real, query: str) -> None:
    message = re.search(r'# "(.*)" \(BAD_USER_INPUT\)', query)
    assert message is not None
    assert await execute_real(query) == {
        "errors": [{"message": message.group(1), "code": "BAD_USER_INPUT"}]
    }
