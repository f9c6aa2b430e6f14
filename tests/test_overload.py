"""The overload check (bench/overload.py) in its short mode: `leadgreen serve` with
LEADGREEN_MAX_IN_FLIGHT=8 sent four times its measured capacity, open loop. Every request past
its in-flight bound is refused 503 OVERLOADED with Retry-After, nothing else (no 500, no broken
connection); the server keeps answering at least half its capacity; a refusal costs it a small
part of an answer's CPU, and comes sooner than an answer (at the median). The admitted p99 at
4x against 1x is printed, not asserted: on this machine it is 1.5 to 8 times (bench/HOSTILE.md,
"what does not")."""

from __future__ import annotations

import json

import pytest

from tests.live import quick_figures

pytestmark = pytest.mark.hostile


def test_four_times_the_capacity(tmp_path) -> None:
    measured = quick_figures("bench.overload", tmp_path)
    print(json.dumps(measured, indent=2))
    over = measured["at_4x"]
    for phase in ("closed_loop", "at_1x", "at_4x"):
        assert measured[phase]["other_answers"] == {}, phase
        assert measured[phase]["refused_without_retry_after"] == 0, phase
        assert measured[phase]["unsent"] == 0, phase
    assert measured["closed_loop"]["refused"] == 0  # as many connections as may be in flight
    assert over["refused"] >= over["requests"] / 2  # of 4x, about 3 in 4 are past capacity
    assert over["admitted"] + over["refused"] == over["requests"]
    assert over["answered_per_second"] >= measured["capacity_per_second"] / 2
    cpu = measured["server_cpu_ms"]
    assert cpu["per_refusal"] < cpu["per_answer"] / 5, cpu
    assert over["refusal_ms"]["p50"] < over["admitted_ms"]["p50"]
    assert measured["server_alive_after"]
