"""The supply-chain verdict (scripts/supply-chain): the findings of `pip-audit` (one JSON report
per Python lock) and `npm audit` (one per package-lock.json) against security/allowlist.toml.

A finding passes only when an allowance names its advisory (by id or one of its aliases) and
its package, with a reason, and its review-by date is not past. Everything else fails: a
finding no allowance names, an allowance past its review-by date (whether or not it still
matches), an allowance without a reason, and a report that audited nothing (pip-audit skips a
package it cannot look up and still exits 0; npm audit writes an error instead of its
findings when the registry's audit endpoint refuses it): that is "not audited", never "clean".

    python -m security.allowlist --allowlist security/allowlist.toml \
        --pip build/pip-requirements.lock.json --npm build/npm-audit.json [--today 2026-12-02]

Exit status: 0 clean, 1 a finding or an allowance fails, 3 a report audited nothing (with
--unaudited warn: said, and exit 0 when nothing else fails).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIELDS = ("id", "package", "reason", "review_by")


class AllowlistError(ValueError):
    """The allow-list file is malformed: which entry, which field."""


@dataclass(frozen=True)
class Allowance:
    id: str
    package: str
    reason: str
    review_by: datetime.date


@dataclass(frozen=True)
class Finding:
    source: str  # the report it came from
    package: str
    version: str
    id: str
    aliases: tuple[str, ...] = ()
    summary: str = ""

    def ids(self) -> set[str]:
        return {self.id, *self.aliases}

    def __str__(self) -> str:
        also = f" (also {', '.join(self.aliases)})" if self.aliases else ""
        about = f": {self.summary}" if self.summary else ""
        return f"{self.source}: {self.package} {self.version} {self.id}{also}{about}"


@dataclass(frozen=True)
class Unaudited:
    source: str
    why: str

    def __str__(self) -> str:
        return f"{self.source}: {self.why}"


@dataclass
class Verdict:
    unallowed: list[Finding]
    allowed: list[tuple[Finding, Allowance]]
    expired: list[Allowance]
    unaudited: list[Unaudited]

    @property
    def failed(self) -> bool:
        return bool(self.unallowed or self.expired)


def load_allowlist(text: str, where: str = "security/allowlist.toml") -> list[Allowance]:
    """The `[[allow]]` entries, each with every field, a reason that says something and a
    review-by date."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AllowlistError(f"{where}: not TOML: {exc}") from exc
    unknown = set(document) - {"allow"}
    if unknown:
        raise AllowlistError(f"{where}: unknown table(s) {sorted(unknown)}; only [[allow]]")
    allowances = []
    for number, entry in enumerate(document.get("allow", []), start=1):
        place = f"{where}: [[allow]] entry {number}"
        missing = [name for name in FIELDS if name not in entry]
        extra = sorted(set(entry) - set(FIELDS))
        if missing or extra:
            raise AllowlistError(f"{place}: missing {missing}, unknown {extra}")
        for name in ("id", "package", "reason"):
            if not isinstance(entry[name], str) or not entry[name].strip():
                raise AllowlistError(f"{place}: `{name}` must be a non-empty string")
        review_by = entry["review_by"]
        if not isinstance(review_by, datetime.date) or isinstance(review_by, datetime.datetime):
            raise AllowlistError(f"{place}: `review_by` must be a date (review_by = 2027-01-31)")
        allowances.append(
            Allowance(entry["id"], entry["package"].lower(), entry["reason"].strip(), review_by)
        )
    return allowances


def pip_audit_findings(
    report: dict[str, Any], source: str
) -> tuple[list[Finding], list[Unaudited]]:
    """pip-audit's JSON (`-f json`): each dependency's vulnerabilities; a skipped dependency
    is not audited."""
    findings, unaudited = [], []
    dependencies = report.get("dependencies")
    if not isinstance(dependencies, list):
        return [], [Unaudited(source, "no `dependencies` in the pip-audit report")]
    for dependency in dependencies:
        name = str(dependency.get("name", "?")).lower()
        if "skip_reason" in dependency:
            unaudited.append(Unaudited(source, f"{name}: {dependency['skip_reason']}"))
            continue
        for vuln in dependency.get("vulns", []):
            findings.append(
                Finding(
                    source,
                    name,
                    str(dependency.get("version", "")),
                    str(vuln["id"]),
                    tuple(str(alias) for alias in vuln.get("aliases", [])),
                    str(vuln.get("description", ""))[:120],
                )
            )
    return findings, unaudited


def npm_audit_findings(
    report: dict[str, Any], source: str
) -> tuple[list[Finding], list[Unaudited]]:
    """`npm audit --json` (npm 7 and later): each advisory reaching a package; an error report
    (the audit endpoint refused or was not reached) is not audited."""
    if "vulnerabilities" not in report:
        why = report.get("message") or report.get("error", {}).get("summary") or "no findings"
        return [], [Unaudited(source, f"npm audit: {why}")]
    findings = []
    for name, entry in report["vulnerabilities"].items():
        for via in entry.get("via", []):
            if not isinstance(via, dict):  # another package's name: reported under its own
                continue
            url = str(via.get("url", ""))
            advisory = url.rsplit("/", 1)[-1] if "/advisories/" in url else str(via["source"])
            findings.append(
                Finding(
                    source,
                    str(via.get("name", name)).lower(),
                    str(via.get("range", "")),
                    advisory,
                    (str(via["source"]),) if advisory != str(via.get("source")) else (),
                    str(via.get("title", ""))[:120],
                )
            )
    return findings, []


def judge(
    findings: Iterable[Finding],
    allowances: Sequence[Allowance],
    today: datetime.date,
    unaudited: Iterable[Unaudited] = (),
) -> Verdict:
    expired = [allowance for allowance in allowances if allowance.review_by < today]
    current = [allowance for allowance in allowances if allowance.review_by >= today]
    unallowed, allowed = [], []
    for finding in findings:
        match = next(
            (
                allowance
                for allowance in current
                if allowance.id in finding.ids() and allowance.package == finding.package
            ),
            None,
        )
        if match is None:
            unallowed.append(finding)
        else:
            allowed.append((finding, match))
    return Verdict(unallowed, allowed, expired, list(unaudited))


def report(verdict: Verdict) -> list[str]:
    lines = [f"NOT ALLOWED {finding}" for finding in verdict.unallowed]
    lines += [
        f"EXPIRED allowance {a.id} ({a.package}): review-by {a.review_by} is past; review it"
        for a in verdict.expired
    ]
    lines += [
        f"allowed {finding} until {allowance.review_by}: {allowance.reason}"
        for finding, allowance in verdict.allowed
    ]
    by_source: dict[str, list[Unaudited]] = {}
    for item in verdict.unaudited:
        by_source.setdefault(item.source, []).append(item)
    for items in by_source.values():
        more = f" (and {len(items) - 1} more)" if len(items) > 1 else ""
        lines.append(f"NOT AUDITED {items[0]}{more}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m security.allowlist")
    parser.add_argument("--allowlist", type=Path, required=True)
    parser.add_argument("--pip", type=Path, action="append", default=[])
    parser.add_argument("--npm", type=Path, action="append", default=[])
    parser.add_argument("--today", type=datetime.date.fromisoformat, default=None)
    parser.add_argument("--unaudited", choices=("fail", "warn"), default="fail")
    args = parser.parse_args(argv)
    today = args.today or datetime.datetime.now(datetime.UTC).date()
    try:
        allowances = load_allowlist(args.allowlist.read_text(), str(args.allowlist))
    except AllowlistError as exc:
        print(f"supply-chain: {exc}", file=sys.stderr)
        return 1
    findings: list[Finding] = []
    unaudited: list[Unaudited] = []
    for paths, read in ((args.pip, pip_audit_findings), (args.npm, npm_audit_findings)):
        for path in paths:
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                unaudited.append(Unaudited(path.name, f"no report: {exc}"))
                continue
            found, skipped = read(data, path.name)
            findings += found
            unaudited += skipped
    verdict = judge(findings, allowances, today, unaudited)
    for line in report(verdict):
        print(line)
    counts = (
        f"{len(findings)} findings, {len(verdict.allowed)} allowed, "
        f"{len(verdict.unallowed)} not allowed, {len(verdict.expired)} expired allowances, "
        f"{len(verdict.unaudited)} not audited"
    )
    print(f"supply-chain: {counts}")
    if verdict.failed:
        return 1
    if verdict.unaudited:
        sources = sorted({item.source for item in verdict.unaudited})
        print(
            f"supply-chain: {len(sources)} report(s) audited nothing or not all: "
            f"{', '.join(sources)} (the vulnerability service was not reached?)",
            file=sys.stderr,
        )
        return 0 if args.unaudited == "warn" else 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
