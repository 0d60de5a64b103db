"""`make audit`'s reading of pip-audit's report (config/audit.py): a vulnerability fails; a report that skipped
every package is "nothing audited", said as such, never "no known vulnerability"."""

from __future__ import annotations

from config.audit import verdict

SKIPPED = {"name": "django", "skip_reason": "Dependency not found on PyPI and could not be audited: django (5.2.19)"}


def test_a_known_vulnerability_fails_and_names_the_fix():
    report = {
        "dependencies": [
            {"name": "django", "version": "5.2.0", "vulns": [{"id": "PYSEC-2025-1", "fix_versions": ["5.2.1"]}]},
            {"name": "celery", "version": "5.7.0", "vulns": []},
        ]
    }
    status, message = verdict(report)
    assert status == 1 and "django 5.2.0: PYSEC-2025-1 (fixed in 5.2.1)" in message


def test_nothing_audited_is_said_so_and_does_not_pass_as_clean():
    status, message = verdict({"dependencies": [SKIPPED, {**SKIPPED, "name": "celery"}]})
    assert status == 0
    assert message.startswith("pip-audit: nothing audited, no advisory data reachable (2 packages skipped")
    assert "no known vulnerability" not in message


def test_an_audit_that_ran_counts_what_it_audited():
    report = {"dependencies": [{"name": "celery", "version": "5.7.0", "vulns": []}, SKIPPED]}
    assert verdict(report) == (0, "pip-audit: 1 packages audited, 1 skipped, no known vulnerability")
