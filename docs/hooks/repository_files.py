"""MkDocs hook: repository files that the pages link to are published with the site.

A page links to a file of the repository outside docs/ by its relative path, as it reads on the
repository's host (`../deploy/README.md` from docs/deployment.md). When the site is built, each
such file is added under `repository/` (a Markdown file as a page, outside the navigation; any
other file as it is), links to it are rewritten to that copy, and its own links are followed
the same way. A link to a file that does not exist, or outside the repository, fails the build.
Nothing is written into docs/.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page

PREFIX = "repository"
# An inline link or image, `](target)` or `](target "title")`; the target is group 2.
_LINK = re.compile(r"(\]\()(<[^>\n]+>|[^)\s]+)((?:\s+\"[^\"\n]*\")?\))")
_FENCE = re.compile(r"^\s*(```|~~~)")
_EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).parent.resolve()


def _docs(config: MkDocsConfig) -> Path:
    return Path(config.docs_dir).resolve()


def _source(src_uri: str, config: MkDocsConfig) -> Path:
    """Where a page of the site is read from: docs/, or the repository for its copies."""
    if src_uri.startswith(PREFIX + "/"):
        return _root(config) / src_uri.removeprefix(PREFIX + "/")
    return _docs(config) / src_uri


def _links(markdown: str) -> Iterator[re.Match[str]]:
    """The inline links of `markdown` outside fenced code."""
    fenced = False
    offset = 0
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            for match in _LINK.finditer(line):
                yield _Shifted(match, offset)
        offset += len(line)


class _Shifted:
    """A match on one line, with its positions in the whole text."""

    def __init__(self, match: re.Match[str], offset: int) -> None:
        self.match, self.offset = match, offset

    def group(self, n: int) -> str:
        return self.match.group(n)

    def span(self, n: int) -> tuple[int, int]:
        start, end = self.match.span(n)
        return start + self.offset, end + self.offset


def _resolve(target: str, page: Path, config: MkDocsConfig) -> tuple[Path, str] | None:
    """The repository file a link names (and its fragment), when it is outside docs/."""
    target = target.strip("<>")
    if not target or target.startswith(("#", "/")) or _EXTERNAL.match(target):
        return None
    path, _, fragment = target.partition("#")
    path = path.partition("?")[0]
    resolved = (page.parent / unquote(path)).resolve()
    if resolved.is_relative_to(_docs(config)):
        return None
    root = _root(config)
    if not resolved.is_relative_to(root) or ".git" in resolved.relative_to(root).parts:
        raise PluginError(f"{page}: the link {target!r} leads outside the repository")
    if not resolved.is_file():
        raise PluginError(f"{page}: the link {target!r} names no file of the repository")
    return resolved, fragment


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    root = _root(config)
    if any(f.src_uri.startswith(PREFIX + "/") for f in files):
        raise PluginError(f"docs/{PREFIX}/ is where repository files are published: rename it")
    queue = [(_source(f.src_uri, config), f.content_string) for f in files.documentation_pages()]
    added: set[Path] = set()
    while queue:
        page, markdown = queue.pop()
        for link in _links(markdown):
            found = _resolve(link.group(2), page, config)
            if found is None or found[0] in added:
                continue
            path = found[0]
            added.add(path)
            src_uri = f"{PREFIX}/{path.relative_to(root).as_posix()}"
            if path.suffix == ".md":
                text = path.read_text(encoding="utf-8")
                files.append(
                    File.generated(
                        config, src_uri, content=text, inclusion=InclusionLevel.NOT_IN_NAV
                    )
                )
                queue.append((path, text))
            else:
                files.append(File.generated(config, src_uri, content=path.read_bytes()))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, **_: Any) -> str:
    """Links to repository files, and from repository files back into docs/, as the site has
    them."""
    here = page.file.src_uri
    source = _source(here, config)
    root, docs = _root(config), _docs(config)
    out, last = [], 0
    for link in _links(markdown):
        target = link.group(2)
        found = _resolve(target, source, config)
        if found is not None:
            path, fragment = found
            new = f"{PREFIX}/{path.relative_to(root).as_posix()}"
        elif here.startswith(PREFIX + "/") and _into_docs(target, source, docs):
            path_text, _, fragment = target.strip("<>").partition("#")
            new = (source.parent / unquote(path_text)).resolve().relative_to(docs).as_posix()
        else:
            continue
        relative = posixpath.relpath(new, posixpath.dirname(here) or ".")
        start, end = link.span(2)
        out += [markdown[last:start], relative + (f"#{fragment}" if fragment else "")]
        last = end
    return "".join(out) + markdown[last:]


def _into_docs(target: str, source: Path, docs: Path) -> bool:
    target = target.strip("<>")
    if not target or target.startswith(("#", "/")) or _EXTERNAL.match(target):
        return False
    path = target.partition("#")[0].partition("?")[0]
    return (source.parent / unquote(path)).resolve().is_relative_to(docs)
