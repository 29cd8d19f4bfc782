"""What a visitor's session keeps between runs stays small on every page.

Streamlit keeps each session's widget state between runs, and for two minutes after the
visitor leaves (for a reconnect after a network blip). A format_func or on_click written
in a page refers to the page's namespace, so the session would keep every trace and figure
of its last run: on a 40-visitor load about 0.5 MB per rerun stayed after everybody left.
Here every object the session state reaches is walked, and none may be a page's namespace.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

from conftest import ROOT, open_home, open_lesson

PAGES = ROOT / "pages"
# Enough for the widget state of the largest page; a walk that stops here fails.
MAX_OBJECTS = 200_000


def _page_file(namespace: dict) -> str | None:
    file = namespace.get("__file__")
    if isinstance(file, str) and Path(file).resolve().parent == PAGES:
        return file
    return None


def _module_namespaces() -> set[int]:
    return {id(vars(m)) for m in list(sys.modules.values()) if isinstance(m, types.ModuleType)}


def page_namespaces_reached(root) -> list[str]:
    """Files of the page namespaces reachable from `root` (imported modules and classes
    are not walked into: they are the process's, not the session's)."""
    import gc

    modules = _module_namespaces()
    seen: set[int] = set()
    stack, found = [root], []
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (types.ModuleType, type)):
            continue
        seen.add(id(obj))
        assert len(seen) < MAX_OBJECTS, "the session state reaches too much to walk"
        if isinstance(obj, dict):
            if id(obj) in modules:
                continue
            page = _page_file(obj)
            if page is not None:
                found.append(page)
                continue
        stack.extend(gc.get_referents(obj))
    return found


def session_state_of(at):
    return at._session_state._state  # AppTest has no public handle on the whole state


def test_the_walk_finds_a_page_namespace_held_by_a_callback():
    namespace = {"__file__": str(PAGES / "heads.py"), "trace": [0.0] * 10}
    exec("def on_click():\n    return trace", namespace)  # noqa: S102 - a constant test snippet
    assert page_namespaces_reached({"widget": namespace["on_click"]}) == [namespace["__file__"]]
    assert page_namespaces_reached({"widget": len}) == []


def test_a_session_keeps_no_page_namespace(lesson_path):
    at = open_lesson(lesson_path)
    assert not at.exception, [e.value for e in at.exception]
    assert page_namespaces_reached(session_state_of(at)) == []


def test_the_home_session_keeps_no_page_namespace():
    at = open_home()
    assert page_namespaces_reached(session_state_of(at)) == []
