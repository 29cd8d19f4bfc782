"""Private Streamlit access lives in components/ui/streamlit_patches.py alone, and its
switch (SEQLENS_STREAMLIT_PATCHES=0) turns every use off."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from source_scan import REPO_ROOT, rel, tracked_python_files

from components.ui import streamlit_patches

PATCHES = REPO_ROOT / "components" / "ui" / "streamlit_patches.py"
# Streamlit's internals: not covered by its versioning. (bench/ speaks the wire protocol on
# purpose and is not part of the app; tests may look inside Streamlit.)
PRIVATE_PACKAGES = ("runtime", "elements", "web")
PRIVATE_NAMES = {"get_script_run_ctx"}


def app_files() -> list[Path]:
    return [
        path
        for path in tracked_python_files()
        if rel(path) == "app.py" or rel(path).startswith(("pages/", "components/", "models/"))
    ]


def _private_module(name: str | None) -> bool:
    parts = (name or "").split(".")
    return parts[0] == "streamlit" and len(parts) > 1 and parts[1] in PRIVATE_PACKAGES


def private_uses(source: str) -> list[str]:
    """Each import of a private Streamlit package, and each use of a private name, in
    `source` ("line: what")."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
            found += [f"{node.lineno}: import {name}" for name in names if _private_module(name)]
        elif isinstance(node, ast.ImportFrom):
            if _private_module(node.module):
                found.append(f"{node.lineno}: from {node.module} import …")
            elif node.module == "streamlit":
                found += [
                    f"{node.lineno}: from streamlit import {a.name}"
                    for a in node.names
                    if a.name in PRIVATE_PACKAGES or a.name in PRIVATE_NAMES
                ]
        elif isinstance(node, ast.Attribute):
            if node.attr in PRIVATE_NAMES:
                found.append(f"{node.lineno}: .{node.attr}")
            elif (
                node.attr in PRIVATE_PACKAGES
                and isinstance(node.value, ast.Name)
                and node.value.id in ("st", "streamlit")
            ):
                found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.Name) and node.id in PRIVATE_NAMES:
            found.append(f"{node.lineno}: {node.id}")
    return found


def test_no_module_but_streamlit_patches_touches_streamlit_internals():
    offenders = {
        str(path.relative_to(REPO_ROOT)): uses
        for path in app_files()
        if path != PATCHES and (uses := private_uses(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "source",
    [
        "import streamlit.runtime.app_session",
        "from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx",
        "from streamlit.elements.widgets import text_widgets",
        "from streamlit.web import bootstrap",
        "from streamlit import runtime",
        "import streamlit as st\nst.runtime.exists()",
        "def f(module):\n    return module.get_script_run_ctx()",
    ],
)
def test_the_check_finds_each_way_of_reaching_the_internals(source):
    assert private_uses(source)


def test_the_check_lets_public_streamlit_through():
    source = (
        "import streamlit as st\n"
        "from streamlit import session_state\n"
        "st.query_params['lang'] = 'zh'\n"
        "st.navigation([], position='hidden')\n"
    )
    assert private_uses(source) == []


def test_the_patches_module_is_where_the_internals_are_used():
    """Otherwise the check above would pass for a module that no longer does its job."""
    assert private_uses(PATCHES.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("value", "on"), [(None, True), ("1", True), ("", True), ("0", False), (" 0 ", False)]
)
def test_the_switch_reads_the_environment(value, on):
    environ = {} if value is None else {streamlit_patches.SWITCH: value}
    assert streamlit_patches.patches_on(environ) is on


def test_with_the_switch_off_no_patch_touches_streamlit(monkeypatch):
    """Off, each function takes its public fallback, even outside a script run (where the
    private calls would fail: there is no script run context)."""
    monkeypatch.setenv(streamlit_patches.SWITCH, "0")
    assert streamlit_patches.correct_bound_link("mask_kind", "Padding", "string_value") is False
    # Every run is taken for a legacy page's run: the frame registers its menu first.
    assert streamlit_patches.started_as_a_legacy_page() is True
