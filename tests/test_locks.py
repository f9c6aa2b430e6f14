"""The lock files (scripts/lock): made from today's inputs, every requirement pinned with its
hashes and nothing else in them (no index, no option, no path of a machine), the image's lock
a part of the developers' lock, and each runtime dependency's range closed below its next
major release."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "requirements-dev.lock"
RUNTIME = ROOT / "requirements.lock"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

PIN = re.compile(r"(?P<name>[a-z0-9][a-z0-9._-]*)==(?P<version>\S+) \\")
HASH = re.compile(r"    --hash=sha256:[0-9a-f]{64}( \\)?")
# uv's annotations of where a pin comes from: a package, the project, or one of our files.
OURS = r"-r deploy/requirements\.txt|-c requirements-dev\.lock"
SOURCE = rf"({OURS}|[a-z0-9][\w.-]*( \(pyproject\.toml\))?)"
VIA = re.compile(rf"    # via( {SOURCE})?|    #   {SOURCE}")
HEADER = re.compile(r"# .*")


@functools.cache
def parse(lock: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """NAME -> (version, hashes); fails on any line that is not a header, pin, hash or `via`."""
    pins: dict[str, tuple[str, frozenset[str]]] = {}
    name = ""
    for number, line in enumerate(lock.read_text().splitlines(), 1):
        if pin := PIN.fullmatch(line):
            name = pin["name"]
            pins[name] = (pin["version"], frozenset())
        elif HASH.fullmatch(line) and name:
            version, hashes = pins[name]
            pins[name] = (version, hashes | {line.split("sha256:")[1].removesuffix(" \\")})
        elif not (VIA.fullmatch(line) or (HEADER.fullmatch(line) and not pins)):
            pytest.fail(f"{lock.name}:{number} is not a pin, a hash or an annotation: {line!r}")
    return pins


def run_check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(root / "scripts" / "lock"), "--check"],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_locks_were_made_from_todays_inputs() -> None:
    done = run_check(ROOT)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_lock_made_from_other_inputs_is_refused(tmp_path: Path) -> None:
    inputs = ("scripts/lock", "pyproject.toml", "deploy/requirements.txt", DEV.name, RUNTIME.name)
    for path in inputs:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, tmp_path / path)
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"click>=8.1,<9"', '"click>=8.2,<9"', 1))
    done = run_check(tmp_path)
    assert (done.returncode, done.stderr) == (
        1,
        "lock: requirements-dev.lock was not made from today's pyproject.toml and "
        "deploy/requirements.txt\n"
        "lock: requirements.lock was not made from today's pyproject.toml and "
        "deploy/requirements.txt\n"
        "lock: run scripts/lock (and commit the locks)\n",
    )


@pytest.mark.parametrize("lock", [DEV, RUNTIME], ids=lambda lock: lock.name)
def test_every_requirement_is_pinned_with_its_hashes(lock: Path) -> None:
    pins = parse(lock)
    assert len(pins) > 40
    assert [name for name, (_, hashes) in pins.items() if not hashes] == []


def test_the_images_lock_is_part_of_the_developers_lock() -> None:
    dev, runtime = parse(DEV), parse(RUNTIME)
    assert {name: dev.get(name) for name in runtime} == runtime


def test_the_deployment_checkers_are_locked_at_their_pinned_versions() -> None:
    pinned = [
        Requirement(line.split("#")[0])
        for line in (ROOT / "deploy" / "requirements.txt").read_text().splitlines()
        if line.split("#")[0].strip()
    ]
    dev = parse(DEV)
    assert {str(r.name): dev[canonicalize_name(r.name)][0] for r in pinned} == {
        str(r.name): str(r.specifier).removeprefix("==") for r in pinned
    }


@pytest.mark.parametrize(
    "requirement",
    [Requirement(r) for r in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["otel"]],
    ids=str,
)
def test_each_runtime_range_ends_by_the_next_major_release(requirement: Requirement) -> None:
    """The locked version is inside the range, and the range closed (`<`) at most at the next
    major release after it (1.0 after a 0.x)."""
    locked = Version(parse(DEV)[canonicalize_name(requirement.name)][0])
    assert locked in requirement.specifier
    uppers = [Version(s.version) for s in requirement.specifier if s.operator == "<"]
    assert len(uppers) == 1, f"{requirement}: no upper bound"
    assert uppers[0] <= Version(f"{locked.major + 1}")
