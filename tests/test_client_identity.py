"""Who sends a request, behind a reverse proxy or not (graph/server/ratelimit.py's `identify`,
after the app's first middleware: X-Forwarded-For believed from LEADGREEN_TRUSTED_PROXIES only).

Generated header chains: from a peer that is not a trusted proxy the header is ignored, whatever
it says; from a trusted proxy the client is the right-most address of the chain that is not a
trusted proxy's, through any number of trusted hops, IPv4 or IPv6 (an IPv6 client holds its
/64), with or without ports, in one header line or several; what a client wrote to the left of
it (addresses, garbage) is never believed; an empty header leaves the proxy's own address.
Then the bounds that key on the client: two users behind one proxy get a bucket and a
new-document bound each, in the app and through nginx (deploy/nginx.conf) in front of
`leadgreen serve`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graph.engine.prepared import PREPARING
from graph.server.ratelimit import believed_proxies, identify
from graph.settings import Settings
from tests.conftest import app_client
from tests.live import free_port, serving
from tests.live import stop as stop_server
from tests.test_adversarial_preparation import held_parsing, large, peer, until
from tests.test_ratelimit import limited

pytestmark = pytest.mark.anyio

TRUSTED = "10.0.0.0/8, 192.0.2.1, 2001:db8:a::/48"
NETWORKS = [ipaddress.ip_network(n.strip()) for n in TRUSTED.split(",")]


def trusted(host: str) -> bool:
    address = ipaddress.ip_address(host)
    return any(address in network for network in NETWORKS)


def identity(host: str) -> str:
    """The client's name as its buckets know it: the address, an IPv6 one's /64."""
    address = ipaddress.ip_address(host)
    if isinstance(address, ipaddress.IPv6Address):
        return f"addr:{ipaddress.IPv6Network((address, 64), strict=False)}"
    return f"addr:{address}"


TRUSTED_HOSTS = st.one_of(
    st.integers(0, 2**24 - 1).map(lambda n: str(ipaddress.IPv4Address(0x0A000000 + n))),
    st.just("192.0.2.1"),
    st.integers(0, 2**80 - 1).map(
        lambda n: str(ipaddress.IPv6Address(int(ipaddress.IPv6Address("2001:db8:a::")) + n))
    ),
)
UNTRUSTED_HOSTS = st.one_of(
    st.integers(0, 2**32 - 1)
    .map(lambda n: str(ipaddress.IPv4Address(n)))
    .filter(lambda h: not trusted(h)),
    st.integers(0, 2**128 - 1)
    .map(lambda n: str(ipaddress.IPv6Address(n)))
    .filter(lambda h: not trusted(h) and ipaddress.IPv6Address(h).ipv4_mapped is None),
)
GARBAGE = st.sampled_from(
    ["unknown", "_hidden", "", "1.2.3", "999.1.1.1", "not an ip", "[::1", "::1]", "a:b:c", "\t"]
)


def written(host: str, port: int | None) -> str:
    """An entry of X-Forwarded-For as a proxy may write it: bare, or with its port."""
    if port is None:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


ENTRY_PORTS = st.one_of(st.none(), st.integers(1, 65535))


@st.composite
def entries(draw: st.DrawFn, hosts: st.SearchStrategy[str], most: int) -> list[str]:
    return [written(h, draw(ENTRY_PORTS)) for h in draw(st.lists(hosts, max_size=most))]


def lines(draw: st.DrawFn, chain: list[str]) -> list[tuple[bytes, bytes]]:
    """The chain as X-Forwarded-For header lines (one, or several: each a run of it)."""
    if not chain:
        return []
    cuts = sorted(draw(st.sets(st.integers(1, len(chain) - 1), max_size=2))) if chain[1:] else []
    runs = [chain[a:b] for a, b in zip([0, *cuts], [*cuts, len(chain)], strict=True)]
    return [(b"x-forwarded-for", ", ".join(run).encode("latin-1")) for run in runs]


async def identified(peer_host: str, headers: list[tuple[bytes, bytes]]) -> str:
    """`identify` of a request from `peer_host` with these headers, after the app's first
    middleware as LEADGREEN_TRUSTED_PROXIES=TRUSTED makes it."""
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(identify(scope, b"", None))

    wrapped: Any = app
    for middleware in reversed(believed_proxies(Settings(trusted_proxies=TRUSTED))):
        wrapped = middleware.cls(wrapped, *middleware.args, **middleware.kwargs)
    scope = {"type": "http", "client": (peer_host, 40000), "headers": headers, "scheme": "http"}
    await wrapped(scope, None, None)
    return seen[0]


CLIENT_WRITTEN = st.lists(st.one_of(UNTRUSTED_HOSTS, TRUSTED_HOSTS, GARBAGE), max_size=4)


@given(data=st.data(), peer_host=UNTRUSTED_HOSTS, chain=CLIENT_WRITTEN)
@settings(max_examples=200)
def test_a_peer_not_trusted_is_the_client_whatever_it_forwards(data, peer_host, chain) -> None:
    headers = lines(data.draw, chain)
    assert asyncio.run(identified(peer_host, headers)) == identity(peer_host)


@given(
    data=st.data(),
    proxy=TRUSTED_HOSTS,
    client=UNTRUSTED_HOSTS,
    client_port=ENTRY_PORTS,
    spoofed=CLIENT_WRITTEN,
    hops=entries(TRUSTED_HOSTS, 5),
)
@settings(max_examples=300)
def test_behind_trusted_proxies_the_client_is_the_rightmost_untrusted_address(
    data, proxy, client, client_port, spoofed, hops
) -> None:
    """What the client wrote, then its address as the first proxy saw it, then the trusted
    hops after it (each proxy appends its peer): the client is that address."""
    chain = [*spoofed, written(client, client_port), *hops]
    assert asyncio.run(identified(proxy, lines(data.draw, chain))) == identity(client)


@pytest.mark.parametrize("headers", [[], [(b"x-forwarded-for", b"")], [(b"x-forwarded-for", b" ")]])
def test_a_trusted_proxy_forwarding_no_address_is_the_client(headers) -> None:
    assert asyncio.run(identified("10.1.2.3", headers)) == "addr:10.1.2.3"


def test_an_ipv6_client_behind_a_proxy_holds_its_64() -> None:
    headers = [(b"x-forwarded-for", b"[2001:db8:b:c:1::5]:4431, 2001:db8:a::7")]
    assert asyncio.run(identified("10.9.9.9", headers)) == "addr:2001:db8:b:c::/64"


def test_no_proxy_is_believed_by_default() -> None:
    assert believed_proxies(Settings()) == []


# --- the bounds keyed on the client, in the app -------------------------------------------


def behind(app: Any, proxy: str, user: str | None) -> httpx.AsyncClient:
    """A client reaching the app through the proxy at `proxy`, which forwards `user`."""
    headers = {"x-forwarded-for": user} if user is not None else {}
    transport = httpx.ASGITransport(app=app, client=(proxy, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://test", headers=headers)


CAPACITY = 10_000
BIG = "{ gpus { name } tasks { name } models { id name } }"
SMALL = "{ gpus { name } }"


def available(response: httpx.Response) -> int:
    return response.json()["extensions"]["cost"]["throttleStatus"]["currentlyAvailable"]


@pytest.mark.parametrize(
    ("proxies", "separate"), [("10.0.0.1", True), ("", False)], ids=["trusted", "not-trusted"]
)
async def test_two_users_behind_a_proxy_pay_from_buckets_of_their_own(
    synthetic_db, settings, proxies, separate
) -> None:
    """Behind a trusted proxy one user's spending leaves the other's bucket full, and a direct
    client naming that user in X-Forwarded-For pays from its own; behind a proxy not named,
    both users are the proxy and share its bucket."""
    overrides = limited(CAPACITY, trusted_proxies=[proxies] if proxies else [])
    async with app_client(settings, cache="off", **overrides) as (app, _):
        async with (
            behind(app, "10.0.0.1", "203.0.113.1") as one,
            behind(app, "10.0.0.1", "203.0.113.2") as two,
            behind(app, "198.51.100.7", "203.0.113.2") as spoofer,
        ):
            full = available(await two.post("/graphql", json={"query": SMALL}))
            spent = available(await one.post("/graphql", json={"query": BIG}))
            after = available(await two.post("/graphql", json={"query": SMALL}))
            spoofed = available(await spoofer.post("/graphql", json={"query": BIG}))
            last = available(await two.post("/graphql", json={"query": SMALL}))
    small = CAPACITY - full  # what the small query costs
    assert spent < full - small
    if separate:
        assert (after, spoofed, last) == (full - small, spent, full - 2 * small)
    else:  # one bucket for both users (the spoofer's own: fresh)
        assert (after, spoofed, last) == (spent - small, spent + small, spent - 2 * small)


async def test_two_users_behind_a_proxy_have_new_document_bounds_of_their_own(
    synthetic_db, settings, monkeypatch
) -> None:
    """One new document per client in preparation: a user behind the trusted proxy with one
    held is refused a second, while another user behind the same proxy is not."""
    monkeypatch.setattr(PREPARING, "per_client", 1)
    async with (
        app_client(settings, cache="off", trusted_proxies=["10.0.0.1"]) as (app, _),
        behind(app, "10.0.0.1", "203.0.113.1") as one,
        behind(app, "10.0.0.1", "203.0.113.2") as two,
    ):
        async with held_parsing(monkeypatch) as (release, reached):
            first = asyncio.create_task(one.post("/graphql", json={"query": large(1)}))
            await until(lambda: len(reached) == 1)
            again = await one.post("/graphql", json={"query": large(2)})
            other = asyncio.create_task(two.post("/graphql", json={"query": large(3)}))
            await until(lambda: PREPARING.large == 2)  # admitted (queued for the worker)
            release.set()
            answered = [await first, await other]
    assert again.json()["errors"][0]["extensions"]["code"] == "PREPARATION_BUSY"
    assert [r.json()["data"]["a0"] for r in answered] == ["Query", "Query"]
    assert PREPARING.clients == {}


async def test_the_same_users_behind_an_untrusted_peer_share_one_new_document_bound(
    synthetic_db, settings, monkeypatch
) -> None:
    monkeypatch.setattr(PREPARING, "per_client", 1)
    async with (
        app_client(settings, cache="off") as (app, _),
        peer(app, "10.0.0.1") as direct,
        behind(app, "10.0.0.1", "203.0.113.2") as two,
    ):
        async with held_parsing(monkeypatch) as (release, reached):
            first = asyncio.create_task(direct.post("/graphql", json={"query": large(1)}))
            await until(lambda: len(reached) == 1)
            refused = await two.post("/graphql", json={"query": large(3)})
            release.set()
            await first
    assert refused.json()["errors"][0]["extensions"]["code"] == "PREPARATION_BUSY"


# --- through nginx, in front of `leadgreen serve` -----------------------------------------


@pytest.fixture(scope="module")
def through_nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    """(nginx's port, the server's): `leadgreen serve` rate limited, trusting nginx's address
    (127.0.0.1), behind nginx configured from deploy/nginx.conf."""
    from tests.test_replicas import NGINX_CONF, nginx_config

    nginx_bin = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx_bin).exists():
        pytest.skip("nginx is not installed (scripts/tools-up)")
    directory = tmp_path_factory.mktemp("identity")
    with serving(
        directory,
        LEADGREEN_RATE_LIMIT="true",
        LEADGREEN_CACHE="off",
        LEADGREEN_LIMITS=f"standard,rate_limit_capacity={CAPACITY},"
        "rate_limit_restore_rate=0.001,rate_limit_byte_cost=0",
        LEADGREEN_TRUSTED_PROXIES="127.0.0.1",
    ) as port:
        prefix = Path(tempfile.mkdtemp(prefix="leadgreen-identity-nginx-"))
        (prefix / "logs").mkdir()
        listen = free_port()
        conf = prefix / "nginx.conf"
        conf.write_text(nginx_config(NGINX_CONF.read_text(), prefix, listen, [port]))
        nginx = subprocess.Popen(
            [nginx_bin, "-p", f"{prefix}/", "-c", str(conf), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(200):
                try:
                    if httpx.get(f"http://127.0.0.1:{listen}/healthz", timeout=1).is_success:
                        break
                except httpx.TransportError:
                    pass
                if nginx.poll() is not None:
                    raise AssertionError((prefix / "logs" / "error.log").read_text())
                subprocess.run(["sleep", "0.05"], check=True)  # (the fixture's wait, not a test's)
            yield listen, port
        finally:
            stop_server(nginx)  # type: ignore[arg-type]
            shutil.rmtree(prefix, ignore_errors=True)


def from_address(address: str, port: int) -> httpx.Client:
    """A user on 127.0.0.1 `port`'s machine whose connections come from `address`."""
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(transport=transport, base_url=f"http://127.0.0.1:{port}", timeout=10)


@pytest.mark.replicas
def test_through_nginx_two_users_pay_from_buckets_of_their_own(through_nginx) -> None:
    """Users at 127.0.0.2 and 127.0.0.3 behind nginx: the first one's big query leaves the
    second one's bucket full; X-Forwarded-For written by the first names the second in vain,
    through nginx and straight to the server."""
    listen, port = through_nginx
    query = {"query": BIG}
    with from_address("127.0.0.2", listen) as one, from_address("127.0.0.3", listen) as two:
        full = available(two.post("/graphql", json={"query": SMALL}))
        spent = available(one.post("/graphql", json=query))
        after = available(two.post("/graphql", json={"query": SMALL}))
        spoofing = one.post("/graphql", json=query, headers={"x-forwarded-for": "127.0.0.3"})
        last = available(two.post("/graphql", json={"query": SMALL}))
    with from_address("127.0.0.2", port) as direct:
        straight = direct.post("/graphql", json=query, headers={"x-forwarded-for": "127.0.0.3"})
    with from_address("127.0.0.3", listen) as two:
        final = available(two.post("/graphql", json={"query": SMALL}))
    small, big = CAPACITY - full, CAPACITY - spent
    assert big > small
    assert (after, last) == (full - small, full - 2 * small)
    assert available(spoofing) == CAPACITY - 2 * big
    assert (available(straight), final) == (CAPACITY - 3 * big, full - 3 * small)
