"""Static pictures of notebook 06: which KV head serves which query head, and KV caches of real models."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..figure_style import KV_LAYOUT_COLOURS, KV_LAYOUT_LINE_STYLES, drawn_in_course_style
from ..grading import idle_while_grading
from ..i18n import _, ngettext, number
from ..kv_heads import kv_cache_bytes
from ..model_configs import GiB, KiB, ModelConfig, longest_context
from ..text_alternative import with_lead
from . import picture  # noqa: F401  (the notebooks import it from here)

ATTENTION_COLOURS = {kind: KV_LAYOUT_COLOURS[kind] for kind in ("MHA", "GQA", "MQA")}


@idle_while_grading()
@drawn_in_course_style
def head_mapping_figure(h: int = 8, g: int = 2) -> Figure:
    """Two rows of h query heads, coloured by the KV head they read: repeat (right) and tile (wrong)."""
    if g < 1 or h % g:
        raise ValueError(f"h = {h} must be divisible by g = {g}")
    group = h // g
    rows = {
        _("repeat: KV head i // (h // g)  (right)"): np.arange(h) // group,
        _("tile: KV head i % g  (the silent bug)"): np.arange(h) % g,
    }
    figure = Figure(figsize=(min(0.6 * h + 0.4, 7.2), 2.9), layout="constrained")
    ax = figure.subplots()
    colours = [f"C{j % 10}" for j in range(g)]
    for row, (label, kv) in enumerate(rows.items()):
        y = 1.5 * (1 - row)
        for i, j in enumerate(kv):
            ax.add_patch(_square(i, y, colours[j]))
            ax.text(i + 0.5, y + 0.5, f"q{i}\nkv{j}", ha="center", va="center", color="white")
        ax.text(0.05, y + 1.05, label, ha="left", va="bottom")
    ax.set(xlim=(-0.05, h + 0.05), ylim=(-0.05, 3.0), aspect="equal")
    ax.set_title(_("h = {h} query heads, g = {g} KV heads:\nwhich KV head each query head reads").format(h=h, g=g))
    ax.axis("off")
    right, tiled = rows.values()
    wrong = int((right != tiled).sum())
    if not wrong:
        lead = _("Here both orders give every query head the same KV head: with g = {g} they cannot differ.").format(
            g=g
        )
    else:
        lead = ngettext(
            "With repeat, each KV head serves {group} consecutive query heads: q0 to q{last} read kv0. With tile, "
            "the query heads take the KV heads in turn, so q1 reads kv1: {wrong} of the {h} query heads reads the "
            "wrong KV head, and nothing fails.",
            "With repeat, each KV head serves {group} consecutive query heads: q0 to q{last} read kv0. With tile, "
            "the query heads take the KV heads in turn, so q1 reads kv1: {wrong} of the {h} query heads read the "
            "wrong KV head, and nothing fails.",
            wrong,
        ).format(group=group, last=group - 1, wrong=wrong, h=h)
    return with_lead(figure, lead)


def _square(x, y, colour):
    from matplotlib.patches import Rectangle

    return Rectangle((x + 0.05, y + 0.05), 0.9, 0.9, color=colour)


@idle_while_grading()
@drawn_in_course_style
def cache_per_token_figure(models: dict[str, ModelConfig], bytes_per_value: int = 2) -> Figure:
    """Horizontal bars: KV cache one token adds, for every model, coloured by MHA / GQA / MQA."""
    names = list(models)[::-1]
    sizes = [models[m].kv_bytes_per_token(bytes_per_value) / KiB for m in names]  # KiB
    figure = Figure(figsize=(7.2, 0.38 * len(names) + 1.2), layout="constrained")
    ax = figure.subplots()
    bars = ax.barh(names, sizes, color=[ATTENTION_COLOURS[models[m].attention] for m in names])
    for bar, m, size in zip(bars, names, sizes):
        c = models[m]
        y = bar.get_y() + bar.get_height() / 2
        ax.text(size * 1.1, y, _("{size} KiB").format(size=number(size, ",.0f")), va="center")
        shape = _("{attention}: {layers} layers × {kv_heads} KV heads × {head_dim}").format(
            attention=c.attention, layers=c.layers, kv_heads=c.kv_heads, head_dim=c.head_dim
        )
        ax.text(1.03, y, shape, va="center", transform=ax.get_yaxis_transform())  # right of the axes
    ax.set_xscale("log")
    ax.set_xlim(min(sizes) / 1.5, max(sizes) * 8)
    ax.set_xlabel(
        _("KV cache per token (KiB = 2¹⁰ bytes, {bits}-bit values), log scale").format(bits=8 * bytes_per_value)
    )
    for kind, colour in ATTENTION_COLOURS.items():
        ax.bar([0], [0], color=colour, label=kind)
    figure.legend(loc="outside lower center", ncols=3, frameon=False)
    ax.set_title(_("How much memory one more token of context costs"))
    return with_lead(figure, _cache_per_token_lead(models, bytes_per_value))


def _cache_per_token_lead(models: dict[str, ModelConfig], bytes_per_value: int) -> str:
    """The range across all models, then each kind of attention's range."""
    size = {name: c.kv_bytes_per_token(bytes_per_value) / KiB for name, c in models.items()}
    most, least = max(size, key=size.get), min(size, key=size.get)
    ratio = round(size[most] / size[least])  # a whole number of times: counted (Russian: "в 2 раза", "в 5 раз")
    sentences = [
        ngettext(
            "{most} adds {most_kib} KiB of cache with every token, {ratio} time as much as {least}, which "
            "adds {least_kib} KiB.",
            "{most} adds {most_kib} KiB of cache with every token, {ratio} times as much as {least}, which "
            "adds {least_kib} KiB.",
            ratio,
        ).format(
            most=most,
            most_kib=number(size[most], ",.0f"),
            least=least,
            least_kib=number(size[least], ",.0f"),
            ratio=ratio,
        )
    ]
    by_kind = {kind: [size[n] for n, c in models.items() if c.attention == kind] for kind in ATTENTION_COLOURS}
    if all(by_kind.values()):
        sentences.append(
            _(
                "The MHA models add at least {mha} KiB per token, the GQA models {gqa_low} to {gqa_high} "
                "and the MQA models at most {mqa}: the fewer KV heads, the cheaper each token."
            ).format(
                mha=number(min(by_kind["MHA"]), ",.0f"),
                gqa_low=number(min(by_kind["GQA"]), ",.0f"),
                gqa_high=number(max(by_kind["GQA"]), ",.0f"),
                mqa=number(max(by_kind["MQA"]), ",.0f"),
            )
        )
    return " ".join(sentences)


@idle_while_grading()
@drawn_in_course_style
def cache_vs_context_figure(
    config: ModelConfig, *, batch: int = 1, bytes_per_value: int = 2, memory_bytes: int | None = None
) -> Figure:
    """KV cache against context for the MHA / GQA / MQA variants of one model (log-log)."""
    contexts = np.logspace(9, 20, 45, base=2)
    figure = Figure(figsize=(7.0, 3.8), layout="constrained")
    ax = figure.subplots()
    for label, g in config.variants().items():
        kind = label.split()[0]  # "MHA (g = 64)"
        per_token = kv_cache_bytes(config.layers, g, config.head_dim, 1, batch, bytes_per_value)
        own = g == config.kv_heads
        ax.plot(
            contexts,
            contexts * per_token / GiB,
            color=KV_LAYOUT_COLOURS[kind],
            ls=KV_LAYOUT_LINE_STYLES[kind],
            lw=3 if own else 1.5,
            label=_("{variant}  ← the real model").format(variant=label) if own else label,
        )
    if memory_bytes is not None:
        free = memory_bytes - config.weights_bytes(bytes_per_value)
        memory = _("{memory} GiB minus the weights").format(memory=number(memory_bytes / GiB, ".0f"))
        ax.axhline(free / GiB, color="black", ls="--", lw=1, label=memory)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel=_("context (tokens)"),
        ylabel=_("KV cache (GiB)"),
        title=_("{model}, batch {batch}, {bits}-bit values").format(
            model=config.model, batch=batch, bits=8 * bytes_per_value
        ),
    )
    ax.grid(True, alpha=0.3)
    ax.legend()
    return with_lead(figure, _cache_vs_context_lead(config, batch, bytes_per_value, memory_bytes))


def _cache_vs_context_lead(config: ModelConfig, batch: int, bytes_per_value: int, memory_bytes) -> str:
    """The cache grows with the context; the fewer KV heads, the longer the context that fits in the memory."""
    sentences = [
        ngettext(
            "Every line rises in proportion to the context, and the fewer KV heads, the lower the line: MQA's "
            "cache is {ratio} time smaller than MHA's at every length.",
            "Every line rises in proportion to the context, and the fewer KV heads, the lower the line: MQA's "
            "cache is {ratio} times smaller than MHA's at every length.",
            config.query_heads,
        ).format(ratio=config.query_heads)
    ]
    if memory_bytes is not None:
        fits = {
            label: longest_context(config, memory_bytes, batch=batch, bytes_per_value=bytes_per_value, kv_heads=g)
            for label, g in config.variants().items()
        }
        own = next(label for label, g in config.variants().items() if g == config.kv_heads)
        mha, mqa = next(iter(fits)), list(fits)[-1]
        sentences.append(
            _(
                "In {memory} GiB beside the weights, a cache of {own_tokens} tokens fits with the real model, "
                "{own}, against {mha_tokens} with {mha} and {mqa_tokens} with {mqa}."
            ).format(
                memory=number(memory_bytes / GiB, ".0f"),
                own=own,
                own_tokens=number(fits[own], ","),
                mha=mha,
                mha_tokens=number(fits[mha], ","),
                mqa=mqa,
                mqa_tokens=number(fits[mqa], ","),
            )
        )
    return " ".join(sentences)
