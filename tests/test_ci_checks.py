"""The CI checks of the GraphQL documentation and schema, run as CI runs them:
scripts/check-codegen (TypeScript types from the documented operations, DOCS_ROOTS pointing at
Markdown of our own) and scripts/check-schema-diff (the breaking changes since the previous tag
are in CHANGELOG.md; CHANGELOG pointing at a copy). The first run may `npm ci` in tools/codegen."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK_CODEGEN = ROOT / "scripts" / "check-codegen"
CHECK_SCHEMA_DIFF = ROOT / "scripts" / "check-schema-diff"
# A tag whose schema has Release.id: Int! (the working tree's is ID!).
# The 0.1.0 release's commit, as scripts/releases lists it (tags do not always travel with a
# clone; the commit does).
OLD_RELEASE = next(
    line.split()[1]
    for line in (ROOT / "scripts" / "releases").read_text().splitlines()
    if line.startswith("v0.1.0 ")
)

pytestmark = pytest.mark.slow


def run(script: Path, *, python: bool = False, **env: str) -> tuple[int, str]:
    """The script's exit status and output (run by this Python when `python`)."""
    done = subprocess.run(
        [sys.executable, str(script)] if python else [str(script)],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, done.stdout + done.stderr


NAMED = """\
# Named operations

```graphql
query TopEnergy($task: String! = "lm-arena-chat") {
  leaderboard(task: $task) { entries { rank energyJoules model { slug } } }
}
```

1. In a list, with a fragment:

   ```graphql
   fragment GpuBits on Gpu { name tdpWatts }
   query GpusWithFragment { gpus { ...GpuBits } }
   ```

```graphql
query ReleasesList { releases { id number commitDate } }
```
"""


def test_codegen_passes_on_named_operations(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(NAMED)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "facets.md").write_text(
        "```graphql\nquery Facets { facets { gpus metrics { metric unit } } }\n```\n"
    )
    code, output = run(CHECK_CODEGEN, DOCS_ROOTS=str(tmp_path))
    assert code == 0, output
    assert "4 graphql block(s) in 2 Markdown file(s)" in output, output
    for name in ("TopEnergy", "GpusWithFragment", "ReleasesList", "Facets"):
        assert f"-> {name}.graphql" in output, output
    assert "compiles" in output, output
    # The client preset's persisted documents read as a tier's trusted documents (docs/keys.md).
    assert "4 persisted documents, each under the SHA-256 of its text" in output, output
    assert output.rstrip().endswith("check-codegen: all passed"), output


def test_codegen_fails_on_an_anonymous_operation_and_names_it(tmp_path: Path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text(NAMED + "\nAnd one without a name:\n\n```graphql\n{ facets { gpus } }\n```\n")
    code, output = run(CHECK_CODEGEN, DOCS_ROOTS=str(guide))
    assert code == 1, output
    # The file's fourth graphql block, its fence 4 lines after NAMED.
    fence = NAMED.count("\n") + 4
    assert f"FAIL: {guide}:{fence} (graphql block 4): anonymous query at line {fence + 1}" in (
        output
    ), output
    assert "check-codegen: 1 failed" in output, output


def test_codegen_fails_on_an_operation_the_schema_does_not_have(tmp_path: Path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text('```graphql\nquery Nope {\n  model(slug: "x") { nope }\n}\n```\n')
    code, output = run(CHECK_CODEGEN, DOCS_ROOTS=str(guide))
    assert code == 1, output
    assert 'Cannot query field "nope" on type "Model"' in output, output
    # Where it is in the Markdown: line 3, column 22.
    assert f"{guide}:3:22 (block 1, Nope.graphql)" in output, output


def test_schema_diff_passes_on_the_repository() -> None:
    """Against the previous release, found by its tag or else in scripts/releases: compared,
    not passed for want of a schema to compare with."""
    code, output = run(CHECK_SCHEMA_DIFF)
    assert code == 0, output
    assert "check-schema-diff: passed" in output, output
    assert "nothing to compare" not in output, output
    assert "every breaking change (1) is listed" in output, output


def test_schema_diff_fails_without_the_breaking_line(tmp_path: Path) -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    # Every "- BREAKING" entry that names Release.id, with its indented continuation lines.
    removed = re.sub(
        r"^- BREAKING[^\n]*`Release\.id`[^\n]*\n(?:[ \t]+\S[^\n]*\n)*", "", text, flags=re.M
    )
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text(removed)
    code, output = run(CHECK_SCHEMA_DIFF, CHANGELOG=str(changelog), BASE_TAG=OLD_RELEASE)
    assert code == 1, output
    assert "FAIL: not listed: Release.id (FIELD_TYPE_CHANGED)" in output, output
    assert "check-schema-diff: failed" in output, output


@pytest.mark.parametrize(
    ("entry", "listed"),
    [
        # Wrapped over two lines: the entry is the bullet, continuation lines included.
        ("- BREAKING: the release id is a global id\n  (`Release.id`, an `ID!`).\n", True),
        ("- BREAKING: Release.id is an ID!\n", True),
        # A longer name, another line kind, or outside [Unreleased] is not a listing.
        ("- BREAKING: `Release.identity` changed.\n", False),
        ("- Changed: `Release.id` is an `ID!`.\n", False),
    ],
)
def test_schema_diff_what_listed_means(tmp_path: Path, entry: str, listed: bool) -> None:
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text(
        "# Changelog\n\n## [Unreleased]\n\n### Schema changes\n"
        + entry
        + "\n## [0.1.0]\n\n### Schema changes\n- BREAKING: `Release.id` (an older entry).\n"
    )
    code, output = run(CHECK_SCHEMA_DIFF, CHANGELOG=str(changelog), BASE_TAG=OLD_RELEASE)
    assert code == (0 if listed else 1), output


CHECK_DEPLOY_COMMANDS = ROOT / "scripts" / "check-deploy-commands"


def test_deploy_commands_pass_on_the_repository() -> None:
    code, output = run(CHECK_DEPLOY_COMMANDS, python=True)
    assert code == 0, output
    assert "ok: deploy/k8s/follow.yaml/spec/template/spec/containers/follow: leadgreen follow" in (
        output
    )


def test_deploy_commands_fail_on_a_mistyped_option_and_name_it(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    follow = tmp_path / "deploy" / "k8s" / "follow.yaml"
    follow.write_text(follow.read_text().replace("--metrics-port", "--metrics-prt"))
    code, output = run(CHECK_DEPLOY_COMMANDS, python=True, DEPLOY_DIR=str(tmp_path / "deploy"))
    assert code == 1, output
    assert (
        "    No such option '--metrics-prt'. (Did you mean one of: '--metrics-file', "
        "'--metrics-host', '--metrics-port'?)"
    ) in output.splitlines()
    assert "FAIL: deploy/k8s/follow.yaml/spec/template/spec/containers/follow:" in output
