"""What is known of a release's origin, and whether a manifest's statements describe it.

A LeadGreen manifest (the v1 index) states when its data was compiled, when it was retrieved,
how many configurations its workload has and which version it is. Those statements describe one
set of files: they are served only for a release whose data they were checked against (its
`last_updated` is the compiled date, its workload task has the stated number of rows, every
model it lists is measured). Any other release says only what is true of its own files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from db.fetch import parse_json
from db.shapes import Manifest, TaskFile, validate
from db.snapshot import Snapshot
from db.tables import SourceRow

# The leaderboard's own names and places: true of every release.
NAME = "ML.ENERGY Leaderboard"
HOME = "https://ml.energy/leaderboard/"
REPOSITORY = "https://github.com/ml-energy/leaderboard"
RAW = "https://raw.githubusercontent.com/ml-energy/leaderboard"
DATA_PATH = "public/data"
_COUNT = re.compile(r"^\s*(\d[\d,]*)\b")
_WORKLOAD = re.compile(r"\(([A-Za-z0-9._-]+)\)")


@dataclass(frozen=True)
class Applicability:
    applies: bool
    reason: str


def manifest_applies(manifest: Manifest, snapshot: Snapshot) -> Applicability:
    """Whether the manifest's statements describe the snapshot's data, checked, with why not."""
    source = manifest.source
    if source.compiled != snapshot.index.last_updated:
        return Applicability(
            False,
            f"it describes data compiled {source.compiled}; these files are of "
            f"{snapshot.index.last_updated}",
        )
    workload = _WORKLOAD.search(source.workload)
    count = _COUNT.match(source.configurations)
    if workload is None or count is None:
        return Applicability(False, "its workload or configuration count cannot be checked")
    task, stated = workload.group(1), int(count.group(1).replace(",", ""))
    path = f"tasks/{task}.json"
    if path not in snapshot.files:
        return Applicability(False, f"these files have no task {task!r}, its workload")
    rows = len(validate(TaskFile, parse_json(path, snapshot.files[path]), path).configurations)
    if rows != stated:
        return Applicability(
            False, f"it states {stated} configurations of {task}; these have {rows}"
        )
    missing = [m.model_id for m in manifest.models if m.model_id not in snapshot.index.models]
    if missing:
        return Applicability(False, f"it lists {missing[0]!r}, which these files do not measure")
    return Applicability(True, "its compiled date, configuration count and models match")


# The workload a LeadGreen index lists the models of (the seed's: Text Conversation).
WORKLOAD = "lm-arena-chat"


def workload_gpus(snapshot: Snapshot) -> dict[str, list[str]]:
    """The models measured on the workload task, in order of first row, with their GPU types
    (an index of the release's own, for a release no manifest describes)."""
    path = f"tasks/{WORKLOAD}.json"
    if path not in snapshot.files:
        return {}
    gpus: dict[str, set[str]] = {}
    for row in validate(TaskFile, parse_json(path, snapshot.files[path]), path).configurations:
        model_id, gpu = row.get("model_id"), row.get("gpu_model")
        if isinstance(model_id, str) and isinstance(gpu, str):
            gpus.setdefault(model_id, set()).add(gpu)
    return {model_id: sorted(names) for model_id, names in gpus.items()}


def source_url(commit: str | None, location: str) -> str:
    """Where the release's files can be read: the upstream repository at the commit, where
    known; else where they were read from."""
    return f"{RAW}/{commit}/{DATA_PATH}" if commit else location


def derived_source(release_id: int, snapshot: Snapshot, url: str, retrieved: str) -> SourceRow:
    """The provenance a release has without a manifest that describes it: only what its own
    files and origin say."""
    return SourceRow(
        release_id=release_id,
        name=NAME,
        url=HOME,
        data_url=f"{url}/tasks/lm-arena-chat.json",
        compiled=snapshot.index.last_updated,
        compiled_evidence="the release's own index.json `last_updated`",
        retrieved=retrieved,
    )


def manifest_source(release_id: int, manifest: Manifest) -> SourceRow:
    return SourceRow(release_id=release_id, **manifest.source.model_dump())
