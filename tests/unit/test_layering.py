"""The layering rules of docs/DESIGN.md ("What may import what"), and the size limits.

Each rule is checked over every tracked Python file, so a file added anywhere is held to it.
"""

from __future__ import annotations

import ast

import pytest
from source_scan import (
    files_under,
    imports_package,
    parsed,
    rel,
    tracked_python_files,
)

UI_PACKAGE = "components/ui/"
RUNS_LAYER = "components/ui/runs/"
PAGE_LINES = 200
MODULE_LINES = 400


def _is_streamlit_side(name: str) -> bool:
    return name == "app.py" or name.startswith(("pages/", UI_PACKAGE))


def _app_files():
    """Every file of the app itself: not the tests, not the performance harness (which
    talks Streamlit's wire protocol on purpose)."""
    return [p for p in tracked_python_files() if not rel(p).startswith(("tests/", "bench/"))]


def test_the_scan_sees_every_layer():
    names = {rel(p) for p in _app_files()}
    for expected in ("app.py", "pages/heads.py", "components/grid.py", "components/ui/frame.py"):
        assert expected in names
    assert any(name.startswith(RUNS_LAYER) for name in names)
    assert any(name.startswith("models/nets/") for name in names)


def test_streamlit_is_imported_only_by_app_py_the_lessons_and_the_ui_package():
    offenders = [
        rel(p)
        for p in _app_files()
        if imports_package(p, "streamlit") and not _is_streamlit_side(rel(p))
    ]
    assert offenders == []


@pytest.mark.parametrize("forbidden", ["streamlit", "torch", "models", "components.ui", "pages"])
def test_the_pure_figure_builders_import_no_streamlit_torch_or_models(forbidden):
    pure = [p for p in files_under("components/") if not rel(p).startswith(UI_PACKAGE)]
    assert len(pure) >= 10
    assert [rel(p) for p in pure if imports_package(p, forbidden)] == []


@pytest.mark.parametrize("forbidden", ["streamlit", "components", "pages"])
def test_models_import_no_streamlit_and_nothing_of_the_app_above_them(forbidden):
    models = files_under("models/")
    assert models
    assert [rel(p) for p in models if imports_package(p, forbidden)] == []


CACHES = ("cache_data", "cache_resource")


def _cached_functions(tree: ast.Module) -> list[str]:
    """Functions decorated with st.cache_data or st.cache_resource (called or not)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, ast.Attribute) and target.attr in CACHES:
                found.append(node.name)
    return found


def test_streamlit_caches_live_only_in_the_runs_layer():
    cached = {rel(p): _cached_functions(parsed(p)) for p in _app_files()}
    assert any(names for name, names in cached.items() if name.startswith(RUNS_LAYER))
    outside = {name: names for name, names in cached.items() if names}
    assert {name: names for name, names in outside.items() if not name.startswith(RUNS_LAYER)} == {}


def test_the_cache_scan_sees_decorated_functions_called_or_not():
    source = (
        "import streamlit as st\n"
        "@st.cache_data(ttl=1)\ndef a():\n    pass\n"
        "@st.cache_resource\ndef b():\n    pass\n"
        "def c():\n    pass\n"
    )
    assert _cached_functions(ast.parse(source)) == ["a", "b"]


def _lines(path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_every_lesson_file_is_at_most_200_lines():
    pages = files_under("pages/")
    assert pages
    assert {rel(p): _lines(p) for p in pages if _lines(p) > PAGE_LINES} == {}


def test_every_python_file_outside_tests_is_at_most_400_lines():
    files = [p for p in tracked_python_files() if not rel(p).startswith("tests/")]
    assert {rel(p): _lines(p) for p in files if _lines(p) > MODULE_LINES} == {}


def test_no_test_imports_another_test_module():
    offenders = []
    for path in files_under("tests/"):
        for node in ast.walk(parsed(path)):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(name.split(".")[-1].startswith("test_") for name in names):
                offenders.append(f"{rel(path)}: {names}")
    assert offenders == []
