"""How many parameters a config.json says its model has, read without building anything.

transformers builds a model from its config before it reads the weights: a config that
claims 10,000 layers would be allocated in full, whatever the safetensors file beside it
holds. So a folder's config is held to sane whole numbers here, and its parameter count
is estimated family by family (the same sums transformers' modules make), to be compared
with the limit and with the weights' own count (models/serving/model_files.py).
"""

from __future__ import annotations

from models.serving.model_files import ModelRefused

# The largest value each size may take. Far above any model the lesson can draw (the
# biggest open models have ~128 layers, d_model 16k, a 256k vocabulary, 1M positions),
# low enough that no estimate or allocation made from them can run away.
BOUNDS = {
    "layers": 1024,
    "d_model": 65_536,
    "heads": 1024,
    "kv_heads": 1024,
    "d_head": 4096,
    "d_mlp": 1_048_576,
    "vocab": 10_000_000,
    "positions": 16_777_216,
    "types": 1024,
}

# The config keys transformers reads for each size, and its defaults where a key is missing.
_ENCODER_KEYS = {
    "layers": "num_hidden_layers",
    "d_model": "hidden_size",
    "heads": "num_attention_heads",
    "d_mlp": "intermediate_size",
    "vocab": "vocab_size",
    "positions": "max_position_embeddings",
    "types": "type_vocab_size",
}
_ENCODER_DEFAULTS = {
    "layers": 12,
    "d_model": 768,
    "heads": 12,
    "d_mlp": 3072,
    "positions": 512,
    "types": 2,
}
# GPT-2's config also answers to the common names (transformers' attribute_map).
_GPT2_KEYS = {
    "layers": ("n_layer", "num_hidden_layers"),
    "d_model": ("n_embd", "hidden_size"),
    "heads": ("n_head", "num_attention_heads"),
    "d_mlp": "n_inner",
    "vocab": "vocab_size",
    "positions": ("n_positions", "max_position_embeddings"),
}
_LLAMA_KEYS = {
    "layers": "num_hidden_layers",
    "d_model": "hidden_size",
    "heads": "num_attention_heads",
    "kv_heads": "num_key_value_heads",
    "d_head": "head_dim",
    "d_mlp": "intermediate_size",
    "vocab": "vocab_size",
}
DEFAULTS = {
    "bert": {**_ENCODER_DEFAULTS, "vocab": 30522},
    "roberta": {**_ENCODER_DEFAULTS, "vocab": 50265},
    "xlm-roberta": {**_ENCODER_DEFAULTS, "vocab": 30522},
    "gpt2": {"layers": 12, "d_model": 768, "heads": 12, "vocab": 50257, "positions": 1024},
    "llama": {"layers": 32, "d_model": 4096, "heads": 32, "d_mlp": 11008, "vocab": 32000},
    "mistral": {
        "layers": 32,
        "d_model": 4096,
        "heads": 32,
        "kv_heads": 8,
        "d_mlp": 14336,
        "vocab": 32000,
    },
}
KEYS = {
    "bert": _ENCODER_KEYS,
    "roberta": _ENCODER_KEYS,
    "xlm-roberta": _ENCODER_KEYS,
    "gpt2": _GPT2_KEYS,
    "llama": _LLAMA_KEYS,
    "mistral": _LLAMA_KEYS,
}


def _bad(key: str, value) -> ModelRefused:
    return ModelRefused(
        "bad_config_value",
        detail=f"config.json: {key} = {value!r}",
        key=key,
        value=repr(value)[:40],
    )


def _names(names: str | tuple[str, ...]) -> tuple[str, ...]:
    return (names,) if isinstance(names, str) else names


def config_sizes(config: dict) -> dict[str, int]:
    """The model's sizes under our names, each a whole number in 1..BOUNDS (a missing
    optional size, such as GPT-2's n_inner, is absent); anything else is refused."""
    model_type = config.get("model_type")
    keys, defaults = KEYS[model_type], DEFAULTS[model_type]
    sizes = {}
    for name, names in keys.items():
        key = next((k for k in _names(names) if config.get(k) is not None), _names(names)[0])
        value = config.get(key)
        if value is None:
            if name in defaults:
                sizes[name] = defaults[name]
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(key, value)
        if not 1 <= value <= BOUNDS[name]:
            raise _bad(key, value)
        sizes[name] = value
    _check_heads(sizes, keys)
    return sizes


def _check_heads(sizes: dict[str, int], keys: dict) -> None:
    """Heads split the model's width (unless head_dim says otherwise), and key/value heads
    split the query heads, as the attention layers need to be built."""
    heads, kv_heads = sizes["heads"], sizes.get("kv_heads", sizes["heads"])
    if "d_head" not in sizes and sizes["d_model"] % heads:
        raise _bad(_names(keys["heads"])[0], heads)
    if kv_heads > heads or heads % kv_heads:
        raise _bad(_names(keys["kv_heads"])[0], kv_heads)


def _encoder(s: dict[str, int]) -> int:
    d, d_mlp = s["d_model"], s["d_mlp"]
    embeddings = (s["vocab"] + s["positions"] + s["types"]) * d + 2 * d
    attention = 4 * (d * d + d) + 2 * d  # query, key, value, output; LayerNorm
    mlp = (d * d_mlp + d_mlp) + (d_mlp * d + d) + 2 * d  # up, down; LayerNorm
    pooler = d * d + d
    return embeddings + s["layers"] * (attention + mlp) + pooler


def _gpt2(s: dict[str, int]) -> int:
    d = s["d_model"]
    d_mlp = s.get("d_mlp", 4 * d)
    embeddings = (s["vocab"] + s["positions"]) * d
    attention = (d * 3 * d + 3 * d) + (d * d + d) + 2 * d  # c_attn, c_proj; ln_1
    mlp = (d * d_mlp + d_mlp) + (d_mlp * d + d) + 2 * d  # c_fc, c_proj; ln_2
    # The output layer is the token embedding, transposed (tied): stored once.
    return embeddings + s["layers"] * (attention + mlp) + 2 * d


def _llama(s: dict[str, int], config: dict) -> int:
    d, d_mlp, heads = s["d_model"], s["d_mlp"], s["heads"]
    kv_heads = s.get("kv_heads", heads)
    d_head = s.get("d_head", d // heads)
    attention = d * heads * d_head * 2 + d * kv_heads * d_head * 2  # q, o; k, v
    if config.get("attention_bias") is True:
        attention += heads * d_head + 2 * kv_heads * d_head + d
    mlp = 3 * d * d_mlp + (2 * d_mlp + d if config.get("mlp_bias") is True else 0)
    layer = attention + mlp + 2 * d  # two RMSNorms
    tied = config.get("tie_word_embeddings") is True
    return s["vocab"] * d * (1 if tied else 2) + s["layers"] * layer + d


def config_parameters(config: dict) -> int:
    """The parameters a model built from `config` holds (its weights file counted the
    same way: every stored tensor). Raises ModelRefused for sizes that are not sane."""
    sizes = config_sizes(config)
    family = config["model_type"]
    if family == "gpt2":
        return _gpt2(sizes)
    if family in ("llama", "mistral"):
        return _llama(sizes, config)
    return _encoder(sizes)
