"""Notebook 06's widget: a KV-cache calculator for real models, beside their weights and a GPU's memory."""

from __future__ import annotations

import math
import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator

from ..figure_style import KV_LAYOUT_COLOURS, KV_LAYOUT_LINE_STYLES
from ..i18n import N_, _, ngettext, number, translated
from ..kv_heads import kv_cache_bytes
from ..model_configs import BYTES_PER_VALUE, GiB, KiB, context_limits, load_gpus, load_models
from ..readable import readable_number
from .base import CourseWidget
from .choice import dropdown, toggle_buttons
from .slider import selection_slider
from .fast_text import PathLegend, PathTitle

CONTEXTS = [2**k for k in range(9, 21)]  # 512 ... 1,048,576 tokens
BATCHES = [2**k for k in range(0, 9)]  # 1 ... 256 sequences


def _short_number(y: float, _position=None) -> str:
    """Tick labels of at most four characters: 0.01, 0.1, 1, 10, 100, 1k, 10k, 100k, 1M."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if y >= size:
            return f"{y / size:g}{suffix}"
    return f"{y:g}"


def _nice_ceiling(x: float) -> float:
    """The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten that is >= x (x > 0)."""
    power = 10.0 ** math.floor(math.log10(x))
    return next(m * power for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * power >= x * (1 - 1e-9))


_BINDING = {  # the value of the readout "the limit that binds", shown in the widget's language
    "weights": N_("the weights alone do not fit"),
    "memory": N_("the memory"),
    "model": N_("the model's own context"),
}
RED = "<span style='color:#c00'>{}</span>"  # a value that says something is wrong (in words too, not colour alone)


def _tokens(n: int) -> str:
    return f"{n // 1024}K" if n >= 1024 else str(n)


class KVCacheCalculator(CourseWidget):
    """Pick a model, a context, a batch and a number format: how much memory does the KV cache take?

    Left: the GPU's memory filled by the weights and the cache (a red edge when they overflow).
    Right: the cache of this model against the context, and of its MHA / GQA / MQA variants.
    Readouts: sizes in GiB (2³⁰ bytes, the units memory is built in), the context the memory allows, the
    model's own context, and which of the two binds.
    """

    figsize = (7.3, 3.4)
    background_cache_size = 24  # ~0.9 MB each

    def setup(self):
        self.models = load_models()
        self.gpus = load_gpus()
        self.controls["model"] = dropdown(options=list(self.models), value="Llama-2-7B", description=_("model"))
        self.controls["context"] = selection_slider(
            options=[(_tokens(n), n) for n in CONTEXTS], value=4096, description=_("context (tokens)")
        )
        self.controls["batch"] = selection_slider(
            options=[(str(b), b) for b in BATCHES], value=8, description=_("batch")
        )
        self.controls["dtype"] = toggle_buttons(
            options=list(BYTES_PER_VALUE), value="bf16", description=_("format"), button_width="4em"
        )
        self.controls["gpu"] = dropdown(
            options=[
                (_("{gpu} · {memory} GiB").format(gpu=name, memory=number(memory / GiB, ".1f")), name)
                for name, memory in self.gpus.items()
            ],
            value="H100",
            description="GPU",
        )

        # fixed axes positions: the tick labels change width with the model, the layout must not move
        self.figure.set_layout_engine("none")
        self.ax_memory = self.figure.add_axes((0.015, 0.15, 0.40, 0.615))
        self.ax_context = self.figure.add_axes((0.52, 0.15, 0.465, 0.80))
        ax = self.ax_memory
        self.bar_weights = ax.barh([0], [0], color="tab:gray")[0]
        self.bar_cache = ax.barh([0], [0], color="tab:orange")[0]
        # the GPU's line spans the bar alone (y from -0.8 to 1.2: -0.46 to 0.44), so it never crosses the labels
        # above and below the bar, wherever the GPU's size falls among them
        self.gpu_line = ax.axvline(0, ymin=0.17, ymax=0.62, color="black", lw=2)
        self.weights_label = ax.text(0, -0.5, "", ha="left", va="top", color="dimgray")
        self.cache_label = ax.text(0, 0.45, "", ha="right", va="bottom", color="tab:orange")
        ax.set(yticks=[], ylim=(-0.8, 1.2), xlabel=_("GiB (2³⁰ bytes)"))
        ax.xaxis.set_major_locator(MaxNLocator(5))

        ax = self.ax_context
        self.variant_lines = [ax.plot([], [], lw=1.8)[0] for _kind in ("MHA", "GQA", "MQA")]  # drawn by kind in update
        self.free_line = ax.axhline(1, color="black", lw=1, ls="--")
        (self.point,) = ax.plot([], [], "o", color="black", markersize=7, zorder=5)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel=_("context (tokens per sequence)"),
            xlim=(CONTEXTS[0] / 1.4, CONTEXTS[-1] * 1.4),
        )
        ax.set_xticks(CONTEXTS[::2], [_tokens(n) for n in CONTEXTS[::2]])
        ax.xaxis.set_minor_locator(NullLocator())  # minor ticks of log axes cost a lot of drawing
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_locator(LogLocator(base=10, numticks=9))  # every decade
        ax.yaxis.set_major_formatter(FuncFormatter(_short_number))
        ax.grid(True, which="major", alpha=0.3)
        ax.text(0.99, 0.03, _("KV cache (GiB) of the batch"), transform=ax.transAxes, ha="right")
        self.memory_title = PathTitle(self.ax_memory.title, self.dpi)  # four lines that change with everything
        self.weights_text = PathTitle(self.weights_label, self.dpi)
        self.cache_text = PathTitle(self.cache_label, self.dpi)
        self.legend = PathLegend(ax, self.dpi)  # its entries change with the model and the GPU

    def draw(self):
        config = self.models[self.value("model")]
        context, batch = self.value("context"), self.value("batch")
        bytes_per_value = BYTES_PER_VALUE[self.value("dtype")]
        memory = self.gpus[self.value("gpu")]

        cache = kv_cache_bytes(config.layers, config.kv_heads, config.head_dim, context, batch, bytes_per_value)
        weights = config.weights_bytes(bytes_per_value)
        limits = context_limits(config, memory, batch=batch, bytes_per_value=bytes_per_value)
        fits = weights + cache <= memory

        # left: weights + cache against the GPU
        self.bar_weights.set_width(weights / GiB)
        self.bar_cache.set_x(weights / GiB)
        self.bar_cache.set_width(cache / GiB)
        self.bar_cache.set_edgecolor("none" if fits else "red")
        self.bar_cache.set_linewidth(0 if fits else 2)
        self.gpu_line.set_xdata([memory / GiB] * 2)
        # round limits: the axes change less often, and are then drawn once for all (see background_key)
        self.ax_memory.set_xlim(0, _nice_ceiling(1.05 * max(memory, weights + cache) / GiB))
        # "fits" / "does not fit" on a line of its own: the widest line fits the axes' width
        if fits:
            title = _(
                "{model} ({attention}: h = {h}, g = {g})\none {gpu}: {memory} GiB (black line)\n"
                "batch {batch} × {context} tokens, {dtype}:\nfits"
            )
        else:
            title = _(
                "{model} ({attention}: h = {h}, g = {g})\none {gpu}: {memory} GiB (black line)\n"
                "batch {batch} × {context} tokens, {dtype}:\ndoes not fit"
            )
        self.ax_memory.set_title(
            title.format(
                model=config.model,
                attention=config.attention,
                h=config.query_heads,
                g=config.kv_heads,
                gpu=self.value("gpu"),
                memory=number(memory / GiB, ".1f"),
                batch=batch,
                context=number(context, ","),
                dtype=self.value("dtype"),
            ),
            color="black" if fits else "tab:red",
        )
        self.weights_label.set_text(_("weights {size} GiB").format(size=readable_number(weights / GiB, 3)))
        end = (weights + cache) / GiB
        self.cache_label.set_position((end, 0.45))
        self.cache_label.set_horizontalalignment("right" if end > 0.4 * self.ax_memory.get_xlim()[1] else "left")
        self.cache_label.set_text(_("KV cache {size} GiB").format(size=readable_number(cache / GiB, 3)))

        # right: the cache against the context, for the model and its MHA / GQA / MQA variants
        contexts = np.array(CONTEXTS, dtype=float)
        per_token = {
            label: kv_cache_bytes(config.layers, g, config.head_dim, 1, batch, bytes_per_value)
            for label, g in config.variants().items()
        }
        for line, (label, size) in zip(self.variant_lines, per_token.items()):
            line.set_data(contexts, contexts * size / GiB)
            own = f"g = {config.kv_heads})" in label
            kind = label.split()[0]  # "MHA (g = 64)": a model may have no GQA variant, so not by position
            line.set_color(KV_LAYOUT_COLOURS[kind])
            line.set_linestyle(KV_LAYOUT_LINE_STYLES[kind])
            line.set_label(_("{variant}  ← this model").format(variant=label) if own else label)
            line.set_linewidth(3.0 if own else 1.5)
        for line in self.variant_lines[len(per_token) :]:
            line.set_data([], [])
            line.set_label("_hidden")
        free = max(memory - weights, 1)
        self.free_line.set_ydata([free / GiB] * 2)
        self.free_line.set_label(
            _("{gpu} minus the weights").format(gpu=self.value("gpu"))
            if memory > weights
            else _("(the weights alone overflow the GPU)")
        )
        self.point.set_data([context], [cache / GiB])
        low = min(contexts[0] * min(per_token.values()), cache) / GiB
        high = max(contexts[-1] * max(per_token.values()), free) / GiB
        self.ax_context.set_ylim(10.0 ** math.floor(math.log10(low / 1.5)), 10.0 ** math.ceil(math.log10(high * 1.5)))
        self.legend.set_entries([*self.variant_lines, self.free_line])

        readouts = {
            N_("KV cache per token (KiB)"): config.kv_bytes_per_token(bytes_per_value) / KiB,
            N_("KV cache (GiB)"): cache / GiB,
            N_("weights (GiB)"): weights / GiB,
            N_("GPU memory (GiB)"): memory / GiB,
            N_("fits"): fits,
            N_("context the memory allows (tokens)"): limits.memory,
            N_("model's own context (tokens)"): limits.model,
            N_("the limit that binds"): self.binding_text(limits.binding),
        }
        if config.sliding_window is not None:
            window_cache = kv_cache_bytes(
                config.layers,
                config.kv_heads,
                config.head_dim,
                min(context, config.sliding_window),
                batch,
                bytes_per_value,
            )
            name = f"with a rolling buffer of {config.sliding_window:,} tokens (GiB)"
            self.shown_names[name] = _("with a rolling buffer of {window} tokens (GiB)").format(
                window=number(config.sliding_window, ",")
            )
            readouts[name] = window_cache / GiB
        return readouts

    @property
    def picture_lead(self) -> str:
        memory = self.gpus[self.value("gpu")]
        config = self.models[self.value("model")]
        limits = context_limits(
            config, memory, batch=self.value("batch"), bytes_per_value=BYTES_PER_VALUE[self.value("dtype")]
        )
        if self.readouts["fits"]:
            fits = ngettext(
                "{model}'s weights ({weights} GiB) and a cache of {cache} GiB for {batch} sequence of {context} "
                "tokens fit in one {gpu} ({memory} GiB).",
                "{model}'s weights ({weights} GiB) and a cache of {cache} GiB for {batch} sequences of {context} "
                "tokens fit in one {gpu} ({memory} GiB).",
                self.value("batch"),
            )
        else:
            fits = ngettext(
                "{model}'s weights ({weights} GiB) and a cache of {cache} GiB for {batch} sequence of {context} "
                "tokens do not fit in one {gpu} ({memory} GiB).",
                "{model}'s weights ({weights} GiB) and a cache of {cache} GiB for {batch} sequences of {context} "
                "tokens do not fit in one {gpu} ({memory} GiB).",
                self.value("batch"),
            )
        if limits.binding == "weights":
            binds = _("The weights alone do not fit: no context does.")
        elif limits.binding == "memory":
            binds = _(
                "The memory binds: it allows {allowed} tokens per sequence, fewer than the model's own context of {own}."
            )
        else:
            binds = _("The model's own context of {own} tokens binds: the memory would allow {allowed}.")
        values = dict(
            model=config.model,
            weights=readable_number(self.readouts["weights (GiB)"], 3),
            cache=readable_number(self.readouts["KV cache (GiB)"], 3),
            batch=self.value("batch"),
            context=readable_number(self.value("context")),
            gpu=self.value("gpu"),
            memory=readable_number(memory / GiB, 3),
            allowed=readable_number(limits.memory),
            own=readable_number(limits.model),
        )
        return f"{fits.format(**values)} {binds.format(**values)}"

    def background_key(self):
        """The axes (ticks, labels, grid) depend on the two round limits alone: drawn once for each."""
        return self.ax_memory.get_xlim(), self.ax_context.get_ylim()

    def dynamic_artists(self):
        """Blitting (see CourseWidget): the bars, lines, labels and legend over the saved axes."""
        return [
            self.bar_weights,
            self.bar_cache,
            self.gpu_line,
            self.weights_text,
            self.cache_text,
            self.memory_title,
            *self.ax_memory.spines.values(),
            *self.variant_lines,
            self.free_line,
            self.point,
            *self.ax_context.spines.values(),
            self.legend,
        ]

    @staticmethod
    def binding_text(binding: str) -> str:
        """The readout "the limit that binds" (HTML): in red when the weights alone do not fit."""
        text = translated(_BINDING[binding])
        return RED.format(text) if binding == "weights" else text

    def format_value(self, value) -> str:
        if isinstance(value, bool):
            return _("yes") if value else RED.format(_("no"))
        if isinstance(value, str):
            return value
        if isinstance(value, float) and math.isinf(value):
            return _("unlimited")
        return readable_number(value, 3)
