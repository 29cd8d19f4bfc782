"""Shared models under many visitors at once: nobody changes them, everybody gets their own answer.

A classroom server runs one copy of each model for every session's thread. These tests
hammer one copy from many threads and compare with a serial run of the same inputs.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from models.nets.pretrained import PretrainedEncoder
from models.nets.tokenizer import Tokenizer
from models.nets.transformer import Transformer, TransformerConfig

SENTENCES = [
    "The animal didn't cross the street because it was too tired",
    "我爱你，你爱我",
    "dog bites man",
    "A quick brown fox jumps over the lazy dog again and again",
    "the the the the",
    "Alice gave Bob the book because she had finished reading it",
    "I sat on the river bank",
    "one",
]
THREADS = 8
ROUNDS = 4


def fingerprint(module: torch.nn.Module) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().numpy().tobytes())
    return digest.hexdigest()


def assert_untouched(module: torch.nn.Module, before: str) -> None:
    assert fingerprint(module) == before
    assert not module.training
    assert all(p.grad is None for p in module.parameters())
    assert not any(p.requires_grad for p in module.parameters())


def run_everywhere(work, inputs):
    """`work` on every input, serially, then from THREADS threads at once, ROUNDS times over."""
    serial = [work(x) for x in inputs]
    jobs = [x for _ in range(ROUNDS) for x in inputs]
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        parallel = list(pool.map(work, jobs))
    return serial, parallel


@pytest.fixture(scope="module")
def encoder() -> PretrainedEncoder:
    return PretrainedEncoder()


def test_pretrained_encoder_gives_each_thread_its_own_serial_answer(encoder):
    before = fingerprint(encoder.model)

    def work(text):
        return encoder.run_with_cache(encoder.tokenize(text))

    serial, parallel = run_everywhere(work, SENTENCES)
    for i, trace in enumerate(parallel):
        expected = serial[i % len(SENTENCES)]
        assert list(trace["tokens"]) == list(expected["tokens"])
        for name, array in expected.items():
            if array.dtype.kind == "f":
                np.testing.assert_allclose(trace[name], array, atol=1e-5, err_msg=name)
    assert_untouched(encoder.model, before)


@pytest.mark.parametrize("positional", ["sinusoidal", "rope", "alibi"])
def test_own_transformer_gives_each_thread_its_own_serial_answer(positional):
    tokenizer = Tokenizer()
    model = Transformer(TransformerConfig(d_vocab=tokenizer.vocab_size, positional=positional))
    before = fingerprint(model)
    ids = [list(tokenizer.encode(text).ids) for text in SENTENCES]

    def work(token_ids):
        out, cache = model.run_with_cache(token_ids)
        return out.numpy(), cache

    serial, parallel = run_everywhere(work, ids)
    for i, (out, cache) in enumerate(parallel):
        expected_out, expected_cache = serial[i % len(ids)]
        np.testing.assert_allclose(out, expected_out, atol=1e-5)
        assert cache.keys() == expected_cache.keys()
        for name in expected_cache:
            np.testing.assert_allclose(cache[name], expected_cache[name], atol=1e-5)
    assert_untouched(model, before)


def test_ablations_from_many_threads_switch_off_only_their_own_heads(encoder):
    """Each visitor switches different heads off on the one shared MiniLM at once."""
    from models.analysis.ablation import ablate

    before = fingerprint(encoder.model)
    choices = [((3, 1),), ((5, 11), (0, 0)), (), ((2, 7),), ((1, 1), (4, 4), (5, 5)), ((0, 3),)]
    inputs = [(SENTENCES[i % len(SENTENCES)], heads) for i, heads in enumerate(choices)]

    def work(job):
        text, heads = job
        change = ablate(encoder, encoder.tokenize(text), heads)
        return change.cosine, change.token_cosine

    serial, parallel = run_everywhere(work, inputs)
    assert serial[2][0] == pytest.approx(1.0, abs=1e-12)  # no head off: unchanged
    assert len({round(cosine, 9) for cosine, _ in serial}) == len(inputs)
    for i, (cosine, tokens) in enumerate(parallel):
        expected_cosine, expected_tokens = serial[i % len(inputs)]
        assert cosine == pytest.approx(expected_cosine, abs=1e-6)
        np.testing.assert_allclose(tokens, expected_tokens, atol=1e-5)
    assert_untouched(encoder.model, before)
