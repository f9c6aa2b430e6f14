"""What partner keys cost the warm path: the model page answered from the response cache, in
this process through ASGI (no server, no network), with rate limiting on, for an anonymous
client (the baseline), a key of a tier of its own, and a trusted-only key naming its document
by hash; and with rate limiting off for reference.

    .venv/bin/python -m bench.keys [--rounds N] [--calls N] [--without-keys]

(--without-keys: the modes without a key alone, which run on code before partner keys too:
the before/after of the warm path.)

Each mode's CPU time of this thread per request, the least over the rounds (the modes take
turns, in another order each round), and its ratio to the baseline's (1.00: free).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import databases
from bench.__main__ import MANIFEST, SNAPSHOT
from bench.observability_asgi import request as model_page
from bench.queries import DEFAULT_SLUG
from graph.server.app import create_app
from graph.server.documents import MODEL_PAGE
from graph.settings import Settings

KEY = b"bench-partner-key"
TRUSTED_KEY = b"bench-trusted-key"
BUCKET = {"rate_limit_capacity": 10**12, "rate_limit_restore_rate": 10**9}


def keys_file(folder: Path) -> Path:
    digest = hashlib.sha256(MODEL_PAGE.encode()).hexdigest()
    (folder / "documents.json").write_text(json.dumps({digest: MODEL_PAGE}))
    path = folder / "keys.toml"
    path.write_text(
        "[tiers.partner]\ncapacity = 1000000000000\nrestore_rate = 1000000000\n"
        "[tiers.trusted]\ncapacity = 1000000000000\nrestore_rate = 1000000000\n"
        'trusted_only = true\ndocuments = "documents.json"\n'
        f'[keys.p]\nsha256 = "{hashlib.sha256(KEY).hexdigest()}"\ntier = "partner"\n'
        f'[keys.t]\nsha256 = "{hashlib.sha256(TRUSTED_KEY).hexdigest()}"\ntier = "trusted"\n'
    )
    return path


def request(key: bytes, by_hash: bool, text: bool = True) -> tuple[dict[str, Any], bytes]:
    """The model page's request: its text, its hash (the APQ extension), or both."""
    payload: dict[str, Any] = {"variables": {"slug": DEFAULT_SLUG}}
    if text:
        payload["query"] = MODEL_PAGE
    if by_hash:
        digest = hashlib.sha256(MODEL_PAGE.encode()).hexdigest()
        payload["extensions"] = {"persistedQuery": {"version": 1, "sha256Hash": digest}}
    body = json.dumps(payload).encode()
    scope, _ = model_page(DEFAULT_SLUG)  # bench.observability's, with this body and key
    headers = [(name, value) for name, value in scope["headers"] if name != b"content-length"]
    headers.append((b"content-length", b"%d" % len(body)))
    if key:
        headers.append((b"x-api-key", key))
    scope["headers"] = headers
    return scope, body


async def cpu_per_request(app: Any, scope: dict[str, Any], body: bytes, calls: int) -> float:
    sent: list[int] = []
    last = [b""]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent.append(message["status"])
        elif message["type"] == "http.response.body":
            last[0] = message.get("body", b"")

    started = time.thread_time()
    for _ in range(calls):
        await app(dict(scope), receive, send)
    took = (time.thread_time() - started) / calls
    assert set(sent) == {200} and last[0].startswith(b'{"data":{"model":{'), last[0][:200]
    app.state.request_log.flush()
    return took


async def measure(
    url: str, folder: Path, rounds: int, calls: int, keys: bool = True
) -> dict[str, float]:
    path = keys_file(folder)
    base = {"database_url": url, "log_level": "warning", "metrics": False}
    modes = {
        "rate limiting off": (Settings(**base), b"", False),
        "anonymous (baseline)": (Settings(**base, rate_limit=True, **BUCKET), b"", False),
        "anonymous, persisted query by hash": (
            Settings(**base, rate_limit=True, **BUCKET),
            b"",
            True,
        ),
    }
    if keys:
        keyed = {**base, "rate_limit": True, "partner_keys_file": path, **BUCKET}
        modes["partner key"] = (Settings(**keyed), KEY, False)
        modes["trusted-only key, by hash"] = (Settings(**keyed), TRUSTED_KEY, True)
    apps, closers = {}, []
    for mode, (settings, key, by_hash) in modes.items():
        if key and not keys:
            continue
        app = create_app(settings)
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        closers.append(lifespan)
        app.state.request_log.stream = open(os.devnull, "w")
        apps[mode] = (app, *request(key, by_hash, text=not by_hash))
        await cpu_per_request(app, *request(key, by_hash), 1)  # registered (APQ)
        await cpu_per_request(*apps[mode], calls // 3)  # warm: the answer is cached
    found: dict[str, float] = {}
    names = list(apps)
    for round_ in range(rounds):
        for mode in names[round_ % len(names) :] + names[: round_ % len(names)]:
            seconds = await cpu_per_request(*apps[mode], calls)
            found[mode] = min(found.get(mode, seconds), seconds)
    for lifespan in closers:
        await lifespan.__aexit__(None, None, None)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.keys", description=__doc__)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--without-keys", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="leadgreen-keys-") as tmp:
        with databases.database("sqlite", Path(tmp)) as url:
            databases.ingest(url, SNAPSHOT, MANIFEST)
            keys = not args.without_keys
            found = asyncio.run(measure(url, Path(tmp), args.rounds, args.calls, keys))
    baseline = found["anonymous (baseline)"]
    print("| model page, warm, in process | CPU µs/request | / baseline |")
    print("|---|---:|---:|")
    for mode, seconds in found.items():
        print(f"| {mode} | {seconds * 1e6:.1f} | {seconds / baseline:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
