"""The baseline: a Starlette endpoint returning precomputed bytes (LEADGREEN_BENCH_BODY)."""

from __future__ import annotations

import os
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def create_app() -> Starlette:
    body = Path(os.environ["LEADGREEN_BENCH_BODY"]).read_bytes()

    async def answer(_request: Request) -> Response:
        return Response(body, media_type="application/json")

    return Starlette(routes=[Route("/graphql", answer, methods=["GET", "POST"])])
