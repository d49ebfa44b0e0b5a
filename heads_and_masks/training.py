"""A tiny attention-only model trained in NumPy, with every gradient written out (notebook 08).

The task needs two rules. Each sequence is ``n`` random tokens; at every position t ≥ 1 the model
predicts **two** tokens: the one before it (``ids[t - 1]``, a rule by relative position) and the first
token of the sequence (``ids[0]``, a rule by absolute position). One attention layer with a causal mask
and a residual connection, no MLP:

    x      = token[ids] + position                        # (b, n, D)
    q,k,v  = split_heads(x @ w_q), ...                    # (b, h, n, d), d = D / h
    heads  = attention(q, k, v, causal)                   # (b, h, n, d)
    y      = x + merge_heads(heads) @ w_o                 # (b, n, D)
    logits = y @ unembed                                  # (b, n, 2 V): previous token, first token

One head is one weighted average of value vectors: it cannot hand the output projection the previous
token *and* the first token apart (their sum is symmetric in the two), so the task needs two heads.

The backward pass of masked scaled dot-product attention (:func:`attention_backward`) is the graded
skill of the notebook; the rest of the backward pass is plain matrix calculus. Everything is
deterministic: the same seed gives the same data, the same initial weights and the same curves.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from ._guard import reference
from .grading import grading_mode
from ._validate import bool_mask, float_array, whole_number
from .attention import attention_weights, masked_softmax
from .heads import head_size, merge_heads, split_heads
from .i18n import N_

RULES = (N_("previous token"), N_("first token"))  # shown in notebook 08's widget, translated


# ---------------------------------------------------------------------------- the graded backward pass
@reference
def attention_backward(q, k, v, mask, dout):
    """Gradients of ``out = softmax(q kᵀ / sqrt(d), masked) v`` given ``dout = dL/dout``: (dq, dk, dv).

    q: (..., n_q, d)   k: (..., n_k, d)   v: (..., n_k, d_v)   mask: None or broadcastable to (..., n_q, n_k)
    dout: (..., n_q, d_v).  With p the weights and s the scaled scores:

        dv = pᵀ dout                        # (..., n_k, d_v)
        dp = dout vᵀ                        # (..., n_q, n_k)
        ds = p ⊙ (dp − rowsum(p ⊙ dp))      # the full softmax Jacobian, row by row
        dq = ds k / sqrt(d)                 # (..., n_q, d)
        dk = dsᵀ q / sqrt(d)                # (..., n_k, d)

    A forbidden entry has p = 0, so ds = 0 there: no gradient flows through it. A row with no allowed
    key has p = 0 everywhere: its query gets a zero gradient and gives none, never NaN.
    """
    q = float_array("q", q, min_ndim=2)
    k = float_array("k", k, min_ndim=2)
    v = float_array("v", v, min_ndim=2)
    dout = float_array("dout", dout, min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the head size (last axis): got {q.shape} and {k.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have as many keys (axis -2): got {k.shape} and {v.shape}")
    if mask is not None:
        mask = bool_mask("mask", mask)
    scale = 1.0 / math.sqrt(q.shape[-1])
    weights = masked_softmax(q @ np.swapaxes(k, -1, -2) * scale, mask)  # (..., n_q, n_k)
    expected = weights.shape[:-1] + (v.shape[-1],)
    if dout.shape != expected:
        raise ValueError(f"dout must have the shape of the output {expected}, got {dout.shape}")
    return _backward_from_weights(q, k, v, weights, dout)


def _backward_from_weights(q, k, v, weights, dout):
    """The backward pass given the forward pass's weights p (the training loop keeps them)."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    dv = np.swapaxes(weights, -1, -2) @ dout  # (..., n_k, d_v)
    dweights = dout @ np.swapaxes(v, -1, -2)  # (..., n_q, n_k)
    dscores = weights * (dweights - np.sum(weights * dweights, axis=-1, keepdims=True))  # (..., n_q, n_k)
    dq = dscores @ k * scale  # (..., n_q, d)
    dk = np.swapaxes(dscores, -1, -2) @ q * scale  # (..., n_k, d)
    return dq, dk, dv


def attention_backward_slow(q, k, v, mask, dout):
    """The same gradients, one query row at a time with the softmax Jacobian built explicitly (for tests)."""
    q, k, v, dout = (np.asarray(a, dtype=np.float64) for a in (q, k, v, dout))
    n_q, d = q.shape
    allowed = np.ones((n_q, k.shape[0]), bool) if mask is None else np.broadcast_to(mask, (n_q, k.shape[0]))
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    for i in range(n_q):
        keys = np.flatnonzero(allowed[i])
        if keys.size == 0:
            continue  # nothing allowed: no weight, no gradient
        s = k[keys] @ q[i] / math.sqrt(d)
        p = np.exp(s - s.max())
        p /= p.sum()
        jacobian = np.diag(p) - np.outer(p, p)  # dp/ds of one softmax row
        dv[keys] += np.outer(p, dout[i])
        ds = jacobian @ (v[keys] @ dout[i])
        dq[i] = ds @ k[keys] / math.sqrt(d)
        dk[keys] += np.outer(ds, q[i]) / math.sqrt(d)
    return dq, dk, dv


def numerical_gradients(function, arrays, eps=1e-6):
    """Central finite differences of the scalar ``function(*arrays)`` with respect to every entry of each array."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        for index in np.ndindex(a.shape):
            kept = a[index]
            a[index] = kept + eps
            up = function(*arrays)
            a[index] = kept - eps
            down = function(*arrays)
            a[index] = kept
            g[index] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


# ---------------------------------------------------------------------------- the task
def causal(n: int) -> np.ndarray:
    return np.tril(np.ones((n, n), dtype=bool))  # (n, n), True where key <= query


def make_batch(rng: np.random.Generator, batch: int, n: int, vocab: int):
    """Random token ids (batch, n) and the two targets at every position: previous and first token."""
    ids = rng.integers(0, vocab, size=(batch, n))  # (b, n)
    previous = np.concatenate([ids[:, :1], ids[:, :-1]], axis=1)  # (b, n); position 0 has none (not scored)
    first = np.repeat(ids[:, :1], n, axis=1)  # (b, n)
    return ids, np.stack([previous, first], axis=-1)  # (b, n), (b, n, 2)


# ---------------------------------------------------------------------------- the model
@dataclasses.dataclass(frozen=True)
class Config:
    vocab: int = 16  # V tokens
    n: int = 8  # positions
    width: int = 16  # D
    heads: int = 2  # h; d = D / h
    split: str = "(h d)"  # how the width is cut into heads; "(d h)" is notebook 01's bug

    @property
    def head_size(self) -> int:
        return head_size(self.width, self.heads)


def init_params(config: Config, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Small random weights; the same generator state gives the same model."""
    V, n, D = config.vocab, config.n, config.width
    scale = 1.0 / math.sqrt(D)
    return {
        "token": rng.normal(0, 1, (V, D)),  # (V, D)
        "position": rng.normal(0, 1, (n, D)),  # (n, D)
        "w_q": rng.normal(0, scale, (D, D)),  # (D, D), used as x @ w
        "w_k": rng.normal(0, scale, (D, D)),
        "w_v": rng.normal(0, scale, (D, D)),
        "w_o": rng.normal(0, scale, (D, D)),
        "unembed": rng.normal(0, scale, (D, 2 * V)),  # (D, 2V): previous token, then first token
    }


def _split(x: np.ndarray, config: Config) -> np.ndarray:
    """(b, n, D) -> (b, h, n, d) in the model's order: the course's split_heads, or the (d h) bug."""
    if config.split == "(h d)":
        return split_heads(x, config.heads)  # b n (h d) -> b h n d
    if config.split == "(d h)":
        b, n, D = x.shape
        return x.reshape(b, n, D // config.heads, config.heads).transpose(0, 3, 1, 2)  # b n (d h) -> b h n d
    raise ValueError(f"split must be '(h d)' or '(d h)', got {config.split!r}")


def _unsplit(x: np.ndarray, config: Config) -> np.ndarray:
    """The inverse of _split, (b, h, n, d) -> (b, n, D): the gradient of a split is the merge, in the same order."""
    if config.split == "(h d)":
        return merge_heads(x)  # b h n d -> b n (h d)
    b, h, n, d = x.shape
    return x.transpose(0, 2, 3, 1).reshape(b, n, d * h)  # b h n d -> b n (d h)


def forward(params, ids, config: Config, keep=None):
    """Logits (b, n, 2, V) and what the backward pass needs. ``keep`` (h,) of 0/1 ablates heads."""
    b, n = ids.shape
    x = params["token"][ids] + params["position"][:n]  # (b, n, D)
    q = _split(x @ params["w_q"], config)  # (b, h, n, d)
    k = _split(x @ params["w_k"], config)  # (b, h, n, d)
    v = _split(x @ params["w_v"], config)  # (b, h, n, d)
    mask = causal(n)
    weights = attention_weights(q, k, mask)  # (b, h, n, n), scaled by 1/sqrt(d)
    heads = weights @ v  # (b, h, n, d): attention(q, k, v, mask), keeping the weights for the backward pass
    gate = np.ones(config.heads) if keep is None else np.asarray(keep, dtype=np.float64)
    gated = heads * gate[:, None, None]  # (b, h, n, d); an ablated head contributes nothing
    merged = merge_heads(gated)  # (b, n, D), heads back side by side in (h d) order
    y = x + merged @ params["w_o"]  # (b, n, D), the residual stream
    logits = (y @ params["unembed"]).reshape(b, n, 2, config.vocab)  # (b, n, 2, V)
    cache = dict(ids=ids, x=x, q=q, k=k, v=v, weights=weights, gate=gate, merged=merged, y=y)
    return logits, cache


def loss_and_dlogits(logits, targets):
    """Mean cross-entropy over positions t ≥ 1 and both rules; its gradient; the loss of each rule (2,)."""
    b, n, rules, V = logits.shape
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (b, n, 2, V)
    onehot = targets[..., None] == np.arange(V)  # (b, n, 2, V), True at the right token
    picked = np.sum(log_probs * onehot, axis=-1)  # (b, n, 2) log-probability of the right token
    scored = picked[:, 1:]  # position 0 has no previous token
    per_rule = -scored.mean(axis=(0, 1))  # (2,)
    count = scored.shape[0] * scored.shape[1] * rules
    dlogits = np.exp(log_probs) - onehot  # softmax minus one-hot: the gradient of cross-entropy
    dlogits[:, 0] = 0.0
    return float(per_rule.mean()), dlogits / count, per_rule


def backward(params, cache, dlogits, config: Config):
    """Gradients of every parameter, given dL/dlogits (b, n, 2, V): the forward pass read backwards."""
    b, n = cache["ids"].shape
    x, y, merged = cache["x"], cache["y"], cache["merged"]
    dlogits = dlogits.reshape(b, n, 2 * config.vocab)  # (b, n, 2V)
    grads = {"unembed": _flat(y).T @ _flat(dlogits)}  # sum over b and n of the outer products
    dy = dlogits @ params["unembed"].T  # (b, n, D)
    grads["w_o"] = _flat(merged).T @ _flat(dy)
    dgated = split_heads(dy @ params["w_o"].T, config.heads)  # (b, h, n, d): the merge read backwards
    dheads = dgated * cache["gate"][:, None, None]
    # attention_backward, every head at once, with the weights the forward pass kept
    dq, dk, dv = _backward_from_weights(
        cache["q"], cache["k"], cache["v"], cache["weights"], dheads
    )  # (b, h, n, d) each
    dx = dy.copy()  # the residual path
    for name, dpart in (("w_q", dq), ("w_k", dk), ("w_v", dv)):
        dproj = _unsplit(dpart, config)  # (b, n, D)
        grads[name] = _flat(x).T @ _flat(dproj)
        dx += dproj @ params[name].T
    used = cache["ids"][..., None] == np.arange(config.vocab)  # (b, n, V), one-hot
    grads["token"] = _flat(used).T.astype(dx.dtype) @ _flat(dx)  # (V, D): a token used twice gets both gradients
    grads["position"] = np.zeros_like(params["position"])
    grads["position"][:n] = dx.sum(axis=0)
    return grads


def _flat(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1])  # (b, n, D) -> (b·n, D)


def loss_of(params, ids, targets, config: Config, keep=None):
    """The loss and the loss of each rule, with heads ablated by ``keep``."""
    logits, _ = forward(params, ids, config, keep)
    loss, _, per_rule = loss_and_dlogits(logits, targets)
    return loss, per_rule


def attention_maps(params, ids, config: Config) -> np.ndarray:
    """Every head's attention weights on the sequences ``ids``: (b, h, n, n)."""
    _, cache = forward(params, ids, config)
    return cache["weights"]


class Adam:
    """Adam (Kingma & Ba 2015) over a dict of arrays, updated in place."""

    def __init__(self, params, lr=0.02, beta1=0.9, beta2=0.999, eps=1e-8):
        self.lr, self.beta1, self.beta2, self.eps, self.t = lr, beta1, beta2, eps, 0
        self.m = {name: np.zeros_like(p) for name, p in params.items()}
        self.s = {name: np.zeros_like(p) for name, p in params.items()}

    def step(self, params, grads):
        self.t += 1
        for name, g in grads.items():
            self.m[name] = self.beta1 * self.m[name] + (1 - self.beta1) * g
            self.s[name] = self.beta2 * self.s[name] + (1 - self.beta2) * g * g
            m_hat = self.m[name] / (1 - self.beta1**self.t)
            s_hat = self.s[name] / (1 - self.beta2**self.t)
            params[name] -= self.lr * m_hat / (np.sqrt(s_hat) + self.eps)


# ---------------------------------------------------------------------------- training, with snapshots
@dataclasses.dataclass
class Run:
    """One training run: the final weights, the loss curve, and snapshots taken along the way."""

    config: Config
    params: dict[str, np.ndarray]
    losses: np.ndarray  # (steps,) training loss at every step
    rule_losses: np.ndarray  # (steps, 2) the loss of each rule
    snapshot_steps: list[int]
    snapshot_params: list[dict[str, np.ndarray]]
    probe_ids: np.ndarray  # (b_probe, n) fixed held-out sequences, for maps and evaluation
    probe_targets: np.ndarray  # (b_probe, n, 2)
    seed: int

    def maps(self, index: int = -1) -> np.ndarray:
        """Attention maps (b_probe, h, n, n) of snapshot ``index`` on the probe sequences."""
        return attention_maps(self.snapshot_params[index], self.probe_ids, self.config)

    def evaluate(self, keep=None, params=None, config=None):
        """(loss, per-rule loss) on the probe sequences, with heads ablated by ``keep``."""
        return loss_of(
            self.params if params is None else params,
            self.probe_ids,
            self.probe_targets,
            self.config if config is None else config,
            keep,
        )


def train(
    config: Config | None = None,
    *,
    seed: int = 0,
    steps: int = 250,
    batch: int = 64,
    lr: float = 0.03,
    snapshots: int = 12,
    probe_batch: int = 256,
) -> Run:
    """Train with Adam on fresh random batches; deterministic from ``seed``.

    In grading mode (``heads_and_masks.grading``) nothing is trained: the run holds its initial weights
    (one snapshot, no loss curve), so the notebook's later cells stay cheap while a submission is graded.
    """
    whole_number("steps", steps, minimum=1)
    config = Config() if config is None else config
    if grading_mode():
        steps = 0
    rng = np.random.default_rng(seed)
    params = init_params(config, rng)
    probe_ids, probe_targets = make_batch(np.random.default_rng([seed, 1]), probe_batch, config.n, config.vocab)
    data = np.random.default_rng([seed, 2])
    optimiser = Adam(params, lr=lr)
    wanted = set(np.unique(np.round(np.geomspace(1, steps + 1, snapshots)).astype(int) - 1).tolist()) | {steps}
    # (geometric spacing: the heads change most in the first steps)
    losses, rule_losses, snapshot_steps, snapshot_params = [], [], [], []
    for step in range(steps + 1):
        if step in wanted:  # the weights *before* this step's update (step 0: the initial weights)
            snapshot_steps.append(step)
            snapshot_params.append({name: p.copy() for name, p in params.items()})
        if step == steps:
            break
        ids, targets = make_batch(data, batch, config.n, config.vocab)
        logits, cache = forward(params, ids, config)
        loss, dlogits, per_rule = loss_and_dlogits(logits, targets)
        optimiser.step(params, backward(params, cache, dlogits, config))
        losses.append(loss)
        rule_losses.append(per_rule)
    return Run(
        config,
        params,
        np.array(losses),
        np.array(rule_losses).reshape(-1, 2),
        snapshot_steps,
        snapshot_params,
        probe_ids,
        probe_targets,
        seed,
    )


# ---------------------------------------------------------------------------- reading a trained model
@reference
def rule_weights(weights):
    """How much each head looks where each rule needs: (h, 2), previous token then first token.

    weights: (b, h, n, n) attention weights of a causal model. Column 0 is the mean weight on key t − 1,
    column 1 the mean weight on key 0, both over the batch and over the queries t = 2 … n − 1 (at t = 0
    and t = 1 the two rules point at the same key, so those rows tell nothing apart).
    """
    weights = float_array("weights", weights, ndim=4)
    b, h, n, n_k = weights.shape
    if n != n_k or n < 3:
        raise ValueError(f"weights must be (b, h, n, n) with n ≥ 3, got {weights.shape}")
    t = np.arange(2, n)
    previous = weights[:, :, t, t - 1].mean(axis=(0, 2))  # (h,)
    first = weights[:, :, t, 0].mean(axis=(0, 2))  # (h,)
    return np.stack([previous, first], axis=-1)  # (h, 2)


def ablation_table(run: Run) -> np.ndarray:
    """Probe loss with no head removed (row 0), then with head i zeroed (row i + 1): (h + 1, 3) = total, each rule."""
    loss, per_rule = run.evaluate()
    rows = [(loss, *per_rule)]
    for i in range(run.config.heads):
        keep = np.ones(run.config.heads)
        keep[i] = 0.0
        loss, per_rule = run.evaluate(keep)
        rows.append((loss, *per_rule))
    return np.array(rows)


SEEDS = (0, 1, 2, 3, 4)  # the seeds every comparison of notebook 08 runs over: one seed can be an outlier


def runs_over_seeds(config: Config, seeds=SEEDS, **train_options) -> list[Run]:
    """One training run of ``config`` per seed (two snapshots each: only the end is compared)."""
    return [train(config, seed=s, snapshots=2, **train_options) for s in seeds]


def final_losses(runs) -> np.ndarray:
    """(len(runs),) the held-out loss at the end of each run."""
    return np.array([run.evaluate()[0] for run in runs])


def compare_head_counts(head_counts=(1, 2, 4), seeds=SEEDS, **train_options):
    """Final probe loss of the same width cut into different numbers of heads: {h: (len(seeds),) losses}."""
    base = train_options.pop("config", None) or Config()
    return {
        h: final_losses(runs_over_seeds(dataclasses.replace(base, heads=h), seeds, **train_options))
        for h in head_counts
    }


@functools.cache
def notebook_run() -> Run:
    """The main run of notebook 08 (the default configuration, seed 0), trained once per process (for the widget)."""
    return train()


def chance_loss(config: Config) -> float:
    """The loss of a model that knows nothing: ln V for each prediction."""
    return math.log(config.vocab)
