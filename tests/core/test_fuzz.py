"""Schema-driven fuzzing with schemathesis' own runner: `schemathesis run` (its coverage, fuzzing and stateful
phases, valid and invalid input) against the application on a live port (pytest-django's live server: every
middleware, the real PostgreSQL and Redis), with a tenant key and the repository's schemathesis.toml.

The run fails on a server error, and on schemathesis' "mostly rejected generated data" warning
(`validation_mismatch`): an operation that refuses most of what its own schema allows states weaker rules than
its code checks, and misleads every client that generates code or validates against the schema. That warning
exists only in the runner (the in-process API has no warnings), hence the subprocess.

Short by design (a fixed seed, few examples per operation); docs/api.md ("Fuzzing the schema") gives the
10-minute run and what it found. tests/core/test_fuzz_stateful.py drives the state machine in process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import ApiKeyFactory, TenantFactory

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(transaction=True)]  # the live server sees committed rows

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES_PER_OPERATION = 10
SEED = 30  # the same cases on every run: a failure here is a regression, not a new draw


def test_schema_fuzz_answers_no_server_error_and_no_operation_rejects_its_own_schema(live_server):
    key = ApiKeyFactory(tenant=TenantFactory()).plaintext
    command = [
        *(sys.executable, "-m", "schemathesis.cli", "--no-color"),
        *("--config-file", str(ROOT / "schemathesis.toml")),
        *("run", f"{live_server.url}/api/v1/schema/"),
        *("--header", f"Authorization: Bearer {key}"),
        *("--max-examples", str(EXAMPLES_PER_OPERATION), "--seed", str(SEED)),
        *("--phases", "coverage,fuzzing,stateful"),
    ]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    report = run.stdout + run.stderr
    print(report[-4000:])  # the phases, warnings and figures, shown with -s or on failure
    assert run.returncode == 0, report[-8000:]
    selected = re.search(r"Operations:\s+(\d+) selected", report)
    assert selected and int(selected.group(1)) > 30, report[-3000:]  # the whole API, not an empty schema
    assert "mostly rejected generated data" not in report
    assert re.search(r"Test cases:\s+\d+ generated, \d+ passed", report), report[-3000:]
