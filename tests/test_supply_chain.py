"""The supply-chain verdict (security/allowlist.py, run by scripts/supply-chain): a finding
passes only when a current allowance with a reason names its advisory and package; an expired
allowance fails, and a report that audited nothing is never taken for a clean one."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from security.allowlist import (
    Allowance,
    AllowlistError,
    Finding,
    judge,
    load_allowlist,
    main,
    npm_audit_findings,
    pip_audit_findings,
)

TODAY = datetime.date(2026, 12, 2)
ROOT = Path(__file__).resolve().parents[1]

PIP_REPORT = {
    "dependencies": [
        {
            "name": "Jinja2",
            "version": "3.1.2",
            "vulns": [
                {
                    "id": "PYSEC-2024-1",
                    "aliases": ["GHSA-h5c8-rqwp-cp95", "CVE-2024-22195"],
                    "fix_versions": ["3.1.3"],
                    "description": "xmlattr accepts keys with spaces",
                }
            ],
        },
        {"name": "orjson", "version": "3.11.0", "vulns": []},
    ],
    "fixes": [],
}
# npm audit --json (npm 7 and later): the advisory under the package it is in, and again (by
# name) under the package that depends on it.
NPM_REPORT = {
    "auditReportVersion": 2,
    "vulnerabilities": {
        "cross-spawn": {
            "name": "cross-spawn",
            "severity": "high",
            "via": [
                {
                    "source": 1100563,
                    "name": "cross-spawn",
                    "title": "ReDoS in cross-spawn",
                    "url": "https://github.com/advisories/GHSA-3xgq-45jj-v275",
                    "range": "<7.0.5",
                }
            ],
            "range": "<7.0.5",
        },
        "execa": {"name": "execa", "severity": "high", "via": ["cross-spawn"], "range": "*"},
    },
}
# What this machine's npm writes when the audit endpoint refuses it.
NPM_REFUSED = {
    "message": "405 Method Not Allowed - POST https://example/-/npm/v1/security/advisories/bulk",
    "statusCode": 405,
    "error": {"summary": "", "detail": ""},
}


def allowance(id: str, package: str, review_by: datetime.date = TODAY) -> Allowance:
    return Allowance(id, package, "a reason", review_by)


def test_the_reports_findings() -> None:
    pip, pip_skipped = pip_audit_findings(PIP_REPORT, "pip.json")
    npm, npm_skipped = npm_audit_findings(NPM_REPORT, "npm.json")
    assert (pip_skipped, npm_skipped) == ([], [])
    assert pip == [
        Finding(
            "pip.json",
            "jinja2",
            "3.1.2",
            "PYSEC-2024-1",
            ("GHSA-h5c8-rqwp-cp95", "CVE-2024-22195"),
            "xmlattr accepts keys with spaces",
        )
    ]
    assert npm == [
        Finding(
            "npm.json",
            "cross-spawn",
            "<7.0.5",
            "GHSA-3xgq-45jj-v275",
            ("1100563",),
            "ReDoS in cross-spawn",
        )
    ]


def test_a_finding_not_allowed_fails_and_an_allowed_one_passes() -> None:
    findings = pip_audit_findings(PIP_REPORT, "pip.json")[0]
    refused = judge(findings, [allowance("GHSA-3xgq-45jj-v275", "cross-spawn")], TODAY)
    assert (refused.failed, refused.unallowed) == (True, findings)
    # By an alias, for its package only.
    by_alias = judge(findings, [allowance("CVE-2024-22195", "jinja2")], TODAY)
    assert (by_alias.failed, by_alias.unallowed, len(by_alias.allowed)) == (False, [], 1)
    other_package = judge(findings, [allowance("CVE-2024-22195", "markupsafe")], TODAY)
    assert other_package.unallowed == findings


def test_an_expired_allowance_fails_even_when_it_matches() -> None:
    findings = npm_audit_findings(NPM_REPORT, "npm.json")[0]
    past = allowance("GHSA-3xgq-45jj-v275", "cross-spawn", TODAY - datetime.timedelta(days=1))
    verdict = judge(findings, [past], TODAY)
    assert (verdict.failed, verdict.expired, verdict.unallowed) == (True, [past], findings)
    unused_and_past = judge([], [past], TODAY)
    assert (unused_and_past.failed, unused_and_past.expired) == (True, [past])
    # On its review-by date it still holds.
    assert not judge(findings, [allowance("GHSA-3xgq-45jj-v275", "cross-spawn")], TODAY).failed


@given(
    ids=st.lists(
        st.from_regex(r"GHSA-[a-z0-9]{4}", fullmatch=True), min_size=1, max_size=6, unique=True
    ),
    allowed=st.sets(st.integers(0, 5)),
    days=st.lists(st.integers(-30, 30), min_size=6, max_size=6),
)
def test_the_verdict_over_generated_findings(ids, allowed, days) -> None:
    """Each finding passes exactly when an allowance for it is current; the check fails exactly
    when some finding is unallowed or some allowance has expired."""
    findings = [Finding("r", "pkg", "1", id) for id in ids]
    allowances = [
        allowance(ids[i], "pkg", TODAY + datetime.timedelta(days=days[i]))
        for i in sorted(allowed)
        if i < len(ids)
    ]
    verdict = judge(findings, allowances, TODAY)
    current = {a.id for a in allowances if a.review_by >= TODAY}
    assert [f.id for f in verdict.unallowed] == [id for id in ids if id not in current]
    assert verdict.expired == [a for a in allowances if a.review_by < TODAY]
    assert verdict.failed == (len(current) < len(ids) or len(current) < len(allowances))


def test_a_report_that_audited_nothing_is_not_clean() -> None:
    skipped = {
        "dependencies": [
            {
                "name": "aiosqlite",
                "skip_reason": "Dependency not found on "
                "PyPI and could not be audited: aiosqlite (0.22.1)",
            }
        ]
    }
    findings, unaudited = pip_audit_findings(skipped, "pip.json")
    assert findings == [] and [str(u) for u in unaudited] == [
        "pip.json: aiosqlite: Dependency not found on PyPI and could not be audited: "
        "aiosqlite (0.22.1)"
    ]
    findings, unaudited = npm_audit_findings(NPM_REFUSED, "npm.json")
    assert findings == [] and [u.why for u in unaudited] == [f"npm audit: {NPM_REFUSED['message']}"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[allow]]\nid = "X"\npackage = "p"\nreview_by = 2027-01-01\n',
            "[[allow]] entry 1: missing ['reason'], unknown []",
        ),
        (
            '[[allow]]\nid = "X"\npackage = "p"\nreason = " "\nreview_by = 2027-01-01\n',
            "[[allow]] entry 1: `reason` must be a non-empty string",
        ),
        (
            '[[allow]]\nid = "X"\npackage = "p"\nreason = "r"\nreview_by = "soon"\n',
            "[[allow]] entry 1: `review_by` must be a date (review_by = 2027-01-31)",
        ),
        ('[allowed]\nid = "X"\n', "unknown table(s) ['allowed']; only [[allow]]"),
        ("[[allow]\n", "not TOML"),
    ],
)
def test_a_malformed_allowlist_says_what_and_where(text, message) -> None:
    with pytest.raises(AllowlistError) as raised:
        load_allowlist(text, "allow.toml")
    assert str(raised.value).startswith(f"allow.toml: {message}")


def test_the_repositorys_allowlist_is_valid() -> None:
    assert load_allowlist((ROOT / "security" / "allowlist.toml").read_text()) == []


def test_the_command_exit_statuses(tmp_path, capsys) -> None:
    """0 clean, 1 a finding not allowed, 3 nothing audited (0 with --unaudited warn)."""
    allow = tmp_path / "allow.toml"
    allow.write_text("")
    reports = {}
    for name, data in [
        ("pip", PIP_REPORT),
        ("clean", {"dependencies": [], "fixes": []}),
        ("npm-refused", NPM_REFUSED),
    ]:
        reports[name] = tmp_path / f"{name}.json"
        reports[name].write_text(json.dumps(data))
    common = ["--allowlist", str(allow), "--today", TODAY.isoformat()]
    assert main([*common, "--pip", str(reports["clean"])]) == 0
    assert main([*common, "--pip", str(reports["pip"])]) == 1
    assert "NOT ALLOWED pip.json: jinja2 3.1.2 PYSEC-2024-1" in capsys.readouterr().out
    assert main([*common, "--npm", str(reports["npm-refused"])]) == 3
    assert main([*common, "--npm", str(reports["npm-refused"]), "--unaudited", "warn"]) == 0
    # A finding that fails outweighs a report that audited nothing.
    assert main([*common, "--pip", str(reports["pip"]), "--npm", str(reports["npm-refused"])]) == 1


def test_every_npm_package_has_a_version_for_its_sbom() -> None:
    """`npm sbom` refuses a package without a version (EINVALIDPURLTYPE): every package.json
    beside a lock, and the lock's root entry, name one."""
    locks = sorted(ROOT.glob("**/package-lock.json"))
    locks = [lock for lock in locks if "node_modules" not in lock.parts]
    assert locks
    unversioned = []
    for lock in locks:
        package = json.loads((lock.parent / "package.json").read_text())
        root = json.loads(lock.read_text())["packages"][""]
        if not package.get("version") or root.get("version") != package["version"]:
            unversioned.append(str(lock.parent.relative_to(ROOT)))
    assert unversioned == []
