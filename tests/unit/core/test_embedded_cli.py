"""`python -m config.embedded` starts or stops the embedded servers; anything else only prints its usage (a
`--help` once started the development PostgreSQL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _run(*arguments: str, var_dir: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "ENGRAM_VAR_DIR": str(var_dir)}
    return subprocess.run(
        [sys.executable, "-m", "config.embedded", *arguments],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("arguments", [("--help",), ("-h",), ("help",)])
def test_help_prints_the_usage_and_starts_nothing(tmp_path, arguments):
    result = _run(*arguments, var_dir=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("usage: python -m config.embedded [start|stop] [dev|test]")
    assert list(tmp_path.iterdir()) == []  # no data directory: no server was started


@pytest.mark.parametrize("arguments", [("strat",), ("start", "prod"), ("stop", "dev", "now")])
def test_anything_else_is_refused_with_the_usage(tmp_path, arguments):
    result = _run(*arguments, var_dir=tmp_path)
    assert result.returncode == 2
    assert "usage: python -m config.embedded" in result.stderr
    assert list(tmp_path.iterdir()) == []
