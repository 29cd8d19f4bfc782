"""The attention lesson's two counts of sink heads (the all-heads summary and the paragraph
under the head statistics) count the same thing: heads whose mean weight on [CLS] and [SEP]
together is over one half. A Chinese sentence is the test: MiniLM reads many of its
characters as [UNK], a special token that is not a sink."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import open_lesson

from models.nets.pretrained import PretrainedEncoder, stack_patterns

# Five of its twelve characters are [UNK] to MiniLM's English vocabulary.
CHINESE = "我爱北京天安门，天气很好。"
COUNT = re.compile(r"有 (\d+) 个")


@pytest.fixture(scope="module")
def page():
    at = open_lesson("heads", CHINESE, lang="zh")
    assert not at.exception, [e.value for e in at.exception]
    return at


def heads_on_cls_and_sep(sentence: str) -> tuple[int, tuple[str, ...]]:
    """Counted from the model's own patterns: heads whose mean over queries of the weight
    on the [CLS] and [SEP] positions is over one half; and the tokens it read."""
    encoder = PretrainedEncoder()
    tokenized = encoder.tokenize(sentence)
    patterns = stack_patterns(encoder.run_with_cache(tokenized)).astype(np.float64)
    frame = [i for i, token in enumerate(tokenized.tokens) if token in ("[CLS]", "[SEP]")]
    assert len(frame) == 2
    share = patterns[..., frame].sum(axis=-1).mean(axis=-1)
    # No head is so near the threshold that float32 rounding on another CPU could move it.
    assert np.abs(share - 0.5).min() > 1e-4
    count = int((share > 0.5).sum())
    return count, tokenized.tokens


def test_the_summary_and_the_paragraph_count_the_same_sink_heads(page):
    (summary,) = [c.value for c in page.caption if c.value.startswith("共 72 个头")]
    (paragraph,) = [m.value for m in page.info if "注意力汇聚点" in m.value]
    in_summary = int(COUNT.search(summary).group(1))
    in_paragraph = int(COUNT.search(paragraph).group(1))
    expected, tokens = heads_on_cls_and_sep(CHINESE)
    assert "[UNK]" in tokens
    assert in_summary == in_paragraph == expected
    assert "[UNK]" not in summary.replace("\\", "")


def test_the_no_op_reading_of_sinks_is_given_as_clark_et_al_s_hypothesis():
    sentence = "The animal didn't cross the street because it was too tired"
    at = open_lesson("heads", sentence)
    (paragraph,) = [m.value for m in at.info if m.value.startswith("Attention sinks")]
    assert "which act as a no-op" not in paragraph
    assert "Clark et al. (2019" in paragraph and "hypothesis" in paragraph
    measured = re.search(r"(\d+) of 72 heads here put more than half", paragraph)
    assert measured and int(measured.group(1)) == heads_on_cls_and_sep(sentence)[0]
