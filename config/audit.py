"""`make audit` (run by `make test`): pip-audit over the hashed lock, read for what it could and could not
audit. A known vulnerability fails. Where no advisory data is reachable (this project's machines reach PyPI's
package index but not its JSON API, which answers 404, nor OSV) pip-audit skips every package and still says
"No known vulnerabilities found": that is reported as "nothing audited" with the reason, not as a pass of the
audit, and does not fail the build. On a machine that reaches the advisory data the same command audits.

    python -m config.audit requirements/lock.txt
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def _advisory(vuln: dict[str, Any]) -> str:
    return f"{vuln['id']} (fixed in {', '.join(vuln.get('fix_versions') or ['-'])})"


def verdict(report: dict[str, Any]) -> tuple[int, str]:
    """(exit status, what to print) for pip-audit's JSON report."""
    dependencies = report.get("dependencies") or []
    skipped = [item for item in dependencies if item.get("skip_reason")]
    vulnerable = [item for item in dependencies if item.get("vulns")]
    if vulnerable:
        lines = [
            f"  {item['name']} {item.get('version', '')}: " + ", ".join(_advisory(vuln) for vuln in item["vulns"])
            for item in vulnerable
        ]
        return 1, "pip-audit: known vulnerabilities:\n" + "\n".join(lines)
    audited = len(dependencies) - len(skipped)
    if dependencies and not audited:
        reason = skipped[0]["skip_reason"]
        return 0, (
            f"pip-audit: nothing audited, no advisory data reachable ({len(skipped)} packages skipped, e.g. "
            f"{reason!r}); run `make audit` where PyPI's JSON API or OSV answers"
        )
    note = f", {len(skipped)} skipped" if skipped else ""
    return 0, f"pip-audit: {audited} packages audited{note}, no known vulnerability"


def main(lock: str) -> int:
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "audit.json"
        command = [
            sys.executable, "-m", "pip_audit", "--requirement", lock, "--require-hashes", "--disable-pip",
            "--format", "json", "--output", str(output), "--progress-spinner", "off",
        ]  # fmt: skip
        finished = subprocess.run(command, capture_output=True, text=True, check=False)
        if not output.exists():
            print(f"pip-audit did not run ({finished.returncode}):\n{finished.stderr[-2000:]}", file=sys.stderr)
            return 2
        status, message = verdict(json.loads(output.read_text()))
    print(message)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "requirements/lock.txt"))
