"""The house rules: imports run one way with no cycle (pyproject.toml's import contracts, checked
by import-linter over every import, function-level ones too), and every package says what it
holds and what it may import. (Modules are grouped by concept, whatever their length: issue 18
withdrew the 300-line cap.)"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("analysis", "db", "graph")
LINT = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": str(LINT.parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_import_runs_the_way_the_layers_say() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout[-4000:]
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("graph/engine/plain.py", "from graph.server import app", "Imports run one way"),
        ("db/reads.py", "import strawberry", "Persistence and analyses know nothing"),
        ("graph/schema/types/gpu.py", "from graph.schema.answers import listings", "Within"),
        ("db/kinds.py", "from db import ingest", "No import cycle"),
    ],
)
def test_an_import_the_wrong_way_is_caught(tmp_path: Path, module: str, line: str, contract: str):
    """The check can fail: one wrong import, even inside a function, breaks its contract."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("static", "*.pyc")
        )
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n\ndef _wrong() -> None:\n    {line}  # noqa\n")
    done = lint_imports(tmp_path)
    assert done.returncode != 0
    broken = [row for row in done.stdout.splitlines() if row.endswith("BROKEN")]
    assert any(row.startswith(contract) for row in broken), done.stdout[-2000:]


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_every_package_says_what_it_holds_and_may_import() -> None:
    packages = [p for p in _modules() if p.name == "__init__.py" and "migrations" not in p.parts]
    silent = [
        str(p.relative_to(ROOT))
        for p in packages
        if "import" not in (ast.get_docstring(ast.parse(p.read_text())) or "")
    ]
    assert len(packages) >= 9
    assert silent == []
