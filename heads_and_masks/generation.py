"""Generation with a KV cache: where the masks of notebooks 03 and 05 meet the cache of notebook 06.

* **Decoding with a cache**: keep the keys and values of every earlier token, append the new token's own,
  and let the new query attend over all of them. The output equals full causal attention over the whole
  sequence, while one step costs O(n·d) instead of O(n²·d).
* **The mask at decode time**: several new queries (chunked prefill, speculative decoding) against n_keys
  keys, the new ones last. The causal mask is a (n_new, n_keys) rectangle aligned to the **bottom right**:
  new query i sits at position n_keys - n_new + i. ``np.tril`` of the rectangle aligns it to the top left,
  which is what PyTorch's ``is_causal`` does for non-square masks, and is wrong for a cache.
* **Rolling buffer** (Mistral): a cache of w slots, position p in slot p mod w; attention over the buffer
  (its filled slots) equals sliding-window attention over the whole sequence.
* **Masks that grant**: attention sinks (window OR the first tokens), a prefix LM (causal OR the prompt);
  **document masks** for packed rows (same document AND causal).
* **Cache bytes** of models whose layers differ: local (windowed) and global layers (Gemma 2 and 3), and
  a compressed latent per token instead of K and V per head (multi-head latent attention, DeepSeek-V2/V3).

Shapes follow the course: ``(b, h, n, d)``; masks are boolean, True = may attend, indexed [query, key].
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import math
import numbers

import numpy as np

from ._guard import reference
from ._validate import float_array, whole_number
from .attention import attention
from .masks import causal_mask, sliding_window_mask


# ---------------------------------------------------------------------------- decoding with a cache
@reference
def decode_step(q_new, k_new, v_new, k_cache, v_cache):
    """One step of generation with a KV cache: append the new keys and values, attend, return the new cache.

    q_new, k_new, v_new: (b, h, t, d), the t newest tokens (t = 1 when generating token by token);
    k_cache, v_cache: (b, h, n, d), the n tokens before them (n may be 0). The new queries see every cached
    key and, causally, the new keys up to their own (the bottom-right mask of ``bottom_right_causal_mask``).
    Returns ``(out, k_cache, v_cache)``: out (b, h, t, d); the caches (b, h, n + t, d), new copies.
    """
    q_new, k_new, v_new = (
        float_array(name, a, ndim=4) for name, a in (("q_new", q_new), ("k_new", k_new), ("v_new", v_new))
    )
    k_cache, v_cache = float_array("k_cache", k_cache, ndim=4), float_array("v_cache", v_cache, ndim=4)
    if k_cache.shape[:2] != k_new.shape[:2] or k_cache.shape[-1] != k_new.shape[-1]:
        raise ValueError(f"k_cache {k_cache.shape} and k_new {k_new.shape} must agree on (b, h, ·, d)")
    k_all = np.concatenate([k_cache, k_new], axis=2)  # (b, h, n + t, d): the new token's own key included
    v_all = np.concatenate([v_cache, v_new], axis=2)  # (b, h, n + t, d)
    mask = bottom_right_causal_mask(q_new.shape[2], k_all.shape[2])  # (t, n + t)
    return attention(q_new, k_all, v_all, mask), k_all, v_all  # (b, h, t, d), caches (b, h, n + t, d)


def generate_with_cache(q, k, v, prompt: int, chunk: int = 1):
    """Causal attention computed the way a model generates: prefill the first ``prompt`` tokens in one go,
    then ``chunk`` tokens per step, each step appending to the cache. q, k, v: (b, h, n, d) -> (b, h, n, d)."""
    q, k, v = (float_array(name, a, ndim=4) for name, a in (("q", q), ("k", k), ("v", v)))
    n = q.shape[2]
    prompt = whole_number("prompt", prompt)
    chunk = whole_number("chunk", chunk, minimum=1)
    k_cache = np.zeros(k.shape[:2] + (0, k.shape[3]), k.dtype)  # (b, h, 0, d): nothing cached yet
    v_cache = np.zeros(v.shape[:2] + (0, v.shape[3]), v.dtype)
    outputs = []
    starts = [0] + list(range(max(prompt, 1), n, chunk)) if n else []
    for start, stop in zip(starts, starts[1:] + [n]):
        out, k_cache, v_cache = decode_step(
            q[:, :, start:stop], k[:, :, start:stop], v[:, :, start:stop], k_cache, v_cache
        )
        outputs.append(out)
    return np.concatenate(outputs, axis=2) if outputs else np.zeros_like(q)


def step_work(n_cached: int, d: int, n_new: int = 1) -> dict[str, int]:
    """Multiply-adds of one generation step's attention (scores q·k and the weighted sum of v), per head.

    With a cache: the n_new new queries against the n_cached + n_new keys. Without one: recompute the
    attention of the whole sequence so far (n_cached + n_new queries, the causal half of the square)."""
    n_cached, d, n_new = whole_number("n_cached", n_cached), whole_number("d", d), whole_number("n_new", n_new)
    total = n_cached + n_new
    with_cache = 2 * n_new * total * d  # O(n·d) for one new token
    without_cache = 2 * (total * (total + 1) // 2) * d  # O(n²·d): every query again, causally
    return {"with cache": with_cache, "without cache": without_cache}


def layer_step_work(n_cached: int, width: int, n_new: int = 1, mlp_ratio: int = 4) -> dict[str, int]:
    """Multiply-adds of one generation step through a whole transformer layer of width D, all heads together.

    Besides attention (:func:`step_work` with d = D, since the heads' widths add up to D), each token goes
    through the four projections (4·D², notebook 01's count) and an MLP of two D × (mlp_ratio·D) matrices
    (2·mlp_ratio·D²). With the cache only the new tokens do; without it every token so far does again, to
    recompute its K and V in this layer. "attention with cache" is the attention part of the cached step."""
    n_cached, width = whole_number("n_cached", n_cached), whole_number("width", width)
    n_new, mlp_ratio = whole_number("n_new", n_new), whole_number("mlp_ratio", mlp_ratio, minimum=1)
    per_token = (4 + 2 * mlp_ratio) * width**2  # projections + MLP, for one token
    attention = step_work(n_cached, width, n_new)
    return {
        "with cache": n_new * per_token + attention["with cache"],
        "without cache": (n_cached + n_new) * per_token + attention["without cache"],
        "attention with cache": attention["with cache"],
    }


# ---------------------------------------------------------------------------- the mask at decode time
@reference
def bottom_right_causal_mask(n_new, n_keys):
    """(n_new, n_keys) bool: new query i, at position n_keys - n_new + i, sees keys 0 ... n_keys - n_new + i.

    The last query sees every key; with n_new = n_keys it is the square causal mask; with n_new = 1 it
    masks nothing."""
    n_new, n_keys = whole_number("n_new", n_new), whole_number("n_keys", n_keys)
    if n_new > n_keys:
        raise ValueError(f"n_new = {n_new} new queries need at least as many keys (their own), got n_keys = {n_keys}")
    query_position = np.arange(n_keys - n_new, n_keys)[:, None]  # (n_new, 1)
    key_position = np.arange(n_keys)[None, :]  # (1, n_keys)
    return key_position <= query_position  # (n_new, n_keys)


def top_left_causal_mask(n_new, n_keys):
    """(n_new, n_keys) bool: ``np.tril`` of the rectangle, query i sees keys 0 ... i. The convention of
    PyTorch's ``scaled_dot_product_attention(is_causal=True)`` for non-square inputs; wrong for a cache."""
    return np.tril(np.ones((whole_number("n_new", n_new), whole_number("n_keys", n_keys)), dtype=bool))


# ---------------------------------------------------------------------------- the rolling buffer
@reference
def rolling_cache_write(cache, new, position):
    """Write the K (or V) of tokens ``position ... position + t - 1`` into a rolling buffer of w slots.

    cache: (..., w, d), slot s holding the latest position p with p mod w = s; new: (..., t, d).
    Returns a new buffer (the input is not changed): position p goes to slot p mod w. When t > w only the
    last w tokens survive, as if written one by one."""
    cache = float_array("cache", cache, min_ndim=2)
    new = float_array("new", new, min_ndim=2)
    position = whole_number("position", position)
    if cache.shape[:-2] != new.shape[:-2] or cache.shape[-1] != new.shape[-1]:
        raise ValueError(f"cache {cache.shape} and new {new.shape} must agree on every axis but the tokens (-2)")
    w, t = cache.shape[-2], new.shape[-2]
    if w == 0:
        raise ValueError("a rolling buffer needs at least one slot")
    out = np.array(cache, dtype=np.result_type(cache, new), copy=True)  # (..., w, d)
    keep = min(t, w)  # the last w tokens; earlier ones would be overwritten anyway
    positions = np.arange(position + t - keep, position + t)  # (keep,)
    out[..., positions % w, :] = new[..., t - keep :, :]  # distinct slots: keep <= w
    return out


def slot_positions(window: int, written: int) -> np.ndarray:
    """(w,) the position held by each slot after positions 0 ... written - 1 were written (-1: empty)."""
    w, written = whole_number("window", window, minimum=1), whole_number("written", written)
    positions = np.full(w, -1)
    for p in range(max(0, written - w), written):
        positions[p % w] = p
    return positions


def rolling_window_attention(q, k, v, window: int, chunk: int = 1):
    """Sliding-window causal attention computed the way Mistral generates: a rolling buffer of ``window``
    slots, ``chunk`` tokens per step. Each step attends over the buffer *before* writing (its filled slots,
    still inside the window) and over the step's own tokens. q, k, v: (b, h, n, d) -> (b, h, n, d)."""
    q, k, v = (float_array(name, a, ndim=4) for name, a in (("q", q), ("k", k), ("v", v)))
    w = whole_number("window", window, minimum=1)
    chunk = whole_number("chunk", chunk, minimum=1)
    b, h, n, d = q.shape
    k_buffer = np.zeros((b, h, w, d))  # (b, h, w, d): constant memory, whatever n is
    v_buffer = np.zeros((b, h, w, v.shape[3]))
    outputs = []
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        held = slot_positions(w, start)  # (w,) position in each slot, -1 if empty
        query = np.arange(start, stop)[:, None]  # (t, 1)
        sees_slot = (held[None, :] >= 0) & (held[None, :] > query - w)  # (t, w): filled and in the window
        own = sliding_window_mask(stop, w)[start:stop, start:stop]  # (t, t): the step's own tokens
        keys = np.concatenate([k_buffer, k[:, :, start:stop]], axis=2)  # (b, h, w + t, d)
        values = np.concatenate([v_buffer, v[:, :, start:stop]], axis=2)
        outputs.append(attention(q[:, :, start:stop], keys, values, np.concatenate([sees_slot, own], axis=1)))
        k_buffer = rolling_cache_write(k_buffer, k[:, :, start:stop], start)
        v_buffer = rolling_cache_write(v_buffer, v[:, :, start:stop], start)
    return np.concatenate(outputs, axis=2)


def cache_tokens(policy: str, written: int, window: int | None = None, sinks: int = 0) -> int:
    """Tokens a cache holds after ``written`` tokens: "full" all, "window" at most w, "sinks" sinks + w."""
    written = whole_number("written", written)
    if policy == "full":
        return written
    w = whole_number("window", window, minimum=1)
    if policy == "window":
        return min(written, w)
    if policy == "sinks":
        return min(written, whole_number("sinks", sinks) + w)
    raise ValueError(f"policy must be 'full', 'window' or 'sinks', got {policy!r}")


def cached_positions(policy: str, written: int, window: int | None = None, sinks: int = 0) -> np.ndarray:
    """The positions whose K and V the cache holds after ``written`` tokens, in slot order (-1: empty slot).

    "full": one slot per token; "window": a rolling buffer of w slots (p mod w); "sinks": the first
    ``sinks`` positions in slots of their own, then a rolling buffer of w slots for the rest."""
    written = whole_number("written", written)
    if policy == "full":
        return np.arange(written)
    if policy == "window":
        return slot_positions(window, written)
    if policy == "sinks":
        sinks = whole_number("sinks", sinks)
        head = np.where(np.arange(sinks) < written, np.arange(sinks), -1)
        rest = slot_positions(window, max(written - sinks, 0))
        return np.concatenate([head, np.where(rest >= 0, rest + sinks, -1)])
    raise ValueError(f"policy must be 'full', 'window' or 'sinks', got {policy!r}")


# ---------------------------------------------------------------------------- masks that compose
@reference
def sinks_window_mask(n, window, sinks):
    """(n, n) bool: causal AND (within the window OR one of the first ``sinks`` tokens) (StreamingLLM)."""
    n = whole_number("n", n)
    w = whole_number("window", window, minimum=1)
    sinks = whole_number("sinks", sinks)
    key = np.arange(n)[None, :]  # (1, n)
    return causal_mask(n) & (sliding_window_mask(n, w) | (key < sinks))  # (n, n)


def prefix_lm_mask(n, prefix):
    """(n, n) bool: causal OR (the key is in the prompt): the prompt reads itself both ways."""
    n, prefix = whole_number("n", n), whole_number("prefix", prefix)
    return causal_mask(n) | (np.arange(n)[None, :] < prefix)


@reference
def document_mask(doc_ids):
    """(..., n, n) bool from per-token document ids (..., n): same document AND causal.

    Packed rows hold several documents one after another; a token must see only the earlier tokens of
    its own document. Ids need not be sorted or consecutive, only equal within a document."""
    ids = np.asarray(doc_ids)
    if ids.ndim < 1 or not (ids.size == 0 or np.issubdtype(ids.dtype, np.integer)):
        raise ValueError(f"doc_ids must be an array of whole numbers with a tokens axis, got {ids!r}")
    n = ids.shape[-1]
    same = ids[..., :, None] == ids[..., None, :]  # (..., n, n): query and key in one document
    return same & causal_mask(n)  # (..., n, n)


def packed_attention(q, k, v, doc_ids, mask_documents: bool = True):
    """Causal attention over packed rows, with (or, to show the bug, without) the document mask."""
    n = np.shape(q)[-2]
    mask = document_mask(doc_ids) if mask_documents else causal_mask(n)
    if mask.ndim == 3:
        mask = mask[:, None]  # (b, 1, n, n): the same for every head
    return attention(q, k, v, mask)


# ---------------------------------------------------------------------------- packing vs padding
def document_lengths(count: int, seed: int = 0, median: int = 300, spread: float = 1.0, longest: int = 4096):
    """``count`` document lengths drawn from a log-normal (most short, a few long, as in web text), seeded."""
    rng = np.random.default_rng(seed)
    lengths = np.exp(rng.normal(math.log(median), spread, size=whole_number("count", count)))
    return np.clip(np.round(lengths), 1, longest).astype(int)


def padding_waste(lengths, batch: int) -> dict[str, int]:
    """Batches of ``batch`` documents in the given order, each padded to its longest document."""
    lengths = np.asarray(lengths)
    batch = whole_number("batch", batch, minimum=1)
    slots = sum(int(group.max()) * len(group) for group in np.array_split(lengths, max(1, -(-len(lengths) // batch))))
    return {"real tokens": int(lengths.sum()), "slots": slots, "wasted": slots - int(lengths.sum())}


def pack_rows(lengths, row: int) -> list[list[int]]:
    """First-fit decreasing: put each document (longest first) in the first row of ``row`` tokens with room.
    Documents longer than a row are cut into full rows first (as pre-training pipelines do)."""
    row = whole_number("row", row, minimum=1)
    rows: list[list[int]] = []
    room: list[int] = []
    pieces = []
    for length in np.asarray(lengths).tolist():
        while length > row:
            rows.append([row])
            room.append(0)
            length -= row
        pieces.append(length)
    for length in sorted(pieces, reverse=True):
        for i, free in enumerate(room):
            if free >= length:
                rows[i].append(length)
                room[i] -= length
                break
        else:
            rows.append([length])
            room.append(row - length)
    return rows


def packing_waste(lengths, row: int) -> dict[str, int]:
    rows = pack_rows(lengths, row)
    real = int(np.asarray(lengths).sum())
    return {"real tokens": real, "slots": len(rows) * row, "wasted": len(rows) * row - real, "rows": len(rows)}


# ---------------------------------------------------------------------------- cache bytes of real layouts
@reference
def mixed_cache_bytes(n_local, n_global, window, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
    """Bytes of the KV cache of a model with ``n_local`` sliding-window layers (each keeps at most ``window``
    tokens) and ``n_global`` layers that keep every token: 2 (K and V) · KV heads · head size · bytes ·
    batch · (n_local · min(seq_len, window) + n_global · seq_len)."""
    n_local, n_global = whole_number("n_local", n_local), whole_number("n_global", n_global)
    window = whole_number("window", window, minimum=1)
    per_token_layer = 2 * whole_number("n_kv_heads", n_kv_heads) * whole_number("head_dim", head_dim)
    seq_len, batch = whole_number("seq_len", seq_len), whole_number("batch", batch)
    if isinstance(bytes_per_value, bool) or not isinstance(bytes_per_value, numbers.Real) or bytes_per_value <= 0:
        raise ValueError(f"bytes_per_value must be a positive number, got {bytes_per_value!r}")
    tokens = n_local * min(seq_len, window) + n_global * seq_len  # token-layers held
    return int(round(per_token_layer * tokens * batch * bytes_per_value))


def mla_cache_bytes(n_layers, latent_dim, rope_dim, seq_len, batch=1, bytes_per_value=2) -> int:
    """Multi-head latent attention keeps one compressed vector per token and layer (``latent_dim``, shared by
    every head, from which K and V are rebuilt) plus one small rotary key (``rope_dim``), not K and V per head."""
    values = (whole_number("latent_dim", latent_dim) + whole_number("rope_dim", rope_dim)) * whole_number(
        "n_layers", n_layers
    )
    return int(round(values * whole_number("seq_len", seq_len) * whole_number("batch", batch) * bytes_per_value))


@dataclasses.dataclass(frozen=True)
class CacheLayout:
    """What one token costs in the cache of a model, layer kind by layer kind.

    ``global_layers`` keep every token, ``local_layers`` at most ``window`` (a rolling buffer); an MLA
    model (``latent_dim`` set) keeps ``latent_dim + rope_dim`` values per token and layer instead of
    2 · KV heads · head size."""

    model: str
    attention: str  # "MHA", "GQA", "MQA" or "MLA"
    local_layers: int
    global_layers: int
    window: int | None
    kv_heads: int
    head_dim: int
    latent_dim: int | None
    rope_dim: int | None
    context: int
    source: str

    @property
    def layers(self) -> int:
        return self.local_layers + self.global_layers

    def cache_bytes(self, seq_len: int, batch: int = 1, bytes_per_value: float = 2) -> int:
        if self.latent_dim is not None:
            return mla_cache_bytes(self.layers, self.latent_dim, self.rope_dim or 0, seq_len, batch, bytes_per_value)
        if self.local_layers == 0:
            return mixed_cache_bytes(
                0, self.global_layers, 1, self.kv_heads, self.head_dim, seq_len, batch, bytes_per_value
            )
        return mixed_cache_bytes(
            self.local_layers,
            self.global_layers,
            self.window,
            self.kv_heads,
            self.head_dim,
            seq_len,
            batch,
            bytes_per_value,
        )

    def bytes_per_token(self, seq_len: int, bytes_per_value: float = 2) -> float:
        """The cache of ``seq_len`` tokens divided by ``seq_len``: flat for global layers, falling for local ones."""
        return self.cache_bytes(seq_len, 1, bytes_per_value) / seq_len


def _int_or_none(text: str) -> int | None:
    return int(text) if text.strip() else None


@functools.cache
def _layered_rows() -> tuple[CacheLayout, ...]:
    from .model_configs import data_dir

    rows = []
    with open(data_dir() / "layered_models.csv", newline="", encoding="utf-8") as file:
        for row in csv.DictReader(file):
            rows.append(
                CacheLayout(
                    model=row["model"],
                    attention=row["attention"],
                    local_layers=int(row["local_layers"]),
                    global_layers=int(row["global_layers"]),
                    window=_int_or_none(row["window"]),
                    kv_heads=int(row["kv_heads"]),
                    head_dim=int(row["head_dim"]),
                    latent_dim=_int_or_none(row["latent_dim"]),
                    rope_dim=_int_or_none(row["rope_dim"]),
                    context=int(row["context"]),
                    source=row["config_source"],
                )
            )
    return tuple(rows)


def cache_layouts(rolling_buffer: bool = True) -> dict[str, CacheLayout]:
    """Every model of the course: ``data/models.csv`` (notebook 06; Mistral's window as local layers when
    ``rolling_buffer``) and ``data/layered_models.csv`` (layers that differ, latent caches)."""
    from .model_configs import load_models

    layouts = {}
    for config in load_models().values():
        local = config.layers if (rolling_buffer and config.sliding_window is not None) else 0
        layouts[config.model] = CacheLayout(
            model=config.model,
            attention=config.attention,
            local_layers=local,
            global_layers=config.layers - local,
            window=config.sliding_window,
            kv_heads=config.kv_heads,
            head_dim=config.head_dim,
            latent_dim=None,
            rope_dim=None,
            context=config.context,
            source=config.config_source,
        )
    layouts.update({layout.model: layout for layout in _layered_rows()})
    return layouts


POLICIES = ("full", "window", "sinks")


def step_mask(policy: str, start: int, stop: int, window: int | None = None, sinks: int = 0) -> np.ndarray:
    """(stop - start, stop) bool: the mask of one step whose new queries are positions start … stop - 1,
    over the keys 0 … stop - 1, under a cache policy ("full", "window", "sinks")."""
    start, stop = whole_number("start", start), whole_number("stop", stop)
    if policy == "full":
        return bottom_right_causal_mask(stop - start, stop)
    if policy == "window":
        return sliding_window_mask(stop, whole_number("window", window, minimum=1))[start:stop]
    if policy == "sinks":
        return sinks_window_mask(stop, window, sinks)[start:stop]
    raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")


def generation_steps(total: int, prompt: int, chunk: int) -> list[tuple[int, int]]:
    """The (start, stop) positions of each step: the prompt in one step, then ``chunk`` tokens per step."""
    total, prompt, chunk = (
        whole_number("total", total),
        whole_number("prompt", prompt, minimum=1),
        whole_number("chunk", chunk, minimum=1),
    )
    starts = [0] + list(range(prompt, total, chunk))
    return [(a, min(b, total)) for a, b in zip(starts, starts[1:] + [total]) if a < total]
