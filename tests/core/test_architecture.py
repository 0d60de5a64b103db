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


def test_no_module_imports_a_private_name_from_another_package():
    """A leading underscore means "this package's own": a module may import `_name` from its own package (the
    extraction rules share their helpers so), never from another one — there, it is a public API to name so.
    import-linter has no such contract, so it is checked here."""
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
                own = source_package == package or source_package.startswith(package + ".")
                if alias.name.startswith("_") and not own:
                    crossings.append(f"{module} imports {node.module}.{alias.name}")
    assert crossings == []
