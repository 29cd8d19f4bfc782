"""Tiny randomly initialised Hugging Face models, written as a models folder would hold them.

The tests load these through the app's own loading code, and an operator can try the
models folder with them before copying real models in:

    python -m models.nets.tiny /srv/seqlens-models

Each model is a folder of config.json, model.safetensors and a fast tokenizer (a word
level vocabulary of English words, enough for test sentences). Nothing is downloaded.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

# isort: off
from models.serving import offline  # noqa: F401  (sets the hub switches before transformers loads)
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    BertConfig,
    GPT2Config,
    LlamaConfig,
    MistralConfig,
    PreTrainedTokenizerFast,
    RobertaConfig,
)
# isort: on

_WORD_TEXT = (
    "the a an animal didn ' t cross street because it was too tired cat sat on mat dog bites man "
    "and of to in is that for with as his he she they we you i not be this have from by at or "
    "one had but what all were when there can said which do their if will each about how up out "
    "them then many some so these would other into has more her two like him see time could no "
    "make than first been its who now people my made over did down only way find use may water "
    "long little very after words called just where most know get through back much before go "
    "good new write our used me any day same right look think also around another came come work"
)
WORDS = _WORD_TEXT.split()
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<s>", "</s>")
VOCAB = {token: i for i, token in enumerate((*SPECIALS, *dict.fromkeys(WORDS)))}
VOCAB_SIZE = len(VOCAB)

# Small enough to build in well under a second each; big enough to have several layers
# and heads. The Llama-style ones share each key/value head among 2 query heads
# (grouped-query attention).
TINY = dict(hidden=32, layers=2, heads=4, kv_heads=2, inner=64, positions=128)
# Wider than the usual 0.02: random heads then attend unevenly, as trained ones do, and
# switching one off moves the output by more than rounding.
INIT_RANGE = 0.5


ENCODER_SPECIALS = {
    "unk_token": "[UNK]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}
DECODER_SPECIALS = {"unk_token": "[UNK]", "bos_token": "<s>", "eos_token": "</s>"}


def _tokenizer(encoder: bool) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.WordLevel(VOCAB, ENCODER_SPECIALS["unk_token"]))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if encoder:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])],
        )
        specials = ENCODER_SPECIALS
    else:
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", VOCAB["<s>"])]
        )
        specials = DECODER_SPECIALS
    return PreTrainedTokenizerFast(tokenizer_object=tok, **specials)


def tiny_config(kind: str):
    s = TINY
    if kind in ("bert", "roberta"):
        config_class = BertConfig if kind == "bert" else RobertaConfig
        return config_class(
            vocab_size=VOCAB_SIZE,
            hidden_size=s["hidden"],
            num_hidden_layers=s["layers"],
            num_attention_heads=s["heads"],
            intermediate_size=s["inner"],
            max_position_embeddings=s["positions"] + 2,
            pad_token_id=VOCAB["[PAD]"],
            initializer_range=INIT_RANGE,
        )
    if kind == "gpt2":
        return GPT2Config(
            vocab_size=VOCAB_SIZE,
            n_embd=s["hidden"],
            n_layer=s["layers"],
            n_head=s["heads"],
            n_positions=s["positions"],
            initializer_range=INIT_RANGE,
            bos_token_id=VOCAB["<s>"],
            eos_token_id=VOCAB["</s>"],
        )
    if kind in ("llama", "mistral"):
        config_class = {"llama": LlamaConfig, "mistral": MistralConfig}[kind]
        return config_class(
            vocab_size=VOCAB_SIZE,
            hidden_size=s["hidden"],
            num_hidden_layers=s["layers"],
            num_attention_heads=s["heads"],
            num_key_value_heads=s["kv_heads"],
            intermediate_size=s["inner"],
            max_position_embeddings=s["positions"],
            initializer_range=INIT_RANGE,
            bos_token_id=VOCAB["<s>"],
            eos_token_id=VOCAB["</s>"],
        )
    raise ValueError(f"no tiny model of kind {kind!r}")


KINDS = ("bert", "roberta", "gpt2", "llama", "mistral")


def save_tiny_model(kind: str, folder: Path, seed: int = 0) -> Path:
    """Build one tiny model with random weights and save it (safetensors) under `folder`."""
    config = tiny_config(kind)
    encoder = kind in ("bert", "roberta")
    torch.manual_seed(seed)
    model_class = AutoModel if encoder else AutoModelForCausalLM
    model = model_class.from_config(config)
    folder = Path(folder)
    model.save_pretrained(folder, safe_serialization=True)
    _tokenizer(encoder).save_pretrained(folder)
    return folder


def save_tiny_models(root: Path, kinds=KINDS) -> dict[str, Path]:
    """One folder per kind, named `tiny-<kind>`, under `root`."""
    return {kind: save_tiny_model(kind, Path(root) / f"tiny-{kind}") for kind in kinds}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m models.nets.tiny MODELS_FOLDER")
    for kind, path in save_tiny_models(Path(sys.argv[1])).items():
        print(f"{kind}: {path}")
