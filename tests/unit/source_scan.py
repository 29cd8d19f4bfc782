"""Reading the repository's own Python files: which are tracked, what each imports."""

from __future__ import annotations

import ast
import subprocess
from functools import cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


@cache
def tracked_python_files() -> tuple[Path, ...]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.py"],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return tuple(REPO_ROOT / name for name in out.split("\0") if name)


def rel(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def files_under(prefix: str) -> list[Path]:
    return [path for path in tracked_python_files() if rel(path).startswith(prefix)]


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imported_modules(path: Path) -> set[str]:
    """Every module an `import` or `from … import` names, anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.add("." * node.level + (node.module or ""))
    return found


def imports_package(path: Path, package: str) -> bool:
    return any(m == package or m.startswith(package + ".") for m in imported_modules(path))
