"""`extensions.cost` on every kind of answer /graphql gives (docs/keys.md): executed, with field
errors, refused by validation, the parser, a limit, the HTTP layer, the rate limiter or the
admission control; over GET and POST, batched or not, with rate limiting off and on."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import httpx
import pytest
from graphql import parse
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from graph.engine.cost import actual_cost
from graph.engine.prepared import Prepared
from graph.server.documents import MODEL_PAGE
from graph.settings import Settings
from tests.conftest import app_client
from tests.test_ratelimit import STILL, limited

pytestmark = pytest.mark.anyio
JSON = "application/json"
GQL = "application/graphql-response+json"
LARGE = 1_000_000_000  # a bucket no request of the test empties
TINY = 3  # a bucket every query but the smallest empties


@dataclass(frozen=True)
class Operation:
    """One GraphQL request: its document, variables and operation name."""

    document: str
    variables: dict[str, Any] | None = None
    name: str | None = None
    padding: int = 0  # spaces after the document (one past the size limit), kept out of reprs

    @property
    def query(self) -> str:
        return self.document + " " * self.padding

    def json(self) -> dict[str, Any]:
        return {"query": self.query, "variables": self.variables, "operationName": self.name}

    def params(self) -> dict[str, str]:
        found = {"query": self.query}
        if self.variables is not None:
            found["variables"] = json.dumps(self.variables)
        if self.name is not None:
            found["operationName"] = self.name
        return found


@dataclass(frozen=True)
class Ask:
    """An HTTP request to /graphql, and the operations its answers answer (one per body)."""

    method: str
    operations: tuple[Operation, ...] = ()
    batched: bool = False
    content: bytes | None = field(default=None, repr=False)
    headers: dict[str, str] = field(default_factory=dict)


WIDE = "{ " + " ".join(f"a{i}: __typename" for i in range(31)) + " }"
DEEP = "{ models { configurations(task: null) { model { configurations(task: null) { model { name } } } } } }"  # noqa: E501

fields = st.lists(st.sampled_from(["name", "tdpWatts"]), min_size=1, unique=True)
valid = st.one_of(
    fields.map(lambda f: Operation("{ gpus { " + " ".join(f) + " } }")),
    st.integers(0, 40).map(
        lambda n: Operation(f"{{ configurations(first: {n}) {{ totalCount nodes {{ id }} }} }}")
    ),
    st.sampled_from(["tiny-1b", "no-such-model"]).map(
        lambda slug: Operation(MODEL_PAGE, {"slug": slug})
    ),
)
field_errors = st.sampled_from(
    [
        Operation("{ configurations(first: -1) { totalCount } }"),
        Operation('{ configurations(filter: {gpu: "A100"}) { totalCount } }'),
        Operation("{ source(release: 99) { name } }"),
        Operation('{ model(slug: "tiny-1b", modelId: "acme/Tiny-1B") { name } gpus { name } }'),
    ]
)
request_errors = st.sampled_from(
    [
        Operation("{ qqq }"),  # validation
        Operation("{ gpus {"),  # the parser
        Operation("query A { gpus { name } }", name="B"),  # no such operation
        Operation(MODEL_PAGE, {"slug": 12}),  # a variable that does not fit
        Operation(DEEP),  # QUERY_TOO_COMPLEX
        Operation(WIDE),  # TOO_MANY_ALIASES
        Operation("{ gpus { name } }", padding=70_000),  # DOCUMENT_TOO_LARGE
    ]
)
operations = st.one_of(valid, field_errors, request_errors)
accepts = st.sampled_from([JSON, GQL])


@st.composite
def graphql_asks(draw: st.DrawFn) -> Ask:
    """A GraphQL request over GET or POST, or a batch of them."""
    headers = {"accept": draw(accepts)}
    if draw(st.booleans()):  # (a document past the size limit, over GET: past the URL's)
        operation = draw(operations)
        operation = dataclasses.replace(operation, padding=min(operation.padding, 20_000))
        return Ask("GET", (operation,), headers=headers)
    if draw(st.integers(0, 3)) == 0:
        batch = tuple(draw(st.lists(operations, min_size=1, max_size=3)))
        return Ask("POST", batch, batched=True, headers=headers)
    return Ask("POST", (draw(operations),), headers=headers)


refusals = st.sampled_from(
    [
        Ask("POST", content=b"{not json", headers={"content-type": JSON}),  # BAD_REQUEST
        Ask("POST", content=b"{}", headers={"content-type": "text/plain"}),  # UNSUPPORTED_MEDIA
        Ask("PATCH", content=b"{}", headers={"content-type": JSON}),  # METHOD_NOT_ALLOWED
        Ask("POST", content=b" " * 200_000, headers={"content-type": JSON}),  # BODY_TOO_LARGE
        Ask("POST", content=b"[{}, {}, {}, {}]", headers={"content-type": JSON}),  # BATCH_TOO_
        Ask(  # PERSISTED_QUERY_NOT_FOUND
            "POST",
            content=b'{"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "%s"}}}'
            % (b"ab" * 32),
            headers={"content-type": JSON},
        ),
        Ask(  # UNKNOWN_API_KEY (with keys configured), else run as the address's
            "POST",
            (Operation("{ gpus { name } }"),),
            headers={"x-api-key": "not-a-key"},
        ),
    ]
)
asks = st.one_of(graphql_asks(), refusals)
# The apps the requests go to: what each is, and the settings it runs with.
SHARED = {"batch_max": 3, "max_body_bytes": 100_000}
APPS: dict[str, dict[str, Any]] = {
    "rate limiting off": SHARED,
    "rate limiting on": {**SHARED, **limited(LARGE, api_keys=["k1"])},
    "a tiny bucket": {**SHARED, **limited(TINY)},
    "overloaded": {**SHARED, "max_in_flight": 0},
}
CAPACITY = {"rate limiting on": LARGE, "a tiny bucket": TINY, "partner keys": LARGE}
# Partner keys (docs/keys.md): one key may run its registered document alone; one's tier allows
# a request to cost 4 at most.
REGISTERED = "{ gpus { name } }"
PARTNER_KEYS = ("trusted-key", "tight-key")


def partner_keys(folder: Path) -> dict[str, Any]:
    documents = {sha(REGISTERED): REGISTERED}
    tiers = {
        "trusted": {"trusted_only": True, "documents": "documents.json"},
        "tight": {"max_cost": 4},
    }
    (folder / "documents.json").write_text(json.dumps(documents))
    lines = [
        f"[tiers.{name}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in spec.items())
        for name, spec in tiers.items()
    ]
    for key, tier in zip(PARTNER_KEYS, tiers, strict=True):
        lines.append(f'[keys.{tier}]\nsha256 = "{sha(key)}"\ntier = "{tier}"\n')
    (folder / "keys.toml").write_text("".join(lines))
    return {**SHARED, **limited(LARGE, partner_keys_file=folder / "keys.toml")}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def send(client: httpx.AsyncClient, ask: Ask) -> httpx.Response:
    if ask.content is not None:
        return await client.request(
            ask.method, "/graphql", content=ask.content, headers=ask.headers
        )
    if ask.method == "GET":
        return await client.get("/graphql", params=ask.operations[0].params(), headers=ask.headers)
    if ask.batched:
        body: Any = [o.json() for o in ask.operations]
    else:
        body = ask.operations[0].json()
    return await client.post("/graphql", json=body, headers=ask.headers)


def check(body: dict[str, Any], operation: Operation | None, app: str, get: bool) -> str:
    """The cost report of one answer is whole and consistent; what kind of answer it was."""
    report = body["extensions"]["cost"]
    requested, actual = report["requestedQueryCost"], report["actualQueryCost"]
    assert set(report) - {"throttleStatus"} == {"requestedQueryCost", "actualQueryCost"}, body
    errors = body.get("errors", [])
    executed = body.get("data") is not None or any("path" in e for e in errors)
    if executed:
        assert operation is not None, body
        prepared = Prepared(operation.query, parse(operation.query))
        assert actual == actual_cost(prepared, operation.name, body.get("data")), body
        assert requested is not None and actual <= requested, body
    else:
        assert actual is None, body
    throttle = report.get("throttleStatus")
    if app in CAPACITY:
        if executed and not get:  # the bucket was charged: its state is said
            assert throttle is not None, body
        if throttle is not None:
            assert set(throttle) == {"maximumAvailable", "currentlyAvailable", "restoreRate"}
            assert (throttle["maximumAvailable"], throttle["restoreRate"]) == (
                CAPACITY[app],
                STILL,
            )
            assert throttle["currentlyAvailable"] <= CAPACITY[app], body
    else:
        assert throttle is None, body
    if get and not errors:  # a public answer: no client's bucket in it
        assert throttle is None, body
    codes = sorted({(e.get("extensions") or {}).get("code") for e in errors})
    if "THROTTLED" in codes:  # refused by the bucket: what it holds is said
        assert throttle is not None, body
    return f"executed={executed} requested={requested is not None} {codes}"


async def test_every_answer_reports_its_cost(
    synthetic_db, settings: Settings, tmp_path: Path
) -> None:
    """Whatever was asked of whichever app: `extensions.cost` with both costs (null when not
    known), the actual cost that of what the answer holds and at most the requested one, and the
    state of the bucket charged, keyed to the app's bucket."""
    reached: Counter[str] = Counter()
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            name: (await stack.enter_async_context(app_client(settings, **update)))[1]
            for name, update in {**APPS, "partner keys": partner_keys(tmp_path)}.items()
        }

        @hypothesis_settings(
            max_examples=300,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(st.sampled_from(sorted(clients)), asks, st.sampled_from(PARTNER_KEYS))
        def prop(app: str, ask: Ask, key: str) -> None:
            if app == "partner keys" and "x-api-key" not in ask.headers:
                ask = dataclasses.replace(ask, headers={**ask.headers, "x-api-key": key})
            response = anyio.from_thread.run(send, clients[app], ask)
            answered = response.json()
            get = ask.method == "GET"
            if isinstance(answered, list):  # a batch: one answer per operation, in order
                assert len(answered) == len(ask.operations), answered
                for body, operation in zip(answered, ask.operations, strict=True):
                    reached[check(body, operation, app, get)] += 1
            else:
                single = ask.operations[0] if len(ask.operations) == 1 else None
                reached[check(answered, single, app, get)] += 1

        await anyio.to_thread.run_sync(prop)
    print(*(f"{n:5d}  {what}" for what, n in reached.most_common()), sep="\n")
    seen = " ".join(reached)
    for code in (
        "GRAPHQL_VALIDATION_FAILED",
        "GRAPHQL_PARSE_FAILED",
        "BAD_REQUEST",
        "BAD_USER_INPUT",
        "QUERY_TOO_COMPLEX",
        "TOO_MANY_ALIASES",
        "DOCUMENT_TOO_LARGE",
        "URL_TOO_LONG",
        "UNSUPPORTED_MEDIA_TYPE",
        "METHOD_NOT_ALLOWED",
        "BODY_TOO_LARGE",
        "BATCH_TOO_LARGE",
        "PERSISTED_QUERY_NOT_FOUND",
        "UNKNOWN_API_KEY",
        "THROTTLED",
        "OVERLOADED",
        "DOCUMENT_NOT_TRUSTED",
        "KEY_MAX_COST_EXCEEDED",
    ):
        assert code in seen, (code, reached)
    assert "executed=True requested=True []" in reached, reached
