"""Hostile documents (the issue's class 2): what validation may cost is bounded before it runs.

The corpus (tests/corpus/hostile/documents/, each file saying the code it expects) holds the
documents that were slow, exponential or crashing, at and past each limit; a property test
holds graphql-core's own accounting of OverlappingFieldsCanBeMerged's work to a constant times
the breadth graph/engine/validation.py measures, over generated documents; the rate limiter takes
its fee for a new document before any of it is read; a request is answered within its time
limit from its first byte.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from graphql import SelectionSetNode, parse, specified_rules, validate
from graphql.validation.rules import overlapping_fields_can_be_merged as overlapping
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from graph.engine import validation
from graph.engine.validation import (
    Limits,
    field_merges,
    fragment_problem,
    selected_fields,
    validation_errors,
)
from graph.internals import core_schema
from graph.settings import Settings
from tests.conftest import SCHEMA, app_client, examples

pytestmark = pytest.mark.anyio

CORPUS = Path(__file__).parent / "corpus" / "hostile" / "documents"
CORE = core_schema(SCHEMA)
LIMITS = Limits.of(Settings.model_construct())


def expected(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), path
    return first.removeprefix("# expect: ")


def codes(body: dict[str, Any]) -> list[str]:
    return [e.get("extensions", {}).get("code") for e in body.get("errors", [])]


async def test_the_hostile_documents_get_their_codes(synthetic_db, client) -> None:
    """Every document of the corpus is answered with the code it names (or runs), and never
    with graphql-core's 'Validation aborted.' (the bound only stops a document that escapes
    the limits from hanging the run)."""
    failed = []
    for path in sorted(CORPUS.glob("*.graphql")):
        async with asyncio.timeout(60):
            response = await client.post("/graphql", json={"query": path.read_text()})
        body = response.json()
        found = codes(body)
        want = expected(path)
        ok = (not found) if want == "valid" else (found[:1] == [want])
        aborted = any(e["message"] == "Validation aborted." for e in body.get("errors", []))
        if not ok or aborted or response.status_code >= 500:
            failed.append(f"{path.name}: {response.status_code} {found}")
    assert not failed, "\n".join(failed)


def test_refusals_say_which_limit_and_what_it_is() -> None:
    repeated = parse("{ " + "__typename " * 64 + "}")
    [error] = validation_errors(repeated, CORE, tuple(specified_rules), LIMITS)
    assert (error.extensions, error.message.split(":")[0]) == (
        {"code": "TOO_MANY_FIELD_MERGES", "maxFieldMerges": 2000},
        "The query selects fields more than once at the same place (or spreads fragments side "
        "by side) so often that merging them takes more than 2000 comparisons, the limit",
    )
    wide = parse("{ " + "gpus { name } " * 600 + "}")
    [error] = validation_errors(wide, CORE, tuple(specified_rules), LIMITS)
    assert (error.extensions, error.message) == (
        {"code": "TOO_MANY_FIELDS", "maxFields": 1000},
        "The query selects more than 1000 fields (a fragment's counted wherever it is "
        "spread), the limit.",
    )


@pytest.mark.parametrize(
    ("document", "fields", "merges"),
    [
        ("{ gpus { name } models { slug } }", 4, 0),
        # a pair of objects (1), the 2 fields below them (2), the pair of names (1)
        ("{ gpus { name } gpus { name } }", 4, 1 + 2 + 1),
        ("{ __typename __typename __typename }", 3, 3),
        ("{ a: __typename b: __typename }", 2, 0),  # aliases: other response names
        ("{ ...F ...F } fragment F on Query { __typename }", 2, 4 + 1),  # spreads², a pair
        ("{ ...F gpus { name } } fragment F on Query { gpus { name } }", 4, 1 + 1 + 2 + 1),
        ("{ ... on Query { __typename } __typename }", 2, 1),
    ],
)
def test_what_breadth_counts(document: str, fields: int, merges: int) -> None:
    parsed = parse(document)
    assert (selected_fields(parsed, 10**6), field_merges(parsed, 10**6)) == (fields, merges)


def test_an_exponential_spread_is_counted_in_one_visit_per_node(monkeypatch) -> None:
    """2**60 spreads of F60 counted by one visit of each selection set: the operation's and
    each fragment's once."""
    chain = " ".join(f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(60))
    document = parse("{ ...F0 } " + chain + " fragment F60 on Query { __typename }")
    visited: list[SelectionSetNode] = []
    size = validation._Counter.size

    def counted(self: Any, selection_set: SelectionSetNode) -> int:
        visited.append(selection_set)
        return size(self, selection_set)

    monkeypatch.setattr(validation._Counter, "size", counted)
    assert selected_fields(document, 1000) == 1001
    assert len(visited) == len({id(s) for s in visited}) == 1 + 61


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ("{ ...A } fragment A on Query { __typename }", False),
        ("{ __typename } fragment A on Query { __typename }", True),  # unused
        ("{ ...B }", True),  # unknown
        ("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }", True),  # cycle
        ("{ ...A } fragment A on Query { ...A }", True),
        ("{ ...A ...B } fragment A on Query { ...B } fragment B on Query { __typename }", False),
    ],
)
def test_fragment_problems(document: str, problem: bool) -> None:
    parsed = parse(document)
    assert fragment_problem(parsed) is problem
    assert bool(validate(CORE, parsed)) is problem  # graphql-core agrees


# --- graphql-core's work is within a constant of the breadth -------------------------------


class Counted(overlapping.OverlappingFieldsCanBeMergedRule):
    """graphql-core's rule, keeping the budget it spent (its own accounting of its work)."""

    made: list[Counted] = []  # noqa: RUF012

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        Counted.made.append(self)

    @classmethod
    def spent(cls, document: Any) -> int:
        """The units the rule spent validating `document` (also when validation stopped at
        its error limit)."""
        cls.made.clear()
        validate(CORE, document, [cls])
        budget = overlapping.get_complexity_budget()
        return budget - cls.made[0].rule_context.remaining_complexity_budget


NAMES = ["__typename", "gpus { name }", "gpus { name fullName }", "models { slug }", "tasks"]
ALIASES = ["", "a: ", "b: "]


@st.composite
def selections(draw: Any, depth: int, spreadable: tuple[int, ...]) -> str:
    """A selection on Query: fields (repeated, aliased alike), inline fragments, spreads of
    the fragments given."""
    parts = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["field", "field", "field", "inline", "spread"]))
        if kind == "field" or (kind == "spread" and not spreadable):
            name = draw(st.sampled_from(NAMES))
            parts.append(
                draw(st.sampled_from(ALIASES)) + ("tasks { name }" if name == "tasks" else name)
            )
        elif kind == "inline" and depth < 3:
            parts.append("... on Query { " + draw(selections(depth + 1, spreadable)) + " }")
        elif kind == "spread":
            parts.append(f"...F{draw(st.sampled_from(spreadable))}")
    return " ".join(parts) or "__typename"


@st.composite
def documents(draw: Any) -> str:
    """An operation (its selection repeated 1 to 4 times) and four fragments, each spreading
    only later ones (no cycle), all spread."""
    fragments = [
        f"fragment F{i} on Query {{ {draw(selections(2, tuple(range(i + 1, 4))))} }}"
        for i in range(4)
    ]
    body = " ".join([draw(selections(0, (0, 1, 2, 3)))] * draw(st.integers(1, 4)))
    return "{ " + body + " ...F0 ...F1 ...F2 ...F3 } " + " ".join(fragments)


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(documents())
def test_graphql_cores_merging_work_is_bounded_by_the_breadth(text: str) -> None:
    """For any document our limits admit, the work graphql-core's OverlappingFieldsCanBeMerged
    counts (two units per compared pair, one per fragment or field map compared) is at most
    4 * (fields + merges + nodes): what is let through is what the limits said."""
    document = parse(text)
    if fragment_problem(document):
        return
    fields = selected_fields(document, LIMITS.fields)
    merges = field_merges(document, 10**9) if fields <= LIMITS.fields else 10**9
    if fields <= LIMITS.fields and merges <= LIMITS.field_merges:
        spent = Counted.spent(document)
        wide = fields + merges + len(text.split())
        target(spent / wide)  # steer the search to the costliest documents for their breadth
        assert spent <= 4 * wide, (spent, fields, merges)


# --- the rate limiter's fee for reading a document --------------------------------------------


def limited(settings: Settings, **more: Any) -> Settings:
    return settings.model_copy(
        update={
            "rate_limit": True,
            "rate_limit_capacity": 10_000,
            "rate_limit_restore_rate": 1 / 1024,
            "release_poll_seconds": 0,
            **more,
        }
    )


def available(response: httpx.Response) -> int:
    value: int = response.json()["extensions"]["cost"]["throttleStatus"]["currentlyAvailable"]
    return value


async def test_a_new_document_pays_for_its_reading_once(synthetic_db, settings) -> None:
    """4 points a byte (half a point a space), before it is parsed; the same document again,
    or another text of its tokens, pays only for its answer (the response cache's hit, or
    its run: its actual cost); a new document pays again."""
    # 12 bytes and 5 spaces: 48 + 2.5 points; the answer costs 5, uses 3.
    query = "{ gpus { name } }"
    async with app_client(limited(settings)) as (_, client):
        first = await client.post("/graphql", json={"query": query})
        again = await client.post("/graphql", json={"query": query})
        other = await client.post("/graphql", json={"query": query + "  # the same"})
        new = await client.post("/graphql", json={"query": "{gpus{slug:name}}"})  # 17 bytes
    assert (available(first), available(again), available(other), available(new)) == (
        10_000 - 51 - 3,
        10_000 - 51 - 3 - 3,
        10_000 - 51 - 3 - 3 - 3,
        10_000 - 51 - 3 - 3 - 3 - 68 - 3,
    )


async def test_a_document_the_bucket_cannot_pay_to_read_is_refused_unread(
    synthetic_db, settings
) -> None:
    """A fee past the bucket's capacity is paid from a full bucket (leaving it in debt, as a
    costly query does); then a new document is refused before it is read: THROTTLED, 429 with
    Retry-After."""
    document = "{ " + "__typename " * 40 + "}"  # 402 bytes and 41 spaces: 1,629 points
    async with app_client(limited(settings, rate_limit_capacity=1000)) as (_, client):
        first = await client.post("/graphql", json={"query": document})
        second = await client.post("/graphql", json={"query": "{ gpus { name } }"})
    assert codes(first.json()) == ["THROTTLED"]  # read, then its own cost is past the debt
    # 51 points to read `{ gpus { name } }`, 629 in debt, a point every 1,024 s.
    assert (second.status_code, second.headers["retry-after"]) == (429, str(680 * 1024))
    [error] = second.json()["errors"]
    assert error["extensions"] == {"code": "THROTTLED", "cost": 51, "retryAfter": 680 * 1024.0}
    assert error["message"] == (
        "Throttled: reading a new document of this size costs 51 and -629 of 1000 points are "
        "available, restoring 0.000976562 a second."
    )


# --- the request's time limit covers all of it -----------------------------------------------


async def test_a_body_sent_too_slowly_is_answered_504(synthetic_db, settings) -> None:
    """The time limit runs from the request's first byte: a client trickling its body is
    answered 504 REQUEST_TIMEOUT when it runs out."""
    sent: list[dict[str, Any]] = []

    received = 0

    async def receive() -> dict[str, Any]:
        """One byte of the body, then nothing more: a client that stalls."""
        nonlocal received
        received += 1
        if received > 1:
            await asyncio.Event().wait()
        return {"type": "http.request", "body": b" ", "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/graphql",
        "raw_path": b"/graphql",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
    }
    async with (
        app_client(settings, request_timeout_seconds=0.3) as (app, _),
        asyncio.timeout(30),  # a hang guard
    ):
        await app(scope, receive, send)
    assert sent[0]["status"] == 504
    assert b'"code":"REQUEST_TIMEOUT"' in sent[1]["body"]
