"""The one attention (models/nets/attention.py): equal to PyTorch's fused attention, the only
softmax over query–key products under models/, and its one numpy twin held equal to it."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from models.analysis import transformer_backward as tb
from models.nets.attention import attention, attention_pattern
from models.nets.transformer import Transformer, TransformerConfig

MODELS = Path(__file__).resolve().parents[2] / "models"


def _qkv(*shape: int, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*shape, generator=g) for _ in range(3))


# --- equal to F.scaled_dot_product_attention ----------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(7, 8), (3, 7, 8), (2, 3, 7, 8)])
def test_equals_fused_attention_with_and_without_the_causal_mask(shape, causal):
    q, k, v = _qkv(*shape)
    scores, pattern, z = attention(q, k, v, causal=causal)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(z, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(shape[:-1]), rtol=0, atol=1e-6)
    future = torch.ones(shape[-2], shape[-2], dtype=torch.bool).triu(1)
    assert bool((pattern[..., future] == 0).all()) is causal
    assert bool(torch.isneginf(scores[..., future]).all()) is causal


def test_equals_fused_attention_with_a_boolean_mask_a_bias_and_cross_lengths():
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 5, 4, generator=g)
    k, v = torch.randn(2, 9, 4, generator=g), torch.randn(2, 9, 6, generator=g)
    mask = torch.rand(5, 9, generator=g) > 0.4
    mask[:, 0] = True  # every query sees a key: the fused kernel's rows are then defined
    bias = torch.randn(2, 5, 9, generator=g)
    _, pattern, z = attention(q, k, v, bias=bias, mask=mask)
    additive = bias.masked_fill(~mask, float("-inf"))
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    torch.testing.assert_close(z, expected, rtol=0, atol=1e-5)
    assert (pattern[:, ~mask] == 0).all()
    # The boolean mask combines with the causal one (only j ≤ i, and only where allowed).
    _, both, _ = attention(q, k[:, :5], v[:, :5], causal=True, mask=mask[:, :5])
    fused = F.scaled_dot_product_attention(
        q, k[:, :5], v[:, :5], attn_mask=mask[:, :5] & torch.ones(5, 5, dtype=torch.bool).tril()
    )
    torch.testing.assert_close(both @ v[:, :5], fused, rtol=0, atol=1e-5)


def test_a_given_scale_multiplies_as_the_fused_kernel_s_scale_does():
    q, k, v = _qkv(4, 6, 32, seed=2)
    _, _, z = attention(q, k, v, scale=0.3)
    expected = F.scaled_dot_product_attention(q, k, v, scale=0.3)
    torch.testing.assert_close(z, expected, rtol=0, atol=1e-5)
    # Without one it is 1/√d_k: the same weights as scale=d_k^−0.5, up to the last bit.
    _, default = attention_pattern(q, k)
    _, given = attention_pattern(q, k, scale=32**-0.5)
    torch.testing.assert_close(default, given, rtol=0, atol=1e-6)


def test_a_query_that_sees_no_key_gets_zero_weights_as_the_fused_kernel_gives():
    q, k, v = _qkv(2, 4, 8, seed=3)
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[2] = False
    _, pattern, z = attention(q, k, v, mask=mask)
    assert (pattern[:, 2] == 0).all() and (z[:, 2] == 0).all()
    assert torch.isfinite(pattern).all()
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(z[:, [0, 1, 3]], expected[:, [0, 1, 3]], rtol=0, atol=1e-5)


# --- no other softmax over query–key products under models/ ---------------------------------

# A softmax, as far as this check can see: a call named one of these, as a function
# (torch.softmax, F.softmax, np.exp, torch.exp) or as a method (scores.softmax(), x.exp()).
# exp is in because a numpy softmax is exp(s − max s) / Σ exp(s − max s).
SOFTMAX_CALLS = {"softmax", "log_softmax", "exp"}
# A matrix product: `@`, or a call named one of these (torch.matmul, np.dot, torch.einsum …).
PRODUCT_CALLS = {"matmul", "bmm", "mm", "einsum", "tensordot", "dot", "inner"}
# The one attention, and the numpy twin its measured cost keeps (held equal to it below):
# by module, and for the twin by the one function allowed.
ONE_ATTENTION = "nets/attention.py"
NUMPY_TWIN = ("analysis/transformer_backward.py", "_attention")


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _target_names(target: ast.AST) -> list[str]:
    return [node.id for node in ast.walk(target) if isinstance(node, ast.Name)]


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _own_nodes(owner: ast.AST):
    """Every node under `owner` but those inside the functions and classes it defines."""
    stack = list(ast.iter_child_nodes(owner))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


class _SoftmaxOfProducts(ast.NodeVisitor):
    """Every softmax call whose argument or receiver holds a matrix product, directly or
    through the names it reads: a name is looked up as Python does, in the innermost
    function (or the module) that binds it, and stands for every value it is ever given
    there (assignments, `x @= …`, loop and comprehension targets, `with … as`, `:=`); a
    parameter stands for nothing. Reports (function, line)."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, list[ast.AST]]] = [{}]
        self.functions: list[str] = ["<module>"]
        self.found: list[tuple[str, int]] = []

    def _bind(self, scope: dict, targets, value: ast.AST) -> None:
        for target in targets:
            for name in _target_names(target):
                scope.setdefault(name, []).append(value)

    def _bindings(self, owner: ast.AST) -> dict[str, list[ast.AST]]:
        """The names `owner` (a module, function or lambda) binds itself, not those of the
        functions inside it; its parameters are bound to no value (whatever the caller
        passes is the caller's business)."""
        scope: dict[str, list[ast.AST]] = {}
        if not isinstance(owner, ast.Module):
            arguments = owner.args
            for arg in (
                *arguments.posonlyargs,
                *arguments.args,
                *arguments.kwonlyargs,
                arguments.vararg,
                arguments.kwarg,
            ):
                if arg is not None:
                    scope[arg.arg] = []
        for node in _own_nodes(owner):
            if isinstance(node, ast.Assign):
                self._bind(scope, node.targets, node.value)
            elif isinstance(node, ast.AugAssign):  # x @= w: the statement holds the product
                self._bind(scope, [node.target], node)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._bind(scope, [node.target], node.value)
            elif isinstance(node, ast.For | ast.comprehension):
                self._bind(scope, [node.target], node.iter)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._bind(scope, [node.optional_vars], node.context_expr)
            elif isinstance(node, ast.NamedExpr):
                self._bind(scope, [node.target], node.value)
        return scope

    def _holds_product(self, expr: ast.AST, seen: set[str]) -> bool:
        for node in ast.walk(expr):
            if isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.MatMult):
                return True
            if isinstance(node, ast.Call) and _call_name(node) in PRODUCT_CALLS:
                return True
            if isinstance(node, ast.Name) and node.id not in seen:
                seen.add(node.id)
                # The innermost scope that binds the name is the one it reads, as in Python.
                scope = next((s for s in reversed(self.scopes) if node.id in s), {})
                if any(self._holds_product(value, seen) for value in scope.get(node.id, ())):
                    return True
        return False

    def _function(self, node) -> None:
        self.scopes.append(self._bindings(node))
        self.functions.append(getattr(node, "name", "<lambda>"))
        self.generic_visit(node)
        self.functions.pop()
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Module(self, node: ast.Module) -> None:
        self.scopes = [self._bindings(node)]
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if _call_name(node) in SOFTMAX_CALLS:
            operands = [*node.args, *(kw.value for kw in node.keywords)]
            if isinstance(node.func, ast.Attribute):
                operands.append(node.func.value)  # scores.softmax(-1), (q @ k.T).exp()
            if any(self._holds_product(operand, set()) for operand in operands):
                self.found.append((self.functions[-1], node.lineno))
        self.generic_visit(node)


def softmax_of_products(source: str) -> list[tuple[str, int]]:
    visitor = _SoftmaxOfProducts()
    visitor.visit(ast.parse(source))
    return visitor.found


# The six attentions that were written out beside the one, as they were: the check must see
# each of them (and so fails if one comes back).
FORMER_ATTENTIONS = {
    "bert_forward": """
def _layer(self, at, h, factor):
    q, k, v = (self._heads(f"{at}attention.self.{part}", h) for part in _QKV)
    pattern = torch.softmax(torch.matmul(q, k.transpose(2, 3)) * self.d_head**-0.5, dim=-1)
    z = torch.matmul(pattern, v).transpose(1, 2)
""",
    "kv_cache": """
def _cached_final(model, token, position, past):
    for block, (past_k, past_v) in zip(model.blocks, past, strict=True):
        q, k, v = (h @ w + b[:, None] for w, b in weights)
        keys, values = torch.cat((past_k, k), dim=1), torch.cat((past_v, v), dim=1)
        pattern = torch.softmax(q @ keys.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
""",
    "trained_sources": """
def positional_attention(core):
    with torch.no_grad():
        q = torch.einsum("pd,hde->hpe", x, attn.W_Q) + attn.b_Q[:, None]
        k = torch.einsum("pd,hde->hpe", x, attn.W_K) + attn.b_K[:, None]
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if core.cfg.causal:
            scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
        return scores.softmax(dim=-1).numpy().astype(np.float64)
""",
    "gradient_flow": """
def _attention(attn, x, causal):
    q = x @ attn.W_Q.numpy() + attn.b_Q.numpy()[:, None]
    k = x @ attn.W_K.numpy() + attn.b_K.numpy()[:, None]
    scores = q @ _T(k) / np.float32(math.sqrt(q.shape[-1]))
    pattern = np.exp(scores - scores.max(-1, keepdims=True))
""",
    "lineage": """
def _rnn_attention_model(d, seed):
    rnn = _recurrent_model("rnn", d, seed)

    def run(X):
        H = rnn(X)
        weights = torch.softmax(H @ H.T / math.sqrt(d), dim=-1)
        return H + weights @ H

    return run
""",
    "transformer": """
def attention(q, k, v, causal=False, bias=None, mask=None):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias
    pattern = torch.softmax(scores, dim=-1)
    return scores, pattern, pattern @ v
""",
}


@pytest.mark.parametrize("name", sorted(FORMER_ATTENTIONS))
def test_the_check_sees_every_attention_that_was_written_out_beside_the_one(name):
    assert softmax_of_products(FORMER_ATTENTIONS[name])


def test_the_check_leaves_a_softmax_over_what_no_product_made():
    source = """
def kl(before, after):
    log_p = torch.log_softmax(before.double(), dim=-1)
    return (log_p.exp() * (log_p - torch.log_softmax(after, dim=-1))).sum(dim=-1)

def sigmoid(a):
    return 1 / (1 + np.exp(-a))
"""
    assert softmax_of_products(source) == []


def test_no_module_under_models_but_the_one_attention_computes_a_softmax_over_products():
    found = {}
    for path in sorted(MODELS.rglob("*.py")):
        module = path.relative_to(MODELS).as_posix()
        if module == ONE_ATTENTION:
            continue
        hits = softmax_of_products(path.read_text(encoding="utf-8"))
        if module == NUMPY_TWIN[0]:
            twin = [hit for hit in hits if hit[0] == NUMPY_TWIN[1]]
            assert twin, "the numpy twin moved: update NUMPY_TWIN"
            hits = [hit for hit in hits if hit[0] != NUMPY_TWIN[1]]
        if hits:
            found[module] = hits
    assert found == {}, f"call models/nets/attention.py's attention instead: {found}"


def test_the_one_attention_is_the_check_s_own_positive_case():
    source = (MODELS / ONE_ATTENTION).read_text(encoding="utf-8")
    assert [name for name, _ in softmax_of_products(source)] == ["attention_pattern"]


# --- the numpy twin (models/analysis/transformer_backward.py) ---------------------------------


@pytest.mark.parametrize("causal", [False, True])
def test_the_numpy_twin_equals_the_transformer_s_own_attention(causal):
    cfg = TransformerConfig(d_model=64, n_heads=4, d_head=16, d_vocab=100, causal=causal)
    model = Transformer(cfg, seed=5)
    tokens = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26]
    _, cache = model.run_with_cache(tokens)
    for layer, block in enumerate(model.blocks):
        name = f"blocks.{layer}.attn"
        x = cache[f"blocks.{layer}.ln1.hook_normalized"]
        out, (q, k, v, pattern) = tb._attention(block.attn, x, causal)
        for got, hook in ((q, "q"), (k, "k"), (v, "v")):
            np.testing.assert_allclose(got, cache[f"{name}.hook_{hook}"], rtol=0, atol=1e-5)
        # The same q, k, v through the one attention: the same weights, the same output.
        _, one, z = attention(*(torch.from_numpy(a) for a in (q, k, v)), causal=causal)
        np.testing.assert_allclose(pattern, one.numpy(), rtol=0, atol=1e-6)
        np.testing.assert_array_equal(pattern == 0, one.numpy() == 0)
        expected = (z @ block.attn.W_O).sum(0) + block.attn.b_O
        np.testing.assert_allclose(out, expected.numpy(), rtol=0, atol=1e-5)
        np.testing.assert_allclose(pattern, cache[f"{name}.hook_pattern"], rtol=0, atol=1e-6)
        np.testing.assert_allclose(out, cache[f"{name}.hook_result"], rtol=0, atol=1e-5)
