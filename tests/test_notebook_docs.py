"""docs/notebook.md's snippets, in order, in one namespace, against `leadgreen serve` on the
synthetic snapshot: what each makes (the pinned release, the leaderboard as a frame, the
export's pivot, polars' aggregate, DuckDB's join of the two) checked against the task file's
rows, read here with `json`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.live import python_snippets, run_snippets, serving
from tests.test_exports import task_rows

DOC = Path(__file__).parent.parent / "docs" / "notebook.md"
SNIPPETS = python_snippets(DOC)
TASK = "lm-arena-chat"


@pytest.mark.slow
def test_the_notebook_snippets_read_a_live_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(SNIPPETS) == 4
    monkeypatch.chdir(tmp_path)
    with serving(tmp_path) as port:
        names = run_snippets(SNIPPETS, port)
        # The helper says a GraphQL error's code and message.
        with pytest.raises(RuntimeError) as raised:
            names["graphql"]('query Bad { leaderboard(task: "nope") { task { name } } }')
    every = task_rows(tmp_path / "snapshot", TASK, {})
    assert names["release"] == 1

    # The leaderboard: per model, its lowest energy per token within a median ITL of 500 ms.
    within = every[every["median_itl_ms"] <= 500]
    best = within.groupby("model_id")["energy_per_token_joules"].min().sort_values()
    joined = names["joined"]
    assert list(zip(joined["model_id"], joined["energy_per_token_joules"], strict=True)) == list(
        best.items()
    )
    leaders = names["leaders"]
    assert list(joined["rank"]) == list(leaders["rank"]) == list(range(1, len(best) + 1))
    assert list(joined["energy_per_token_joules"]) == list(leaders["energyJoules"])
    assert list(joined["model"]) == list(leaders["model.name"])
    # Every joined row is the exported row of the entry's configuration, settings included.
    settings = ["model_id", "gpu_model", "num_gpus", "max_num_seqs", "median_itl_ms"]
    chosen = every.merge(joined[settings], on=settings)
    assert len(chosen) == len(joined)

    # The pivot: the lowest energy per token of each model on each GPU type.
    expected = every.pivot_table(
        index="model_id", columns="gpu_model", values="energy_per_token_joules", aggfunc="min"
    )
    pd.testing.assert_frame_equal(names["table"], expected)

    # polars: per GPU type, the lowest energy per token and the number of configurations.
    per_gpu = names["per_gpu"].to_pandas()
    grouped = every.groupby("gpu_model")["energy_per_token_joules"]
    assert per_gpu.to_dict("list") == {
        "gpu_model": sorted(every["gpu_model"].unique()),
        "lowest": list(grouped.min()),
        "configurations": list(grouped.size()),
    }
    assert str(raised.value) == "BAD_USER_INPUT: unknown task 'nope' in `task`; `tasks` lists them"
