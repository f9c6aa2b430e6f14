"""A stand-in for scripts/build-graphiql's output: the real page template and example tabs, tiny
assets (with precompressed copies), so the HTTP tests need no Node.js build."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "web" / "graphiql"
JS, CSS, WORKER = "graphiql-TEST1234.js", "graphiql-TEST5678.css", "editor.worker-TEST0000.js"
ASSETS = {JS: b"console.log('graphiql');\n" * 100, CSS: b"body{margin:0}\n", WORKER: b"//w\n"}


def default_config() -> dict[str, Any]:
    """What web/graphiql/build.mjs writes as config.json: the tabs of tabs/tabs.json."""
    tabs = json.loads((WEB / "tabs" / "tabs.json").read_text())
    return {
        "endpoint": "/graphql",
        "tabs": [
            {
                "name": tab["name"],
                "query": (WEB / "tabs" / tab["file"]).read_text(),
                "variables": json.dumps(tab["variables"], indent=2) if "variables" in tab else "",
            }
            for tab in tabs
        ],
        "runFirstTab": True,
    }


def write(directory: Path, config: dict[str, Any] | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    page = (WEB / "index.html").read_text()
    page = page.replace("static/graphiql/graphiql.js", f"static/graphiql/{JS}")
    page = page.replace("static/graphiql/graphiql.css", f"static/graphiql/{CSS}")
    (directory / "index.html").write_text(page)
    (directory / "config.json").write_text(json.dumps(config or default_config()))
    manifest = {"graphiql.js": JS, "graphiql.css": CSS, "workers": {"editor": WORKER}, "fonts": []}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    for name, content in ASSETS.items():
        (directory / name).write_bytes(content)
    (directory / f"{JS}.gz").write_bytes(gzip.compress(ASSETS[JS]))
    return directory
