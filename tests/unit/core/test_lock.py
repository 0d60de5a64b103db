"""requirements/lock.txt (what `make install` installs, `--require-hashes`) holds every pin of requirements/*.txt
at the same version, and every package in it with its sha256: a pin changed without `make lock` fails here."""

from __future__ import annotations

import re
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parents[3] / "requirements"
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^\s;#\\]+)")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        match = PIN.match(line.strip())
        if match:
            pins[_normal(match[1])] = match[2]
    return pins


def _locked() -> dict[str, tuple[str, int]]:
    """{package: (version, hashes)} of the lock."""
    locked: dict[str, tuple[str, int]] = {}
    current = None
    for line in (REQUIREMENTS / "lock.txt").read_text().splitlines():
        match = PIN.match(line)
        if match:
            current = _normal(match[1])
            locked[current] = (match[2], 0)
        elif current and "--hash=sha256:" in line:
            version, hashes = locked[current]
            locked[current] = (version, hashes + 1)
    return locked


def test_every_pin_is_locked_at_its_version_with_hashes():
    locked = _locked()
    assert len(locked) > 100
    for source in ("base.txt", "production.txt", "local.txt"):
        for name, version in _pins(REQUIREMENTS / source).items():
            assert name in locked, f"{name} ({source}) is not in requirements/lock.txt: run `make lock`"
            assert locked[name][0] == version, f"{name}: {source} pins {version}, the lock {locked[name][0]}"
    assert [name for name, (_, hashes) in locked.items() if hashes == 0] == []
