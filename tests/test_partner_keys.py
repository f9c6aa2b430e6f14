"""Partner keys (graph/server/partners.py): the keys file and its reload, the 401 of a key not
configured, trusted-only tiers, a tier's largest cost per request and its bucket, and the
`extensions.cost` each answer reports against what the bucket really holds."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import uuid
from pathlib import Path
from typing import Any

import httpx
import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings

from graph.server.partners import (
    CHECK_SECONDS,
    DEFAULT_TIER,
    KeysFileError,
    PartnerKeys,
    Tier,
    client_of,
    read_keys_file,
)
from graph.server.protocol import GraphQLRequest, Refusal, document_hash
from graph.settings import Settings
from tests.conftest import app_client, examples
from tests.live import serving, wait_until
from tests.reports import UNCOSTED
from tests.test_cache import needs_redis
from tests.test_ratelimit import DATA, GPUS, STILL, limited

pytestmark = pytest.mark.anyio

TASKS = "query Tasks { tasks { name } }"  # a registered document (requested 9)
GQL = "application/graphql-response+json"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def keys_file(
    folder: Path,
    tiers: dict[str, dict[str, Any]],
    keys: dict[str, tuple[str, str]],
    documents: dict[str, str] | None = None,
) -> Path:
    """A keys file: `tiers` as given, `keys` {name: (key, tier)} written as their SHA-256, and
    `documents` {hash: text} in partner-documents.json next to it."""
    if documents is not None:
        (folder / "partner-documents.json").write_text(json.dumps(documents))
    lines = []
    for name, spec in tiers.items():
        lines.append(f"[tiers.{name}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in spec.items()]
    for name, (key, tier) in keys.items():
        lines += [f"[keys.{name}]", f'sha256 = "{sha(key)}"', f'tier = "{tier}"']
    path = folder / "keys.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def keyed(path: Path, capacity: int = 1000, **more: Any) -> dict[str, Any]:
    return limited(capacity, partner_keys_file=path, **more)


def throttle(available: int, capacity: int) -> dict[str, Any]:
    return {"maximumAvailable": capacity, "currentlyAvailable": available, "restoreRate": STILL}


def gpus_answer(available: int, capacity: int) -> dict[str, Any]:
    cost = {
        "requestedQueryCost": 5,
        "actualQueryCost": 3,
        "throttleStatus": throttle(available, capacity),
    }
    return {"data": DATA, "extensions": {"cost": cost}}


def trusted_tiers(capacity: int = 50) -> dict[str, dict[str, Any]]:
    return {
        "partner": {
            "capacity": capacity,
            "restore_rate": STILL,
            "trusted_only": True,
            "documents": "partner-documents.json",
        },
        "capped": {"capacity": 100, "restore_rate": STILL, "max_cost": 4},
    }


KEYS = {"acme": ("acme-secret-key", "partner"), "small": ("small-secret-key", "capped")}


# --- the file ------------------------------------------------------------------------------


def test_a_keys_file_reads_into_tiers_and_keys(tmp_path: Path) -> None:
    path = keys_file(tmp_path, trusted_tiers(), KEYS, {sha(TASKS): TASKS})
    default = Tier(DEFAULT_TIER, 10, 1.0)
    keys = read_keys_file(path, default)
    partner, capped = keys.tiers["partner"], keys.tiers["capped"]
    assert (partner.name, partner.capacity, partner.restore_rate, partner.max_cost) == (
        "partner",
        50,
        STILL,
        None,
    )
    assert (partner.trusted_only, dict(partner.documents)) == (True, {sha(TASKS): TASKS})
    assert (capped.capacity, capped.max_cost, capped.trusted_only, dict(capped.documents)) == (
        100,
        4,
        False,
        {},
    )
    assert dict(keys.by_digest) == {
        sha("acme-secret-key"): partner,
        sha("small-secret-key"): capped,
    }
    assert keys.sources == (tmp_path / "partner-documents.json",)
    assert "acme-secret-key" not in path.read_text()  # the file holds digests only


BAD_FILES = [
    ("tiers = 3\n", "keys.toml: tiers: a table"),
    (
        "[tiers.a]\ncapacty = 5\n",
        "keys.toml: tiers.a: unknown capacty; known: capacity, documents, max_cost, "
        "restore_rate, trusted_only",
    ),
    ("[tiers.a]\ncapacity = 0\n", "keys.toml: tiers.a.capacity: 0 is not a positive int"),
    ("[tiers.a]\ncapacity = true\n", "keys.toml: tiers.a.capacity: True is not a positive int"),
    (
        "[tiers.a]\nrestore_rate = -1\n",
        "keys.toml: tiers.a.restore_rate: -1 is not a positive float",
    ),
    ("[tiers.a]\nmax_cost = 2.5\n", "keys.toml: tiers.a.max_cost: 2.5 is not a positive int"),
    (
        '[tiers.a]\ntrusted_only = "yes"\n',
        "keys.toml: tiers.a.trusted_only: 'yes' is not true or false",
    ),
    (
        "[tiers.a]\ntrusted_only = true\n",
        "keys.toml: tiers.a: trusted_only needs `documents` (none registered)",
    ),
    ("[tiers.a]\ndocuments = 7\n", "keys.toml: tiers.a.documents: a file name or a list of them"),
    (
        '[tiers.a]\ndocuments = "nowhere.json"\n',
        "keys.toml: tiers.a.documents: cannot read nowhere.json: No such file or directory",
    ),
    (
        '[keys.k]\nsha256 = "abc"\n',
        "keys.toml: keys.k.sha256: the key's SHA-256, 64 hexadecimal digits",
    ),
    (
        f'[keys.k]\nsha256 = "{"a" * 64}"\ntier = "gold"\n',
        "keys.toml: keys.k.tier: unknown tier 'gold'; one of default",
    ),
    (
        f'[keys.k]\nsha256 = "{"a" * 64}"\nkey = "x"\n',
        "keys.toml: keys.k: unknown key; known: sha256, tier",
    ),
    (
        f'[keys.k]\nsha256 = "{"a" * 64}"\n[keys.j]\nsha256 = "{"A" * 64}"\n',
        "keys.toml: keys.j.sha256: the same key as another entry",
    ),
    ("nonsense = [\n", "keys.toml: not TOML: "),
    ("wat = 1\n", "keys.toml: unknown wat; known: keys, tiers"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_a_bad_keys_file_says_what_and_where(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "keys.toml"
    path.write_text(text)
    with pytest.raises(KeysFileError) as raised:
        read_keys_file(path, Tier(DEFAULT_TIER, 10, 1.0))
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(
    ("documents", "message"),
    [
        ("[1]", "holds {hash: document}, not a JSON object"),
        ("{", "is not JSON"),
        (json.dumps({sha(TASKS): 3}), "is not a document's text"),
        # codegen's default hash, SHA-1: the file must say sha256
        (
            json.dumps({hashlib.sha1(TASKS.encode()).hexdigest(): TASKS}),
            "is not the SHA-256 of its document",
        ),
        (json.dumps({sha(TASKS + " "): TASKS}), "is not the SHA-256 of its document"),
    ],
)
def test_a_bad_documents_file_says_which_entry(
    tmp_path: Path, documents: str, message: str
) -> None:
    (tmp_path / "docs.json").write_text(documents)
    path = tmp_path / "keys.toml"
    path.write_text('[tiers.a]\ndocuments = ["docs.json"]\n')
    with pytest.raises(
        KeysFileError, match=r"keys\.toml: tiers\.a\.documents: docs\.json"
    ) as raised:
        read_keys_file(path, Tier(DEFAULT_TIER, 10, 1.0))
    assert message in str(raised.value)


def test_documents_by_graphql_over_http_ids_are_read_too(tmp_path: Path) -> None:
    (tmp_path / "docs.json").write_text(json.dumps({"sha256:" + sha(TASKS): TASKS}))
    path = tmp_path / "keys.toml"
    path.write_text('[tiers.a]\ndocuments = "docs.json"\n')
    assert dict(read_keys_file(path, Tier(DEFAULT_TIER, 1, 1.0)).tiers["a"].documents) == {
        sha(TASKS): TASKS
    }


def test_the_keys_file_needs_rate_limiting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="LEADGREEN_PARTNER_KEYS_FILE needs LEADGREEN_RATE_LIMIT"):
        Settings(partner_keys_file=tmp_path / "keys.toml")


# --- reloading ------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_file_is_read_again_once_it_changes(tmp_path: Path, caplog) -> None:
    """Looked at once per CHECK_SECONDS (the clock injected); a change takes effect at the next
    look; a file that no longer reads keeps the keys held, logs why, and logs no key."""
    caplog.set_level(logging.INFO)
    path = keys_file(tmp_path, {}, {"a": ("first-key", DEFAULT_TIER)})
    clock = Clock()
    partners = PartnerKeys(Settings(rate_limit=True, partner_keys_file=path), clock)
    assert partners.lookup(b"first-key") == client_of(sha("first-key"))

    keys_file(tmp_path, {"t": {"capacity": 7}}, {"b": ("second-key", "t")})
    with pytest.raises(Refusal):  # not looked at yet
        partners.lookup(b"second-key")
    clock.now += CHECK_SECONDS
    assert partners.lookup(b"second-key") == client_of(sha("second-key"))
    assert partners.tier(client_of(sha("second-key"))).capacity == 7
    with pytest.raises(Refusal) as gone:
        partners.lookup(b"first-key")
    assert gone.value.code == "UNKNOWN_API_KEY"

    path.write_text("[keys.c]\nsha256 = 'not a digest'\n")
    assert partners.reload() is False
    assert partners.reload() is False  # the same bad file: logged once
    assert partners.lookup(b"second-key") == client_of(sha("second-key"))
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [
        "partner keys file not reloaded, the keys held stay: keys.toml: keys.c.sha256: the "
        "key's SHA-256, 64 hexadecimal digits"
    ]
    logged = caplog.text
    assert not [k for k in ("first-key", "second-key", sha("second-key")[:16]) if k in logged]


def test_a_changed_documents_file_is_read_again(tmp_path: Path) -> None:
    path = keys_file(tmp_path, trusted_tiers(), KEYS, {sha(TASKS): TASKS})
    partners = PartnerKeys(Settings(rate_limit=True, partner_keys_file=path), Clock())
    partner = partners.tier(client_of(sha("acme-secret-key")))
    assert list(partner.documents) == [sha(TASKS)]
    (tmp_path / "partner-documents.json").write_text(
        json.dumps({sha(GPUS): GPUS, sha(TASKS): TASKS})
    )
    assert partners.reload() is True
    assert sorted(partners.tier(client_of(sha("acme-secret-key"))).documents) == sorted(
        [sha(GPUS), sha(TASKS)]
    )
    assert partners.reload() is False  # nothing changed since


# --- trusted documents ------------------------------------------------------------------------


class NoPersisted:
    """Persisted queries that must not be asked (a trusted-only tier never falls back)."""

    async def resolve(self, request: GraphQLRequest) -> str | None:
        raise AssertionError("asked the persisted queries")


TRUSTED = Tier(
    "partner", 10, 1.0, trusted_only=True, documents={sha(TASKS): TASKS, sha(GPUS): GPUS}
)


@given(
    document=st.sampled_from([TASKS, GPUS]),
    at=st.integers(min_value=0),
    byte=st.integers(0, 127),
    by_hash=st.booleans(),
)
@hsettings(max_examples=examples(200), suppress_health_check=[HealthCheck.function_scoped_fixture])
async def test_a_document_one_byte_away_from_a_registered_one_is_refused(
    document: str, at: int, byte: int, by_hash: bool
) -> None:
    at %= len(document)
    changed = document[:at] + chr(byte) + document[at + 1 :]
    request = (
        GraphQLRequest(None, None, None, persisted_hash=document_hash(changed))
        if by_hash
        else GraphQLRequest(changed, None, None)
    )
    if changed == document:
        assert await TRUSTED.resolve(request, NoPersisted()) == document  # type: ignore[arg-type]
        return
    with pytest.raises(Refusal) as refused:
        await TRUSTED.resolve(request, NoPersisted())  # type: ignore[arg-type]
    assert (refused.value.status, refused.value.code) == (403, "DOCUMENT_NOT_TRUSTED")


@given(text=st.text(max_size=200))
@hsettings(max_examples=examples(100))
async def test_no_other_document_is_trusted(text: str) -> None:
    """Any text but the registered ones, sent as text, or by hash with or without the text."""
    if text in (TASKS, GPUS):
        return
    for request in (
        GraphQLRequest(text, None, None),
        GraphQLRequest(None, None, None, persisted_hash=document_hash(text)),
        GraphQLRequest(text, None, None, persisted_hash=document_hash(text)),
        GraphQLRequest(
            text, None, None, persisted_hash=sha(TASKS)
        ),  # a registered hash, other text
    ):
        with pytest.raises(Refusal) as refused:
            await TRUSTED.resolve(request, NoPersisted())  # type: ignore[arg-type]
        assert refused.value.code == "DOCUMENT_NOT_TRUSTED"


async def test_a_trusted_only_key_runs_its_documents_and_nothing_else(
    synthetic_db, settings, tmp_path: Path
) -> None:
    path = keys_file(tmp_path, trusted_tiers(capacity=50), KEYS, {sha(TASKS): TASKS})
    acme = {"x-api-key": "acme-secret-key"}
    by_hash = {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": sha(TASKS)}}}
    async with app_client(settings, **keyed(path)) as (app, client):
        hashed = await client.post("/graphql", json=by_hash, headers=acme)
        as_text = await client.post("/graphql", json={"query": TASKS}, headers=acme)
        other = await client.post("/graphql", json={"query": GPUS}, headers=acme)
        registering = await client.post(
            "/graphql",
            json={
                "query": GPUS,
                "extensions": {"persistedQuery": {"version": 1, "sha256Hash": sha(GPUS)}},
            },
            headers=acme,
        )
        over_get = await client.get(
            "/graphql", params={"query": GPUS}, headers={**acme, "accept": GQL}
        )
        anonymous = await client.post("/graphql", json={"query": GPUS})  # others: undisturbed
        after = await client.post("/graphql", json={"query": TASKS}, headers=acme)
        limiter = app.state.graphql.limiter
        held = limiter._local(limiter.tier(client_of(sha("acme-secret-key")))).available(
            client_of(sha("acme-secret-key")), 0.0
        )
    tasks = hashed.json()["data"]["tasks"]
    refused = {
        "errors": [
            {
                "message": "This API key's tier (partner) runs only its registered documents; "
                "this one is not registered.",
                "extensions": {"code": "DOCUMENT_NOT_TRUSTED"},
            }
        ],
        "extensions": UNCOSTED,
    }
    assert [(r.status_code, r.json()) for r in (other, registering, over_get)] == [
        (403, refused)
    ] * 3
    # 9 requested, the actual cost (one task: 2) kept each time: 50 - 2 (miss) - 2 - 2 (hits)
    cost = {"requestedQueryCost": 9, "actualQueryCost": 2}
    assert [r.json() for r in (hashed, as_text, after)] == [
        {
            "data": {"tasks": tasks},
            "extensions": {"cost": {**cost, "throttleStatus": throttle(n, 50)}},
        }
        for n in (48, 46, 44)
    ]
    assert math.floor(held) == 44  # what the last answer said the bucket holds
    assert anonymous.json() == gpus_answer(997, 1000)


# --- 401, the tier's largest cost, its bucket ----------------------------------------------------


async def test_a_key_not_configured_is_401_and_charged_nothing(
    synthetic_db, settings, tmp_path: Path
) -> None:
    path = keys_file(tmp_path, trusted_tiers(), KEYS, {sha(TASKS): TASKS})
    async with app_client(settings, **keyed(path, capacity=100)) as (_, client):
        before = await client.post("/graphql", json={"query": GPUS})
        refused = [
            await client.post("/graphql", json={"query": GPUS}, headers={"x-api-key": key})
            for key in ("acme-secret-key ", "ACME-SECRET-KEY", "invented", sha("acme-secret-key"))
        ]
        get = await client.get("/graphql", params={"query": GPUS}, headers={"x-api-key": "x"})
        after = await client.post("/graphql", json={"query": GPUS})
    unknown = {
        "errors": [
            {
                "message": "The API key (X-API-Key) is not one this service knows.",
                "extensions": {"code": "UNKNOWN_API_KEY"},
            }
        ],
        "extensions": UNCOSTED,
    }
    assert [(r.status_code, r.headers["www-authenticate"], r.json()) for r in [*refused, get]] == [
        (401, 'ApiKey header="X-API-Key"', unknown)
    ] * 5
    assert (before.json(), after.json()) == (gpus_answer(97, 100), gpus_answer(94, 100))


async def test_a_query_past_the_tiers_largest_cost_is_refused_cached_or_not(
    synthetic_db, settings, tmp_path: Path
) -> None:
    """GPUS requests 5, the `capped` tier allows 4: refused before it runs, and when another
    client's run left its answer in the cache; the tier's bucket is not touched."""
    path = keys_file(tmp_path, trusted_tiers(), KEYS, {sha(TASKS): TASKS})
    small = {"x-api-key": "small-secret-key"}
    async with app_client(settings, **keyed(path)) as (_, client):
        miss = await client.post("/graphql", json={"query": GPUS}, headers=small)
        strict = await client.post(
            "/graphql", json={"query": GPUS}, headers={**small, "accept": GQL}
        )
        await client.post("/graphql", json={"query": GPUS})  # stored by an anonymous client
        hit = await client.post("/graphql", json={"query": GPUS}, headers=small)
        hit_strict = await client.post(
            "/graphql", json={"query": GPUS}, headers={**small, "accept": GQL}
        )
        cheap = await client.post("/graphql", json={"query": "{ __typename }"}, headers=small)
    error = {
        "message": "The query costs 5, more than the limit of 4 of this API key's tier (capped).",
        "extensions": {"code": "KEY_MAX_COST_EXCEEDED", "cost": 5, "maxCost": 4},
    }
    cost = {"cost": {"requestedQueryCost": 5, "actualQueryCost": None}}
    assert [(r.status_code, r.json()) for r in (miss, hit)] == [
        (200, {"data": None, "errors": [error], "extensions": cost})
    ] * 2
    assert [(r.status_code, r.json()) for r in (strict, hit_strict)] == [
        (400, {"errors": [error], "extensions": cost})
    ] * 2
    # `{ __typename }` requests 1: within the tier's 4, and the first charge of its bucket
    assert cheap.json() == {
        "data": {"__typename": "Query"},
        "extensions": {
            "cost": {
                "requestedQueryCost": 1,
                "actualQueryCost": 1,
                "throttleStatus": {**throttle(99, 100)},
            }
        },
    }


async def test_a_tiers_bucket_is_its_quota(synthetic_db, settings, tmp_path: Path) -> None:
    """A key pays from its own tier's bucket (capacity 8 here, the default's 1000), and the
    cost each answer reports is what the bucket then holds."""
    path = keys_file(
        tmp_path, {"tiny": {"capacity": 8, "restore_rate": STILL}}, {"t": ("tiny-key", "tiny")}
    )
    tiny = {"x-api-key": "tiny-key"}
    async with app_client(settings, **keyed(path)) as (app, client):
        miss = await client.post("/graphql", json={"query": GPUS}, headers=tiny)  # 8 - 5 + 2
        hit = await client.post("/graphql", json={"query": GPUS}, headers=tiny)  # 5 - 3
        throttled = await client.post("/graphql", json={"query": GPUS}, headers=tiny)
        anonymous = await client.post("/graphql", json={"query": GPUS})
        limiter = app.state.graphql.limiter
        client_id = client_of(sha("tiny-key"))
        held = limiter._local(limiter.tier(client_id)).available(client_id, 0.0)
    assert (miss.json(), hit.json()) == (gpus_answer(5, 8), gpus_answer(2, 8))
    assert (throttled.status_code, throttled.json()["errors"][0]["extensions"]["code"]) == (
        429,
        "THROTTLED",
    )
    assert throttled.json()["extensions"] == {
        "cost": {"requestedQueryCost": 3, "actualQueryCost": None, "throttleStatus": throttle(2, 8)}
    }
    assert math.floor(held) == 2
    assert anonymous.json() == gpus_answer(997, 1000)


async def test_an_answer_with_errors_reports_the_bucket_too(
    synthetic_db, settings, tmp_path: Path
) -> None:
    path = keys_file(
        tmp_path, {"tiny": {"capacity": 8, "restore_rate": STILL}}, {"t": ("tiny-key", "tiny")}
    )
    async with app_client(settings, **keyed(path)) as (_, client):
        failed = await client.post(
            "/graphql",
            json={"query": "{ configurations(first: -1) { totalCount } }"},
            headers={"x-api-key": "tiny-key"},
        )
        after = await client.post(
            "/graphql", json={"query": GPUS}, headers={"x-api-key": "tiny-key"}
        )
    # 2 requested and taken, nothing answered: all of it given back
    assert failed.json()["extensions"] == {
        "cost": {"requestedQueryCost": 2, "actualQueryCost": 0, "throttleStatus": throttle(8, 8)}
    }
    assert failed.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert after.json() == gpus_answer(5, 8)


async def test_environment_keys_pay_from_the_default_bucket(
    synthetic_db, settings, tmp_path: Path
) -> None:
    path = keys_file(tmp_path, {"tiny": {"capacity": 8}}, {"t": ("tiny-key", "tiny")})
    extra = keyed(path, capacity=100, api_keys=["env-key"])
    async with app_client(settings, **extra) as (_, client):
        env = await client.post("/graphql", json={"query": GPUS}, headers={"x-api-key": "env-key"})
        filed = await client.post(
            "/graphql", json={"query": GPUS}, headers={"x-api-key": "tiny-key"}
        )
    assert env.json() == gpus_answer(97, 100)
    assert filed.json()["extensions"]["cost"]["throttleStatus"]["maximumAvailable"] == 8


async def test_no_key_reaches_the_logs(
    synthetic_db, settings, tmp_path: Path, caplog, capsys
) -> None:
    caplog.set_level(logging.DEBUG)
    path = keys_file(tmp_path, trusted_tiers(), KEYS, {sha(TASKS): TASKS})
    async with app_client(settings, **keyed(path)) as (_, client):
        for key in ("acme-secret-key", "small-secret-key", "invented-secret-key"):
            for query in (TASKS, GPUS):
                await client.post("/graphql", json={"query": query}, headers={"x-api-key": key})
        metrics = (await client.get("/metrics")).text
    logged = caplog.text + capsys.readouterr().out
    assert '"status":403' in logged and '"status":401' in logged  # the request lines are here
    secrets = ["secret-key", *(sha(k)[:12] for k in ("acme-secret-key", "small-secret-key"))]
    assert [s for s in secrets if s in logged or s in metrics] == []


@needs_redis
async def test_a_keys_bucket_is_shared_through_redis(
    synthetic_db, settings, tmp_path: Path
) -> None:
    key = uuid.uuid4().hex  # a bucket no earlier run can have used
    path = keys_file(
        tmp_path, {"tiny": {"capacity": 8, "restore_rate": STILL}}, {"t": (key, "tiny")}
    )
    extra = keyed(path, cache="redis")
    async with app_client(settings, **extra) as (_, first):
        one = await first.post("/graphql", json={"query": GPUS}, headers={"x-api-key": key})
    async with app_client(settings, **extra) as (second_app, second):
        two = await second.post("/graphql", json={"query": GPUS}, headers={"x-api-key": key})
        three = await second.post("/graphql", json={"query": GPUS}, headers={"x-api-key": key})
        held = await second_app.state.graphql.limiter.redis.hget(
            f"leadgreen:bucket:{client_of(sha(key))}", "p"
        )
    assert (one.json(), two.json()) == (gpus_answer(5, 8), gpus_answer(2, 8))
    assert three.status_code == 429
    assert math.floor(float(held)) == 2  # what the answers said Redis holds


# --- a real server --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_served_process_reads_the_changed_file_and_logs_no_key(tmp_path: Path) -> None:
    """`leadgreen serve` with a keys file: a key added while it runs is served within a look
    or two (CHECK_SECONDS), a key removed is refused from then on, and the server's log (its
    request lines at info) holds neither key nor digest."""
    tiny = {"tiny": {"capacity": 8, "restore_rate": STILL}}
    path = keys_file(tmp_path, tiny, {"a": ("key-a-secret", "tiny")})
    env = {
        "LEADGREEN_RATE_LIMIT": "true",
        "LEADGREEN_PARTNER_KEYS_FILE": str(path),
        "LEADGREEN_LOG_LEVEL": "info",
        "LEADGREEN_LIMITS": "standard,rate_limit_byte_cost=0",  # as `limited` has it
    }
    with serving(tmp_path, **env) as port:
        url = f"http://127.0.0.1:{port}/graphql"

        def ask(key: str) -> httpx.Response:
            return httpx.post(url, json={"query": GPUS}, headers={"x-api-key": key}, timeout=10)

        first, unknown = ask("key-a-secret"), ask("key-b-secret")
        keys_file(tmp_path, tiny, {"b": ("key-b-secret", "tiny")})
        added = wait_until(
            lambda: (r := ask("key-b-secret")).status_code == 200 and r, 10, "the new key"
        )
        removed = ask("key-a-secret")
    assert first.json() == gpus_answer(5, 8)
    assert [r.status_code for r in (unknown, removed)] == [401, 401]
    assert added.json() == gpus_answer(5, 8)  # a bucket of its own
    log = (tmp_path / "serve.log").read_text()
    assert log.count('"status":401,"code":"UNKNOWN_API_KEY"') >= 2  # the request lines
    assert "partner keys reloaded: 1 keys in 2 tiers" in log
    secrets = ["key-a-secret", "key-b-secret", sha("key-a-secret")[:12], sha("key-b-secret")[:12]]
    assert [s for s in secrets if s in log] == []
