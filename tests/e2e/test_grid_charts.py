"""The attention lesson's grid charts (assets/grid_chart.js) in a real browser.

Each is a canvas the page draws: these tests look at what a visitor gets from one. The
four charts are drawn (coloured pixels on the canvas, a text for screen readers); the
pointer over a cell brings up a label naming it; a hostile sentence is drawn as text and
runs nothing; the save button downloads the chart as a PNG or, chosen in the sidebar, an
SVG; the button speaks Chinese in Chinese; a sentence typed without Enter redraws them.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from browser_helpers import (
    FIRST_CHART_TIMEOUT_MS,
    HEADS_GRID_KEYS,
    RERUN_TIMEOUT_MS,
    SENTENCE_INPUT,
    assert_page_healthy,
    expect,
    grid_hover_labels,
    hover_grid,
    screenshot,
    tick_labels,
    wait_for_grids,
    wait_for_tick_words,
    wait_until_drawn,
    wait_until_idle,
)

from components.i18n import strings
from models.nets.tokenizer import MAX_TOKENS, Tokenizer

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("browser")]

EN = strings("en")
ZH = strings("zh")
# Every word is one WordPiece token, so each is a column of its own.
SENTENCE = "The hungry zebra eats green leaves"
TOKENS = ["[CLS]", *SENTENCE.lower().split(), "[SEP]"]
TYPED = "Seven purple dolphins sang quietly tonight"
HOSTILE = "<img src=x onerror=window.__pwned=1> <b>bold</b>"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# "3:zebra → 2:hungry\nweight 0.1234": query and key (position:token), the weight.
ONE_HEAD_HOVER = re.compile(
    rf"^(\d+):(.+) → (\d+):(.+)\n{re.escape(EN['heads.axis.weight'])} (\d\.\d{{4}})$"
)
# "Layer 3, head 1\nentropy 2.10 bits · …": the head under the pointer, then its numbers.
ALL_HEADS_HOVER = re.compile(r"^Layer (\d+), head (\d+)\nentropy \d+\.\d\d bits")

# Every grid chart of `keys`: its canvas's text for screen readers, its size, and how many
# distinct colours its pixels hold (read back from the canvas, as the browser drew it).
_CANVASES = """(keys) => keys.map(key => {
    const canvas = document.querySelector(`.st-key-${key} .seqlens-grid canvas`);
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    const colours = new Set();
    let painted = 0;
    for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] === 0) continue;  // nothing drawn here
        painted += 1;
        colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
    }
    return {key, label: canvas.getAttribute('aria-label'), role: canvas.getAttribute('role'),
            width: canvas.width, height: canvas.height, painted, colours: colours.size,
            png: canvas.toDataURL('image/png').length};
})"""


def open_heads(page, base_url: str, sentence: str = SENTENCE, query: str = "") -> None:
    page.goto(f"{base_url}/heads?sentence={quote(sentence)}{query}")
    wait_until_drawn(page)
    wait_for_grids(page, HEADS_GRID_KEYS)
    wait_until_idle(page)


def save_button(page, key: str):
    return page.locator(f".st-key-{key} .seqlens-grid button.seqlens-grid-save")


# ---------------------------------------------------------------- drawn


def test_the_four_grids_are_drawn_with_a_text_for_screen_readers(page, app_server):
    open_heads(page, app_server)
    canvases = page.evaluate(_CANVASES, list(HEADS_GRID_KEYS))
    for canvas in canvases:
        assert canvas["role"] == "img", canvas
        assert canvas["label"].strip(), canvas
        assert canvas["width"] > 100 and canvas["height"] > 100, canvas
        # Cells in many shades, labels and the colour bar: not a blank canvas.
        assert canvas["painted"] > canvas["width"] * canvas["height"] // 10, canvas
        assert canvas["colours"] >= 8, canvas
        # Read back as an image (as saving it does): nothing drawn tainted the canvas.
        assert canvas["png"] > 1000, canvas
    labels = {canvas["key"]: canvas["label"] for canvas in canvases}
    # The one-head chart says which head it shows.
    assert labels["one_head"].startswith("Layer "), labels
    # The token charts show the sentence; the head charts one column per head.
    assert tick_labels(page, "one_head") == [f"{i}:{t}" for i, t in enumerate(TOKENS)]
    assert tick_labels(page, "focus") == [f"{i}:{t}" for i, t in enumerate(TOKENS)]
    assert tick_labels(page, "all_heads") == [f"H{h}" for h in range(12)]
    assert tick_labels(page, "summary") == [f"H{h}" for h in range(12)]
    screenshot(page, "grid-charts-drawn")
    assert_page_healthy(page)


# ---------------------------------------------------------------- hover


def test_hovering_a_cell_names_it(page, app_server):
    open_heads(page, app_server)
    one_head = [text for _, text in grid_hover_labels(page, "one_head") if text]
    assert len(set(one_head)) >= 3, one_head
    for text in one_head:
        match = ONE_HEAD_HOVER.match(text)
        assert match, text
        query, query_token, key, key_token, weight = match.groups()
        assert TOKENS[int(query)] == query_token and TOKENS[int(key)] == key_token, text
        assert 0.0 <= float(weight) <= 1.0, text

    all_heads = [text for _, text in grid_hover_labels(page, "all_heads") if text]
    assert len(set(all_heads)) >= 3, all_heads
    for text in all_heads:
        match = ALL_HEADS_HOVER.match(text)
        assert match, text
        layer, head = map(int, match.groups())
        assert layer < 6 and head < 12, text
    # Away from the chart, the label goes.
    page.mouse.move(1, 1)
    expect(page.locator(".st-key-all_heads .seqlens-grid-hover")).to_be_hidden()
    assert_page_healthy(page)


# ---------------------------------------------------------------- hostile text


def test_a_hostile_sentence_is_drawn_as_text(page, app_server):
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_heads(page, app_server, HOSTILE)
    columns = tick_labels(page, "one_head")
    pieces = [column.split(":", 1)[1] for column in columns]
    # The tags' pieces, as the tokenizer gives them (it splits off punctuation), are the
    # chart's labels: "<b>bold</b>" is eight of them, in order.
    assert pieces[1] == "<", columns
    bold = ["<", "b", ">", "bold", "<", "/", "b", ">"]
    assert any(pieces[i : i + len(bold)] == bold for i in range(len(pieces))), columns
    assert tick_labels(page, "focus") == columns
    hovered = [text for _, text in grid_hover_labels(page, "one_head") if text]
    assert hovered and all(ONE_HEAD_HOVER.match(text) for text in hovered), hovered
    # Nothing the sentence holds became an element, and nothing ran.
    expect(page.locator(".seqlens-grid img")).to_have_count(0)
    expect(page.locator(".seqlens-grid b")).to_have_count(0)
    # A grid is made of divs, its button and its canvas: nothing else.
    expect(page.locator(".seqlens-grid")).to_have_count(len(HEADS_GRID_KEYS))
    expect(page.locator(".seqlens-grid :not(div, button, canvas)")).to_have_count(0)
    assert page.evaluate("() => window.__pwned") is None
    assert dialogs == []
    screenshot(page, "grid-charts-hostile")
    assert_page_healthy(page)


# ---------------------------------------------------------------- saving


def test_the_save_button_downloads_a_png_then_an_svg(page, app_server):
    open_heads(page, app_server)
    button = save_button(page, "one_head")
    expect(button).to_have_text("Save PNG")
    with page.expect_download() as png:
        button.click()
    assert png.value.suggested_filename == "seqlens-one_head.png"
    with open(png.value.path(), "rb") as file:
        assert file.read(8) == PNG_SIGNATURE

    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.locator(".st-key-image_format").get_by_role("radio", name="SVG").click()
    expect(button).to_have_text("Save SVG", timeout=RERUN_TIMEOUT_MS)
    wait_until_idle(page)
    with page.expect_download() as svg:
        button.click()
    assert svg.value.suggested_filename == "seqlens-one_head.svg"
    with open(svg.value.path(), encoding="utf-8") as file:
        text = file.read()
    assert text.startswith("<svg"), text[:200]
    # The labels stay text in the SVG: every token of the sentence, in place.
    for i, token in enumerate(TOKENS):
        assert f">{i}:{token}</text>" in text, token
    assert_page_healthy(page)


def test_in_chinese_the_save_button_reads_save_png(page, app_server):
    open_heads(page, app_server, query="&lang=zh")
    expect(page.get_by_role("heading", name=ZH["heads.title"])).to_be_visible()
    for key in HEADS_GRID_KEYS:
        expect(save_button(page, key)).to_have_text("保存 PNG")
    assert_page_healthy(page)


# ---------------------------------------------------------------- typing


def test_typing_a_sentence_without_enter_redraws_the_one_head_grid(page, app_server):
    open_heads(page, app_server)
    assert tick_labels(page, "one_head") == [f"{i}:{t}" for i, t in enumerate(TOKENS)]
    box = page.locator(SENTENCE_INPUT)
    box.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type(TYPED, delay=30)  # no Enter, no blur

    typed = ["[CLS]", *TYPED.lower().split(), "[SEP]"]
    wait_for_tick_words(page, "one_head", typed, FIRST_CHART_TIMEOUT_MS)
    wait_until_idle(page)
    assert tick_labels(page, "one_head") == [f"{i}:{t}" for i, t in enumerate(typed)]
    # What it draws is the new sentence: its hover labels name the new tokens.
    for _, text in grid_hover_labels(page, "one_head", points=20):
        if text:
            query, query_token, key, key_token, _ = ONE_HEAD_HOVER.match(text).groups()
            assert typed[int(query)] == query_token and typed[int(key)] == key_token, text
    expect(box).to_be_focused()
    assert_page_healthy(page)


def test_clicking_a_head_in_the_all_heads_grid_shows_that_head(page, app_server):
    open_heads(page, app_server, query="&layer=0&head=0")
    # Sweep until the pointer is over another head than the one shown (its label says which).
    sweep = grid_hover_labels(page, "all_heads", points=30)
    over = [(point, ALL_HEADS_HOVER.match(label or "")) for point, label in sweep]
    point, found = next((p, f) for p, f in over if f and f.groups() != ("0", "0"))
    layer, head = found.groups()
    hover_grid(page, "all_heads", *point)
    page.mouse.down()
    page.mouse.up()
    expect(page.get_by_role("heading", name=f"Layer {layer}, head {head}")).to_be_visible(
        timeout=RERUN_TIMEOUT_MS
    )
    # The all-heads grid is drawn again with that head outlined, the page unbroken.
    wait_until_idle(page)
    assert_page_healthy(page)


# ---------------------------------------------------------------- the recurrent lesson

RECURRENT_GRID_KEYS = ("rc_units", "rc_gates_lstm", "rc_gates_gru")
# The parts that draw them, one tab open at a time: each opened by its link.
RECURRENT_GRID_PARTS = {"units": ("rc_units",), "gates": ("rc_gates_lstm", "rc_gates_gru")}
# Read by the lesson's own tokenizer (the constructed weights read the sentence).
RECURRENT_SENTENCE = "the cat sat on the mat"
# "unit 3, 2:zebra\nF 0.7312": the hidden unit and the step under the pointer, the value.
GATE_HOVER = re.compile(r"^unit (\d+), (\d+):(\S+)\n([IFOC]) (-?\d+\.\d{3})$")


def test_the_recurrent_heatmaps_are_grids_with_a_colour_scale_per_panel(page, app_server):
    query = f"sentence={quote(RECURRENT_SENTENCE)}&rc_weights=constructed"
    assert set().union(*RECURRENT_GRID_PARTS.values()) == set(RECURRENT_GRID_KEYS)
    words = list(Tokenizer().encode(RECURRENT_SENTENCE, MAX_TOKENS).tokens)
    for part, keys in RECURRENT_GRID_PARTS.items():
        page.goto(f"{app_server}/recurrent?{query}&rc_part={part}")
        wait_until_drawn(page)
        wait_for_grids(page, keys)
        wait_until_idle(page)
        for canvas in page.evaluate(_CANVASES, list(keys)):
            assert canvas["role"] == "img" and canvas["label"].strip(), canvas
            assert canvas["painted"] > canvas["width"] * canvas["height"] // 10, canvas
            assert canvas["colours"] >= 8 and canvas["png"] > 1000, canvas
        if part == "units":
            assert tick_labels(page, "rc_units") == [f"{i}:{w}" for i, w in enumerate(words)]
    # The page is on the gates part now.
    # The LSTM's four panels, top to bottom: I, F, O (gates) and C (a signed state); the
    # pointer anywhere on them names the unit, the step and the panel's own quantity.
    seen = {}
    for fy in (0.2, 0.4, 0.6, 0.85):
        for fx in (0.3, 0.6):
            label = hover_grid(page, "rc_gates_lstm", fx, fy)
            match = GATE_HOVER.match(label or "")
            if match:
                seen[match.group(4)] = float(match.group(5))
                assert match.group(3) == words[int(match.group(2))], label
    assert set(seen) >= {"I", "C"}, seen
    assert all(0.0 <= value <= 1.0 for name, value in seen.items() if name != "C"), seen
    screenshot(page, "recurrent-grids-drawn")
    assert_page_healthy(page)
