"""Hugging Face encoders and decoders whose attention heads the lesson shows, and ablates.

Any BERT-, RoBERTa-, GPT-2- or Llama-style model folder (config.json, safetensors weights,
a tokenizer) is loaded the same way: safetensors only, no remote code, eager attention
(the fused kernels return no weights). One instance is shared by every visitor, so it is
only ever read: inference mode, no hooks of ours, nothing stored on it, its config never
changed. A plain BERT encoder, the lesson's own among them, is read straight from its
safetensors file and run by the same arithmetic written out (models/nets/bert_forward.py);
transformers builds its model only if something asks for it.

Switching heads off must not touch that shared instance either. Each attention layer
asks transformers' attention-function registry for its implementation by name; the
models are loaded under our own name, `ABLATABLE_EAGER`, which runs the model's own
eager attention unchanged and then multiplies each head's output (z, before W_O) by a
per-call factor passed as a keyword argument of the forward call. Without that argument
the result is exactly transformers' eager attention.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from models.nets.bert_forward import bert_from_folder, written_out_bert
from models.serving import offline  # noqa: F401  (sets the hub switches before transformers loads)
from models.serving.model_files import ARCHITECTURES, ModelRefused, check_folder
from models.text import Note, Tokenized, tokenization_notes

# The page caps the tokens it draws (special tokens included). 128 keeps every chart live.
MAX_TOKENS = 128
ABLATABLE_EAGER = "seqlens_eager"
# Keyword argument of a forward call: float tensor [batch, n_layers, n_heads], 1 keeps a
# head's output and 0 switches it off. transformers hands unknown keyword arguments down
# to the attention function, untouched.
HEAD_KEEP = "seqlens_head_keep"

_EAGER_BY_CLASS: dict[type, Callable] = {}


def _model_eager_attention(module: torch.nn.Module) -> Callable:
    """The eager attention function written in the module's own modeling file."""
    cls = type(module)
    if cls not in _EAGER_BY_CLASS:
        found = getattr(sys.modules[cls.__module__], "eager_attention_forward", None)
        if found is None:
            raise NoAttentionWeights(cls.__name__)
        _EAGER_BY_CLASS[cls] = found
    return _EAGER_BY_CLASS[cls]


def _eager_with_head_keep(module, query, key, value, attention_mask, **kwargs):
    keep = kwargs.pop(HEAD_KEEP, None)
    z, weights = _model_eager_attention(module)(module, query, key, value, attention_mask, **kwargs)
    if keep is not None:
        # z is [batch, query_pos, head, d_head]: the heads' outputs before W_O mixes them.
        factor = keep[:, module.layer_idx].to(z.dtype)
        z = z * factor[:, None, :, None]
    return z, weights


_transformers_lock = threading.Lock()


def _transformers(model_classes: bool = True):
    """transformers; with `model_classes`, our attention function registered under
    ABLATABLE_EAGER for the models it builds.

    Imported when the first model is built, not with this module: it takes seconds on a
    cold process (3.5 s here), and the attention page imports this module before it
    draws anything; the frame and the sentence box need none of it. Configs and
    tokenizers alone take ~1 s: the registration imports transformers' masks, and with
    them torch._dynamo (~1.6 s more), which a BERT encoder run written out never needs.
    One thread at a time: transformers resolves its names lazily, and a second thread
    asking for one while the first is still importing it got a half-made module
    ("module 'transformers' has no attribute 'AttentionInterface'").
    """
    with _transformers_lock:
        import transformers

        if model_classes:
            from transformers.masking_utils import AttentionMaskInterface, eager_mask

            # Registering again replaces the entry with the same function: harmless.
            transformers.AttentionInterface.register(ABLATABLE_EAGER, _eager_with_head_keep)
            AttentionMaskInterface.register(ABLATABLE_EAGER, eager_mask)
    return transformers


class NoAttentionWeights(ModelRefused):
    def __init__(self, where: str = ""):
        super().__init__("no_attention", where=where)


@dataclass(frozen=True)
class AttentionConfig:
    """TransformerLens names for the shape of the model, plus what the lesson must know."""

    n_layers: int
    n_heads: int
    d_model: int
    d_head: int
    n_ctx: int
    d_vocab: int
    # Grouped-query attention: n_heads query heads share n_kv_heads key/value heads.
    n_kv_heads: int
    causal: bool
    model_type: str

    @property
    def group_size(self) -> int:
        return self.n_heads // self.n_kv_heads

    def kv_head(self, head: int) -> int:
        """The key/value head query head `head` reads (transformers' repeat_kv order)."""
        return head // self.group_size


def _n_ctx(c) -> int:
    n = getattr(c, "max_position_embeddings", None) or getattr(c, "n_positions", None) or 512
    # RoBERTa counts the padding offset in its table: two positions are never used.
    return n - 2 if c.model_type in ("roberta", "xlm-roberta") else n


def attention_config(c) -> AttentionConfig:
    n_heads = c.num_attention_heads
    return AttentionConfig(
        n_layers=c.num_hidden_layers,
        n_heads=n_heads,
        d_model=c.hidden_size,
        d_head=getattr(c, "head_dim", None) or c.hidden_size // n_heads,
        n_ctx=_n_ctx(c),
        d_vocab=c.vocab_size,
        n_kv_heads=getattr(c, "num_key_value_heads", None) or n_heads,
        causal=ARCHITECTURES[c.model_type] == "decoder",
        model_type=c.model_type,
    )


@dataclass(frozen=True)
class Outputs:
    """What one forward pass gives the lesson: per layer attention, the hidden states, and
    the output the ablation compares (next-token logits or the sentence embedding)."""

    attentions: tuple[torch.Tensor, ...]
    hidden_states: tuple[torch.Tensor, ...]
    # Decoders: logits of the token after the last one [batch, vocab]. Encoders: None.
    next_logits: torch.Tensor | None
    # Encoders: the last layer's output [batch, pos, d_model]. Decoders: None.
    last_hidden: torch.Tensor | None


class AttentionModel:
    """A Hugging Face model read through its tokenizer and its attention weights."""

    def __init__(self, path: Path, max_params: int | None = None):
        self.path = Path(path)
        check_folder(self.path, max_params)
        hf = _transformers(model_classes=False)
        hf.logging.set_verbosity_error()
        config = hf.AutoConfig.from_pretrained(
            self.path, local_files_only=True, trust_remote_code=False
        )
        self.cfg = attention_config(config)
        self.tokenizer = hf.AutoTokenizer.from_pretrained(
            self.path, local_files_only=True, trust_remote_code=False
        )
        self._model_lock = threading.Lock()
        self._model: torch.nn.Module | None = None
        # A BERT encoder (the lesson's own) runs written out, straight from its weights;
        # any other model through transformers, built now.
        self._written_out = bert_from_folder(self.path, config)
        if self._written_out is None:
            self._written_out = written_out_bert(self.model)
        self.n_params = (
            self._written_out.n_params
            if self._written_out is not None
            else sum(p.numel() for p in self.model.parameters())
        )
        self.special_tokens = tuple(self.tokenizer.all_special_tokens)
        self.special_ids = frozenset(self.tokenizer.all_special_ids)
        self.unknown_token = self.tokenizer.unk_token

    @property
    def model(self) -> torch.nn.Module:
        """transformers' model of the folder, in eval mode (built the first time it is
        asked for: a BERT encoder run written out needs it only to be checked against)."""
        with self._model_lock:
            if self._model is None:
                self._model = self._load_transformers_model()
            return self._model

    def _load_transformers_model(self) -> torch.nn.Module:
        hf = _transformers()
        model_class = hf.AutoModelForCausalLM if self.cfg.causal else hf.AutoModel
        model = model_class.from_pretrained(
            self.path,
            attn_implementation=ABLATABLE_EAGER,
            use_safetensors=True,
            trust_remote_code=False,
            local_files_only=True,
            dtype=torch.float32,
        )
        return model.eval().requires_grad_(False)

    # --- text in ------------------------------------------------------------------

    def tokenize(self, text: str, max_tokens: int = MAX_TOKENS) -> Tokenized:
        try:
            enc = self.tokenizer(text, return_offsets_mapping=True, add_special_tokens=True)
            offsets = [tuple(o) for o in enc["offset_mapping"]]
        except NotImplementedError:  # a slow tokenizer knows no offsets
            enc = self.tokenizer(text, add_special_tokens=True)
            offsets = [(0, 0)] * len(enc["input_ids"])
        ids = list(enc["input_ids"])
        n_before = len(ids)
        cap = max(2, min(max_tokens, self.cfg.n_ctx))
        if n_before > cap:
            # Keep the first tokens; a closing special token ([SEP]) stays the last.
            tail = 1 if ids[-1] in self.special_ids else 0
            ids = ids[: cap - tail] + ids[n_before - tail :]
            offsets = offsets[: cap - tail] + offsets[n_before - tail :]
        tokens = self.tokenizer.convert_ids_to_tokens(ids)
        return Tokenized(
            ids=tuple(ids),
            tokens=tuple(
                shown_token(self.tokenizer, token, text[start:end])
                for token, (start, end) in zip(tokens, offsets, strict=True)
            ),
            offsets=tuple(offsets),
            n_tokens_before_cap=n_before,
        )

    def special_positions(self, tokenized: Tokenized) -> tuple[int, ...]:
        return tuple(i for i, token_id in enumerate(tokenized.ids) if token_id in self.special_ids)

    # --- forward passes -------------------------------------------------------------

    def forward(
        self, ids: Iterable[int], keep: torch.Tensor | None = None, hidden: bool = True
    ) -> Outputs:
        """One pass over `ids`, repeated over the batch of `keep` ([batch, layer, head])."""
        input_ids = torch.tensor([list(ids)])
        if keep is not None:
            input_ids = input_ids.expand(keep.shape[0], -1)
        with torch.inference_mode():
            if self._written_out is not None:
                patterns, states = self._written_out(input_ids, keep)
                return Outputs(patterns, states, None, states[-1])
            return self.transformers_forward(input_ids, keep, hidden)

    def transformers_forward(
        self, input_ids: torch.Tensor, keep: torch.Tensor | None = None, hidden: bool = True
    ) -> Outputs:
        """transformers' own forward pass of the model ([batch, pos] ids)."""
        kwargs = {HEAD_KEEP: keep} if keep is not None else {}
        if self.cfg.causal:
            kwargs["logits_to_keep"] = 1
        out = self.model(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            output_attentions=True,
            output_hidden_states=hidden,
            **kwargs,
        )
        if not out.attentions or any(a is None for a in out.attentions):
            raise NoAttentionWeights(type(self.model).__name__)
        if self.cfg.causal:
            logits, last = out.logits[:, -1], None
        else:
            logits, last = None, out.last_hidden_state
        return Outputs(tuple(out.attentions), tuple(out.hidden_states or ()), logits, last)

    def run_with_cache(self, tokenized: Tokenized) -> dict[str, np.ndarray]:
        """Run the model; return a fresh trace of numpy arrays (docs/DESIGN.md, Glossary).

        `blocks.{l}.attn.hook_pattern` is `[head, query_pos, key_pos]`, one row per query
        head (with grouped-query attention, several of them read the same key/value head);
        `blocks.{l}.hook_resid_pre` is the hidden state entering layer l.
        """
        out = self.forward(tokenized.ids)
        trace: dict[str, np.ndarray] = {
            "tokens": np.array(tokenized.tokens, dtype=str),
            "token_ids": np.array(tokenized.ids, dtype=np.int64),
        }
        for layer, pattern in enumerate(out.attentions):
            trace[f"blocks.{layer}.attn.hook_pattern"] = pattern[0].float().numpy()
            trace[f"blocks.{layer}.hook_resid_pre"] = out.hidden_states[layer][0].float().numpy()
        trace[f"blocks.{self.cfg.n_layers - 1}.hook_resid_post"] = (
            out.hidden_states[-1][0].float().numpy()
        )
        return trace

    def head_keep(self, ablate: Iterable[tuple[int, int]]) -> torch.Tensor:
        return keep_factors(self.cfg, ablate)

    # --- what the lesson says about the text ----------------------------------------

    def reading_notes(self, tokenized: Tokenized, text: str) -> list[Note]:
        """What the tokenizer did to `text`: cut it, read pieces as the unknown token, or
        normalised words (accents stripped)."""
        unknown = tokenized.unknown_spans(text, self.unknown_token)
        n = len(tokenized.ids)
        notes = tokenization_notes(n, tokenized.n_tokens_before_cap, MAX_TOKENS, unknown)
        accents = accent_changes(text, self.tokenizer)
        if accents:
            shown = ", ".join(f"{word} → {normalised}" for word, normalised in accents[:8])
            notes.append(Note("normalised", quote=shown))
        return notes

    def vocab_token(self, token_id) -> str:
        """A vocabulary entry by id; ids the tokenizer never produces are named by number."""
        token = self.tokenizer.convert_ids_to_tokens(int(token_id))
        return shown_token(self.tokenizer, token) if token else f"#{int(token_id)}"


# How a token that stands for spaces alone is shown.
SPACE_SHOWN = "\u2423"  # ␣


def shown_token(tokenizer, token: str, span: str = "") -> str:
    """A token as a reader would write it; `span` is the text it was read from.

    Byte-level BPE (GPT-2, RoBERTa) and SentencePiece (Llama, Mistral) write a word's
    leading space, and any byte outside ASCII, as marks ("Ġthe", "cafÃ©", "▁the",
    "<0xE7>"); the tokenizer's own decoder turns one token back into its text. A token
    that is one byte of a longer character decodes to "\ufffd" and is shown as that
    character, from the text. WordPiece tokens ("##ing", "[CLS]") come back as they are.
    """
    decoded = tokenizer.convert_tokens_to_string([token])
    if "\ufffd" in decoded:
        decoded = span
    if decoded.strip():
        return decoded.strip()
    return SPACE_SHOWN if (decoded + span).isspace() else token


def keep_factors(cfg: AttentionConfig, ablate: Iterable[tuple[int, int]]) -> torch.Tensor:
    """`[1, layer, head]` ones, with a zero for every (layer, head) switched off."""
    keep = torch.ones(1, cfg.n_layers, cfg.n_heads)
    for layer, head in ablate:
        keep[0, layer, head] = 0.0
    return keep


def accent_changes(text: str, tokenizer) -> list[tuple[str, str]]:
    """Words the tokenizer's normaliser changes beyond lowercasing (accents stripped)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    normalizer = backend.normalizer if backend is not None else None
    if normalizer is None:
        return []
    changes = []
    for word in text.split():
        # BERT's normaliser pads each CJK character with spaces, and SentencePiece-style
        # ones mark spaces with ▁: neither changes a letter.
        normalised = normalizer.normalize_str(word).replace(" ", "").replace("▁", "")
        # Cased models keep the case; uncased ones only lowercase: neither is a change here.
        if normalised not in (word, word.lower()) and (word, normalised) not in changes:
            changes.append((word, normalised))
    return changes
