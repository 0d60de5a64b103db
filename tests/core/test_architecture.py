"""The layer rules of pyproject.toml's [tool.importlinter] hold (also in `make lint`): apps depend downwards
only, pure rule modules import no Django, services and selectors import no API module, nor does the inspector;
and no module imports a private name from another package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_contracts_are_kept():
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports")], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rsplit(".", 1)[0]


# Packages whose modules share private helpers by design: the extraction rules (one module per rule family,
# all built from _base, _text, _names; the package's public API is its __init__).
SHARES_PRIVATE_NAMES = ("apps.memories.extraction.rules",)


def private_name_crossings() -> list[str]:
    """Every `from apps.x import _name` where `_name` is another module's own: a leading underscore means
    "this module's own", so importing it from another module (outside SHARES_PRIVATE_NAMES) is a crossing."""
    import ast

    crossings = []
    for path in sorted((ROOT / "apps").rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = _package_of(module, path)
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("apps.")):
                continue
            source_is_package = (ROOT / node.module.replace(".", "/")).is_dir()
            source_package = node.module if source_is_package else node.module.rsplit(".", 1)[0]
            for alias in node.names:
                shared = any(
                    source_package == sharing or source_package.startswith(sharing + ".")
                    for sharing in SHARES_PRIVATE_NAMES
                ) and (package == source_package or package.startswith(source_package + "."))
                if alias.name.startswith("_") and node.module != module and not shared:
                    crossings.append(f"{module} imports {node.module}.{alias.name}")
    return crossings


def test_no_module_imports_a_private_name_from_another_module():
    """import-linter has no such contract, so it is checked here (issue 30: session_flush took deferred's
    `_extract_events`)."""
    assert private_name_crossings() == []
