"""The documentation: README.md and docs/.

Every GraphQL example (a ```graphql block) is a single named operation, its name used by no
other example (code generators refuse anonymous operations and name types after operations), is
valid against the committed schema.graphql, and runs as written on the real data. Three kinds:

- an ordinary example answers without errors, and with no empty top-level value, on the
  2026-02-16 snapshot;
- one marked `# (needs two releases: ingest 2025-12-17 and 2026-02-16)` answers without errors
  on a database holding both (2026-02-16 with the manifest as release 1, then 2025-12-17);
- one marked `# "message" (BAD_USER_INPUT)` gives exactly that one error.

An example whose block is followed at once (nothing but blank lines between) by a ```json
block runs with that object as its variables.

The site builds with `mkdocs build --strict` (which checks every internal link and anchor), and
its generated schema reference holds every type and field.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from graphql import (
    DocumentNode,
    FragmentDefinitionNode,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    OperationDefinitionNode,
    build_schema,
    parse,
    print_ast,
    validate,
)

from graph.server.documents import MODEL_PAGE
from graph.settings import Settings
from tests.conftest import EARLIER, ROOT, SEED, SNAPSHOT, ingest_dir, make_execute

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# A fenced block of GraphQL, possibly indented (in a list item).
GRAPHQL_FENCE = re.compile(r"^([ \t]*)```graphql[ \t]*\n(.*?)^\1```", re.S | re.M)
# The variables of the example just above: a ```json block right after its fence.
VARIABLES_FENCE = re.compile(
    r"[ \t]*\n(?:[ \t]*\n)*([ \t]*)```json[ \t]*\n(.*?)^\1```", re.S | re.M
)
TWO_RELEASES = "# (needs two releases: ingest 2025-12-17 and 2026-02-16)"
FAILS = re.compile(r'^# "(.*)" \(BAD_USER_INPUT\)$', re.M)
# The shortest README that still says what it must (the two commands, a first query, the
# settings a partner sets, history, deployment, the security figures and the error table);
# the rest belongs in docs/.
README_MAX_LINES = 220
# The GraphiQL screenshot a browser test produces later; until then the README's one missing file.
SCREENSHOT = "docs/images/graphiql.png"


@dataclass(frozen=True)
class Example:
    path: str  # relative to the repository
    line: int
    text: str
    variables: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        match = re.search(r"\b(?:query|mutation|subscription)\s+(\w+)", self.text)
        return match.group(1) if match else "anonymous"

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}:{self.name}"

    @property
    def two_releases(self) -> bool:
        return TWO_RELEASES in self.text

    @property
    def error(self) -> str | None:
        match = FAILS.search(self.text)
        return match.group(1) if match else None


def _examples() -> list[Example]:
    found = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        for match in GRAPHQL_FENCE.finditer(text):
            indent = match.group(1)
            body = "\n".join(line.removeprefix(indent) for line in match.group(2).splitlines())
            line = text.count("\n", 0, match.start()) + 1
            given = VARIABLES_FENCE.match(text, match.end())
            variables = json.loads(given.group(2)) if given else {}
            found.append(Example(path.relative_to(ROOT).as_posix(), line, body + "\n", variables))
    return found


EXAMPLES = _examples()
ORDINARY = [e for e in EXAMPLES if not e.two_releases and e.error is None]
OVER_TWO_RELEASES = [e for e in EXAMPLES if e.two_releases]
ERRORS = [e for e in EXAMPLES if e.error is not None]


def _params(examples: list[Example]) -> list[object]:
    return [pytest.param(e, id=e.id) for e in examples]


@functools.cache
def committed_schema() -> GraphQLSchema:
    return build_schema((ROOT / "schema.graphql").read_text(encoding="utf-8"))


def test_the_docs_show_examples_of_every_kind() -> None:
    assert len(EXAMPLES) >= 30
    assert len(OVER_TWO_RELEASES) >= 4
    assert len(ERRORS) >= 4
    assert [e for e in EXAMPLES if e.path == "README.md"], "the README shows one query"
    # Each example is of one kind: an error example needs no second release.
    assert not [e.id for e in OVER_TWO_RELEASES if e.error is not None]


def test_no_graphql_hides_in_another_fence() -> None:
    """Examples are found by their ```graphql fence: no other spelling escapes the tests."""
    other = re.compile(r"^[ \t]*(```|~~~)[ \t]*(gql|GraphQL|graphqls)\b", re.M)
    assert [p.name for p in DOCUMENTS if other.search(p.read_text(encoding="utf-8"))] == []


@pytest.mark.parametrize("example", _params(EXAMPLES))
def test_every_example_is_one_named_operation(example: Example) -> None:
    document = parse(example.text)
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    others = [
        d
        for d in document.definitions
        if not isinstance(d, OperationDefinitionNode | FragmentDefinitionNode)
    ]
    assert len(operations) == 1 and others == [], example.id
    assert operations[0].name is not None, f"{example.id}: name the operation"


def test_operation_names_are_unique() -> None:
    """Generated types are named after operations: two examples may not share a name."""
    names = [e.name for e in EXAMPLES]
    assert sorted({n for n in names if names.count(n) > 1}) == []


@pytest.mark.parametrize("example", _params(EXAMPLES))
def test_every_example_is_valid_against_the_committed_schema(example: Example) -> None:
    errors = validate(committed_schema(), parse(example.text))
    assert [e.message for e in errors] == [], example.id


def test_the_model_page_shown_is_graphiqls_first_tab() -> None:
    """docs/queries/model-page.md shows the query GraphiQL opens on, as it is."""

    def operation(text: str) -> str:
        return print_ast(DocumentNode(definitions=parse(text).definitions))

    shown = next(e for e in EXAMPLES if e.path == "docs/queries/model-page.md")
    assert operation(shown.text) == operation(MODEL_PAGE)


def test_queries_sent_with_curl_are_named_too() -> None:
    """A query inside a JSON body (`"query":"..."`) is a named operation like the others."""
    bodies = [
        (path.name, match.group(1))
        for path in DOCUMENTS
        for match in re.finditer(r'"query"\s*:\s*"((?:[^"\\]|\\.)*)"', path.read_text("utf-8"))
    ]
    assert bodies
    assert [b for b in bodies if not re.match(r"(query|mutation|subscription)\s+\w+", b[1])] == []


def test_the_readme_is_short_and_its_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    assert f"![GraphiQL]({SCREENSHOT})" in readme
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    local = [t.partition("#")[0] for t in targets if not re.match(r"[a-z]+:", t)]
    assert local
    assert [t for t in local if t and t != SCREENSHOT and not (ROOT / t).exists()] == []


@pytest.mark.realdata
@pytest.mark.anyio
@pytest.mark.parametrize("example", _params(ORDINARY))
async def test_example_runs_on_the_real_data(execute_real, example: Example) -> None:
    data = await execute_real(example.text, **example.variables)
    assert "errors" not in data, (example.id, data)
    assert all(value not in (None, []) for value in data.values()), (example.id, data)


@pytest.mark.realdata
@pytest.mark.anyio
@pytest.mark.parametrize("example", _params(OVER_TWO_RELEASES))
async def test_example_runs_over_two_releases(engine, settings: Settings, example: Example) -> None:
    await ingest_dir(engine, SNAPSHOT, SEED)
    await ingest_dir(engine, EARLIER)
    data = await make_execute(engine, settings)(example.text, **example.variables)
    assert "errors" not in data, (example.id, data)
    assert all(value not in (None, []) for value in data.values()), (example.id, data)


@pytest.mark.realdata
@pytest.mark.anyio
@pytest.mark.parametrize("example", _params(ERRORS))
async def test_error_example_gives_its_message(execute_real, example: Example) -> None:
    assert await execute_real(example.text, **example.variables) == {
        "errors": [{"message": example.error, "code": "BAD_USER_INPUT"}]
    }


@pytest.mark.slow
def test_the_site_builds_strict_with_the_whole_schema(tmp_path: Path) -> None:
    """`mkdocs build --strict` passes (links, anchors, navigation), offline, and the schema
    reference it generates has an entry for every type and every field of schema.graphql."""
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    assert not list((ROOT / "docs").rglob("schema.md")), "the reference is never written to docs/"
    reference = (site / "reference" / "schema" / "index.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'id="([^"]+)"', reference))
    missing = []
    for name, named in committed_schema().type_map.items():
        if name.startswith("__"):
            continue
        missing += [name] if name not in ids else []
        if isinstance(named, GraphQLObjectType | GraphQLInterfaceType | GraphQLInputObjectType):
            missing += [f"{name}-{f}" for f in named.fields if f"{name}-{f}" not in ids]
    assert missing == []
