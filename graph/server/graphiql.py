"""GraphiQL, self-hosted: the page browsers get at /graphql and its assets at /static/graphiql/.

scripts/build-graphiql bundles web/graphiql/ into graph/server/static/graphiql/ (a build output,
not in git): content-hashed assets, the page template, the default configuration (the example
tabs) and manifest.json naming the assets. Nothing is loaded from another host; the page runs
under `CSP`. Without a build, a browser asking for GraphiQL gets a 503 page saying how to build.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route
from starlette.types import Scope, Send

from graph.caches import Bounded
from graph.server.responses import choose

log = logging.getLogger("leadgreen")

STATIC = Path(__file__).resolve().parent / "static" / "graphiql"
ASSETS = "/static/graphiql"
PLACEHOLDER = "__GRAPHIQL_CONFIG__"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'"
)
PAGE_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    # /graphql answers GraphQL to the same URL: a shared cache must not give one for the other.
    (b"vary", b"accept"),
]
# The page names the assets of one build: revalidated on every visit. The assets' names change
# with their content: kept for a year.
PAGE_CACHE = (b"cache-control", b"no-cache")
ASSET_HEADERS = {
    "cache-control": "public, max-age=31536000, immutable",
    "x-content-type-options": "nosniff",
    "vary": "accept-encoding",
}
MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
    ".ttf": "font/ttf",
}
# Precompressed copies the build writes next to an asset (NAME.br, NAME.gz).
ENCODINGS = ((b"br", ".br"), (b"gzip", ".gz"))
NOT_BUILT = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>GraphiQL is not built</title></head>
<body><h1>GraphiQL is not built on this server</h1>
<p>The API works: send GraphQL to this address with POST (a JSON body) or GET
(<code>?query=</code>). GraphiQL's assets, though, are missing.</p>
<p>Operator: build them with <code>scripts/build-graphiql</code> (Node.js 20+ and npm; the Docker
image has them built in), then restart the server. Set <code>LEADGREEN_GRAPHIQL=false</code>
to turn GraphiQL off.</p></body></html>
"""


def config_json(config: dict[str, Any]) -> str:
    """`config` as JSON that cannot end its <script> element or open a comment in it."""
    text = orjson.dumps(config).decode()
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


@dataclass(frozen=True)
class Build:
    """What scripts/build-graphiql wrote: the page template, its configuration, the assets."""

    template: str
    config: dict[str, Any]
    # Asset name -> its file and its precompressed copies by content coding.
    assets: dict[str, tuple[Path, dict[bytes, Path]]] = field(default_factory=dict)

    @classmethod
    def read(cls, directory: Path) -> Build:
        """The build in `directory`; OSError or ValueError when missing or incomplete."""
        manifest = orjson.loads((directory / "manifest.json").read_bytes())
        names = [
            manifest["graphiql.js"],
            manifest["graphiql.css"],
            *manifest.get("workers", {}).values(),
            *manifest.get("fonts", []),
        ]
        template = (directory / "index.html").read_text("utf-8")
        if PLACEHOLDER not in template:
            raise ValueError(f"index.html has no {PLACEHOLDER}")
        assets = {}
        for name in names:
            if "/" in name or name.startswith(".") or not (directory / name).is_file():
                raise ValueError(f"asset {name!r} is missing")
            copies = {c: directory / (name + s) for c, s in ENCODINGS}
            assets[name] = (directory / name, {c: p for c, p in copies.items() if p.is_file()})
        config = orjson.loads((directory / "config.json").read_bytes())
        return cls(template, config, assets)


class GraphiQL:
    """The page at /graphql (per root path) and the routes of its assets."""

    def __init__(self, build: Build | None) -> None:
        self.build = build
        # The page per root path (a server's setting: one or two).
        self._pages: Bounded[str, bytes] = Bounded(1024 * 1024, len)

    @classmethod
    def load(cls, directory: Path | None = None) -> GraphiQL:
        directory = directory or STATIC
        try:
            return cls(Build.read(directory))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning(
                "GraphiQL is not built (%s: %s): browsers get a 503 at /graphql until "
                "scripts/build-graphiql has run",
                type(exc).__name__,
                exc,
            )
            return cls(None)

    def page(self, root_path: str) -> bytes:
        page = self._pages.get(root_path)
        if page is None:
            assert self.build is not None
            config = {**self.build.config, "endpoint": f"{root_path}/graphql"}
            text = self.build.template.replace(PLACEHOLDER, config_json(config))
            page = self._pages[root_path] = text.encode()
        return page

    async def __call__(self, scope: Scope, send: Send) -> None:
        """Send the page, or the 503 page when there is no build."""
        if self.build is None:
            status, body, cache = 503, NOT_BUILT, (b"cache-control", b"no-store")
        else:
            status, body, cache = 200, self.page(scope.get("root_path", "")), PAGE_CACHE
        headers = [*PAGE_HEADERS, cache, (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def routes(self) -> list[Route]:
        return [Route(ASSETS + "/{name}", self.asset, methods=["GET", "HEAD"])]

    async def asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        found = self.build.assets.get(name) if self.build is not None else None
        if found is None:
            raise HTTPException(404, f"No GraphiQL asset {name!r} in this build.")
        path, copies = found
        headers = dict(ASSET_HEADERS)
        coding = choose(request.headers.get("accept-encoding", "").encode("latin-1"))
        if coding is not None and coding in copies:
            path, headers["content-encoding"] = copies[coding], coding.decode()
        media_type = MEDIA_TYPES.get(Path(name).suffix, "application/octet-stream")
        return FileResponse(path, headers=headers, media_type=media_type)
