"""The frame's plain data (lessons, UI strings) and source rules every file must keep."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from source_scan import REPO_ROOT, tracked_python_files
from source_scan import imported_modules as _imported_modules
from source_scan import rel as _rel

from components.i18n import strings, t
from components.lessons import LESSONS

# --- lessons and strings -----------------------------------------------------------------


def test_there_is_at_least_one_lesson_and_url_paths_are_unique():
    assert LESSONS
    paths = [lesson.url_path for lesson in LESSONS]
    assert len(paths) == len(set(paths))
    assert len({lesson.file for lesson in LESSONS}) == len(LESSONS)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.url_path)
def test_every_lesson_file_exists_in_pages_with_its_url_path_as_stem(lesson):
    path = REPO_ROOT / lesson.file
    assert path.is_file(), lesson.file
    assert path.parent == REPO_ROOT / "pages"
    assert path.suffix == ".py"
    assert path.stem == lesson.url_path


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.url_path)
def test_every_lesson_string_exists_in_english(lesson):
    english = strings("en")
    for key in (lesson.title_key, lesson.blurb_key):
        assert key in english, key
        assert english[key].strip(), key


def test_t_formats_params():
    assert t("heads.tokens", n=7) == "7 tokens:"
    assert t("note.truncated_chars", cap=2000, original=10_000) == (
        "Your text has 10000 characters; only the first 2000 are used."
    )


def test_t_accepts_a_param_named_key():
    text = t("heads.strongest", layer=3, head=1, query="it", key="animal", weight=0.64)
    assert "it → animal" in text
    assert "layer 3, head 1" in text
    assert "0.64" in text


def test_t_without_params_returns_the_raw_string():
    assert t("app.title") == "SeqLens"
    assert t("nav.home") == strings("en")["nav.home"]


def test_t_falls_back_to_english_for_a_missing_language():
    assert t("nav.home", language="xx-none") == t("nav.home")


# --- source rules over every tracked Python file -----------------------------------------


TRACKED = tracked_python_files()


def test_the_source_scan_sees_the_app():
    names = {_rel(path) for path in TRACKED}
    assert {"app.py", "models/nets/pretrained.py", "components/grid.py", "pages/heads.py"} <= names


# Built from pieces so this file does not match its own patterns.
FORBIDDEN = {
    "torch" + ".load(": "pickle-based loading runs code; ship safetensors",
    "unsafe_allow_html" + "=True": "renders visitor text as HTML",
    "components" + ".v1.html": "injects raw HTML/JS into the page",
}


@pytest.mark.parametrize("pattern", FORBIDDEN, ids=["torch-load", "unsafe-html", "v1-html"])
def test_no_tracked_file_uses_a_forbidden_call(pattern):
    squeeze = re.compile(r"\s+")
    offenders = [
        _rel(path)
        for path in TRACKED
        if pattern in squeeze.sub("", path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], f"{pattern!r} ({FORBIDDEN[pattern]}) in {offenders}"


def test_no_tracked_file_imports_streamlit_html_components():
    offenders = [
        _rel(path)
        for path in TRACKED
        if any(m.startswith("streamlit.components" + ".v1") for m in _imported_modules(path))
    ]
    assert offenders == []


def test_no_page_imports_another_page():
    pages = [path for path in TRACKED if _rel(path).startswith("pages/")]
    assert pages
    stems = {path.stem for path in pages}
    offenders = []
    for path in pages:
        for module in _imported_modules(path):
            root = module.split(".")[0]
            if root == "pages" or root in stems or module.startswith("."):
                offenders.append((_rel(path), module))
    assert offenders == []


# --- raw HTML: only constant style sheets -------------------------------------------------

_CONSTANT_NAMES = {"Path", "__file__"}


def _is_constant(node: ast.AST, constants: set[str]) -> bool:
    """Built only from literals, Path, __file__ and names already known to be constant:
    nothing a visitor sends (session state, widgets, the link) can be in it."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in constants or node.id in _CONSTANT_NAMES
    if isinstance(node, ast.Attribute):
        return _is_constant(node.value, constants)
    if isinstance(node, ast.BinOp):
        return _is_constant(node.left, constants) and _is_constant(node.right, constants)
    if isinstance(node, ast.Call):
        parts = [node.func, *node.args, *(k.value for k in node.keywords)]
        return all(_is_constant(part, constants) for part in parts)
    return False


def _module_constants(tree: ast.Module) -> set[str]:
    constants: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _is_constant(node.value, constants):
            constants.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
            and _is_constant(node.value, constants)
        ):
            constants.add(node.target.id)
    return constants


def _raw_html_calls(path: Path) -> list[tuple[int, bool]]:
    """Every `….html(…)` call in a file: (line, whether its content is a constant)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    constants = _module_constants(tree)
    calls = []
    for node in ast.walk(tree):
        is_call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if is_call and node.func.attr == "html":
            args = [*node.args, *(k.value for k in node.keywords if k.arg == "body")]
            ok = len(args) == 1 and _is_constant(args[0], constants)
            ok = ok and not any(k.arg == "unsafe_allow_javascript" for k in node.keywords)
            calls.append((node.lineno, ok))
    return calls


def test_raw_html_gets_only_constants_never_visitor_data():
    found = {_rel(path): _raw_html_calls(path) for path in TRACKED}
    offenders = [(name, line) for name, calls in found.items() for line, ok in calls if not ok]
    assert offenders == [], "st.html must get a module-level constant (a shipped style sheet)"
    assert any(found.values()), "the scan sees the style sheets' st.html calls"


def test_the_scan_catches_user_data_reaching_raw_html(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import streamlit as st\n"
        "from pathlib import Path\n"
        "SHEET = Path(__file__).parent / 'x.css'\n"
        "st.html(SHEET)\n"
        "st.html('<style>p{}</style>')\n"
        "st.html(st.session_state['sentence'])\n"
        "text = st.text_input('x')\n"
        "st.html(f'<b>{text}</b>')\n"
        "st.html(SHEET, unsafe_allow_javascript=True)\n",
        encoding="utf-8",
    )
    assert _raw_html_calls(sample) == [(4, True), (5, True), (6, False), (8, False), (9, False)]


def test_shipped_style_sheets_load_nothing_and_run_nothing():
    sheets = sorted((REPO_ROOT / "assets" / "styles").glob("*.css"))
    assert sheets
    for sheet in sheets:
        text = sheet.read_text(encoding="utf-8").lower()
        for bad in ("url(", "@import", "<", "expression(", "javascript:"):
            assert bad not in text, (sheet.name, bad)


def test_the_chart_library_asked_for_ahead_is_the_module_streamlit_loads_for_charts():
    """The frame asks the browser for Streamlit's plotly module by its file name
    (components/ui/charts.py, fetch_chart_library); it must be the very module Streamlit's
    bundle loads for a chart, at the same address, or plotly would be loaded twice. Fails
    when the pinned Streamlit changes how it ships its chart code."""
    import streamlit

    from components.ui.charts import CHART_LIBRARY_KEY, plotly_module_name

    name = plotly_module_name()
    assert name is not None, "no single PlotlyChart.*.js in Streamlit's static files"
    static = Path(streamlit.__file__).resolve().parent / "static"
    index_html = (static / "index.html").read_text(encoding="utf-8")
    [bundle] = re.findall(
        r'<script type="module"[^>]*src="\./static/js/(index\.[^"]+\.js)"', index_html
    )
    bundle_js = (static / "static" / "js" / bundle).read_text(encoding="utf-8")
    assert f"import(`./{name}`)" in bundle_js
    assert takes_no_room(CHART_LIBRARY_KEY), "the element asking for it takes no room"


def takes_no_room(key: str) -> bool:
    """Whether the layout sheet hides the element with this key (a rule that lists it)."""
    layout = (REPO_ROOT / "assets" / "styles" / "layout.css").read_text(encoding="utf-8")
    selectors = r"[^{}]*"
    rule = rf"{selectors}\.st-key-{re.escape(key)}\b{selectors}\{{\s*display: none !important;"
    return re.search(rule, layout) is not None


def test_the_element_that_brings_the_grid_charts_renderer_takes_no_room():
    from components.ui.charts import GRID_CODE_KEY

    assert takes_no_room(GRID_CODE_KEY)
    assert not takes_no_room("one_head")
