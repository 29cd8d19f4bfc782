"""The room's tally: a bar an option as long as its count, count and share written on it,
the right option set apart only once revealed, and the teacher's text shown as text."""

from __future__ import annotations

import pytest

from components.tally import TallyWords, tally_figure, tally_summary

OPTIONS = ["Paris", "Lyon", "Marseille"]
COUNTS = [5, 7, 0]
WORDS = TallyWords(
    line="{count} answers: {options}", right="{option} (right)", nobody="No answers yet"
)


def spec(options=OPTIONS, counts=COUNTS, right=None, title="Who answered what", axis="answers"):
    fig = tally_figure(options, counts, right, title=title, count_title=axis)
    return fig.to_plotly_json()


def the_bar(figure_spec: dict) -> dict:
    [bar] = figure_spec["data"]
    return bar


def test_there_is_one_horizontal_bar_an_option_as_long_as_its_count():
    bar = the_bar(spec())
    assert bar["type"] == "bar" and bar["orientation"] == "h"
    assert list(bar["x"]) == [5, 7, 0]
    assert len(bar["y"]) == 3


def test_the_options_keep_their_order_the_first_on_top():
    figure_spec = spec(options=["C", "A", "B"], counts=[1, 2, 3])
    bar, yaxis = the_bar(figure_spec), figure_spec["layout"]["yaxis"]
    ticks = dict(zip(yaxis["tickvals"], yaxis["ticktext"], strict=True))
    assert [ticks[y] for y in bar["y"]] == ["C", "A", "B"]
    assert list(bar["x"]) == [1, 2, 3]
    # Plotly draws the first category at the bottom unless the axis is reversed.
    assert yaxis["autorange"] == "reversed"
    assert list(bar["y"]) == sorted(bar["y"])


def test_each_bar_says_its_count_and_its_share_of_the_answers():
    # 5, 7 and 0 of 12: 41.67 %, 58.33 %, 0 %.
    assert the_bar(spec())["text"] == ["5 · 42 %", "7 · 58 %", "0 · 0 %"]
    # 1 of 8 is 12.5 %: halves round up; 3 of 8 is 37.5 %.
    bar = the_bar(spec(options=["a", "b", "c"], counts=[1, 3, 4]))
    assert bar["text"] == ["1 · 13 %", "3 · 38 %", "4 · 50 %"]


def test_the_count_axis_runs_from_zero_to_the_largest_count():
    assert spec()["layout"]["xaxis"]["range"] == [0, 7]


def test_a_tally_no_one_has_answered_draws_bars_of_zero_on_an_axis_to_one():
    figure_spec = spec(counts=[0, 0, 0])
    assert figure_spec["layout"]["xaxis"]["range"] == [0, 1]
    bar = the_bar(figure_spec)
    assert list(bar["x"]) == [0, 0, 0]
    assert bar["text"] == ["0 · 0 %"] * 3


def test_before_the_reveal_every_bar_has_the_same_colour():
    colours = the_bar(spec(right=None))["marker"]["color"]
    assert len(colours) == 3 and len(set(colours)) == 1


def test_after_the_reveal_the_right_bar_alone_has_its_own_colour():
    before = the_bar(spec(right=None))["marker"]["color"]
    colours = the_bar(spec(right=1))["marker"]["color"]
    assert colours[0] == colours[2] != colours[1]
    assert colours[1] != before[1]
    # Where the right option sits does not change the colours, only which bar has them.
    assert the_bar(spec(right=2))["marker"]["color"] == [colours[0], colours[0], colours[1]]


def test_the_right_option_s_label_is_marked_only_after_the_reveal():
    before = spec(right=None)["layout"]["yaxis"]["ticktext"]
    after = spec(right=0)["layout"]["yaxis"]["ticktext"]
    assert before == OPTIONS
    assert after[0] != "Paris" and after[0].endswith("Paris") and after[1:] == OPTIONS[1:]


def test_a_long_option_is_shortened_on_the_axis_and_kept_whole_on_hover():
    long = "The attention weights of every head summed over all the layers of the model"
    figure_spec = spec(options=[long, "short"], counts=[1, 1])
    label = figure_spec["layout"]["yaxis"]["ticktext"][0]
    assert label.endswith("…") and len(label) < len(long)
    assert long.startswith(label[:-1].rstrip())
    assert the_bar(figure_spec)["hovertext"][0] == long


def test_a_chinese_option_is_shortened_sooner_its_characters_being_twice_as_wide():
    chinese = "注意力权重" * 6  # 30 characters, 60 columns
    latin = "attention " * 3  # 30 characters, 30 columns
    labels = spec(options=[chinese, latin], counts=[1, 1])["layout"]["yaxis"]["ticktext"]
    assert labels[0].endswith("…") and len(labels[0]) < 20
    assert labels[1] == latin.strip()


def test_the_teacher_s_html_is_shown_as_text_not_read_as_markup():
    typed = '<b>bold</b> & <a href="x">link</a> *stars* [md](x) $x$'
    figure_spec = spec(options=[typed, "b"], counts=[1, 0], title="<i>Q</i>", axis="n <br>")
    label = figure_spec["layout"]["yaxis"]["ticktext"][0]
    assert "<" not in label and ">" not in label
    assert label.startswith("&lt;b&gt;bold&lt;/b&gt; &amp; &lt;a")
    hover = the_bar(figure_spec)["hovertext"][0]
    assert hover == '&lt;b&gt;bold&lt;/b&gt; &amp; &lt;a href="x"&gt;link&lt;/a&gt; ' + (
        "*stars* [md](x) $x$"
    )
    assert figure_spec["layout"]["title"]["text"] == "&lt;i&gt;Q&lt;/i&gt;"
    assert figure_spec["layout"]["xaxis"]["title"]["text"] == "n &lt;br&gt;"


def test_an_entity_is_never_cut_in_half_by_shortening():
    typed = "a" * 30 + "&&&&&"
    label = spec(options=[typed, "b"], counts=[1, 0])["layout"]["yaxis"]["ticktext"][0]
    assert label == "a" * 30 + "&amp;…"


def test_two_options_alike_once_shortened_keep_a_bar_each():
    stem = "x" * 40
    bar = the_bar(spec(options=[stem + "1", stem + "2"], counts=[3, 4]))
    assert len(set(bar["y"])) == 2 and list(bar["x"]) == [3, 4]


def test_the_plain_figure_is_the_figure_plotly_checks():
    fig = tally_figure(OPTIONS, COUNTS, 1, title="T", count_title="n")
    plain, checked = fig.json_pair()
    assert plain == checked


def test_counts_and_options_that_do_not_match_are_refused():
    with pytest.raises(ValueError):
        tally_figure(["a", "b"], [1], None, title="", count_title="")
    with pytest.raises(ValueError):
        tally_figure(["a", "b"], [1, -1], None, title="", count_title="")
    with pytest.raises(ValueError):
        tally_figure(["a", "b"], [1, 1], 2, title="", count_title="")


def test_the_summary_gives_every_option_s_count_and_share_in_order():
    assert tally_summary(OPTIONS, COUNTS, None, WORDS) == (
        "12 answers: Paris: 5 · 42 %; Lyon: 7 · 58 %; Marseille: 0 · 0 %"
    )


def test_the_summary_names_the_right_option_once_revealed():
    assert tally_summary(OPTIONS, COUNTS, 0, WORDS) == (
        "12 answers: Paris: 5 · 42 % (right); Lyon: 7 · 58 %; Marseille: 0 · 0 %"
    )


def test_the_summary_of_a_tally_no_one_has_answered_says_so():
    assert tally_summary(OPTIONS, [0, 0, 0], 1, WORDS) == "No answers yet"


def test_the_summary_takes_its_words_and_their_order_from_the_caller():
    chinese = TallyWords(
        line="共 {count} 个回答：{options}",
        right="{option}（正确）",
        nobody="还没有回答",
        each="{option}：{count}",
    )
    assert tally_summary(["甲", "乙"], [1, 3], 1, chinese) == (
        "共 4 个回答：甲：1 · 25 %; 乙：3 · 75 %（正确）"
    )


def test_the_summary_keeps_the_teacher_s_text_as_typed_on_one_line():
    # show_chart writes a summary as literal text (markdown_literal): escaped there, once.
    typed = "<b>a</b>\n{b} *c*"
    assert tally_summary([typed, "d"], [1, 1], None, WORDS) == (
        "2 answers: <b>a</b> {b} *c*: 1 · 50 %; d: 1 · 50 %"
    )


def _relative_luminance(hex_colour: str) -> float:
    """WCAG 2's relative luminance of an sRGB colour."""
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_the_right_bar_is_apart_from_the_muted_ones_in_lightness_not_hue_alone():
    # Lightness survives every colour-vision deficiency and a washed-out projector.
    colours = the_bar(spec(right=0))["marker"]["color"]
    lighter, darker = sorted((_relative_luminance(c) for c in colours[:2]), reverse=True)
    assert (lighter + 0.05) / (darker + 0.05) >= 2.0
