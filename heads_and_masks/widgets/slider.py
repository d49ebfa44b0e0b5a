"""The course's slider: a native ``<input type="range">`` with its ``<label>``, so that everyone can use it.

ipywidgets' sliders draw a handle (noUiSlider) that a screen reader announces as "slider" with no name: the
description beside it is not tied to it, and nothing names it (WCAG 4.1.2; axe's aria-input-field-name).
The browser's own range input has all of it built in: the label names it, Tab reaches it, the arrow keys,
Home, End, Page Up and Page Down move it, its focus ring shows, and ``aria-valuetext`` lets a screen reader
read the value as the page shows it ("4,096 tokens", not "3"). The widget is an anywidget (a small ES
module, no build step): the browser side knows only positions 0 … k − 1 and their texts, and Python maps a
position to its value, so integer, float and selection sliders are one widget.

The Python side reads like ipywidgets': ``.value``, ``.description``, ``.disabled``, ``observe(..., names=
"value")``; ``int_slider`` and ``float_slider`` have ``.min``, ``.max`` and ``.step`` (a value outside a new
range is clamped, as ipywidgets does), ``selection_slider`` has ``.options`` (values, or (text, value)
pairs).
"""

from __future__ import annotations

import functools

from ..readable import readable_number
from .positions import made_on_first_use

# The browser side. Positions are 0 … labels.length − 1; moving the thumb sends the new position at once
# (the course's widgets redraw in a few milliseconds, so a drag shows every step).
_ESM = """
let count = 0;
function render({ model, el }) {
  const id = `course-slider-${++count}-${Math.random().toString(36).slice(2, 8)}`;
  const label = document.createElement("label");
  label.htmlFor = id;
  label.className = "course-slider-label";
  const input = document.createElement("input");
  input.type = "range";
  input.id = id;
  input.min = "0";
  input.step = "1";
  input.className = "course-slider-input";
  const output = document.createElement("output");
  output.setAttribute("for", id);
  output.className = "course-slider-value";
  function show() {
    const labels = model.get("labels");
    const index = model.get("index");
    label.textContent = model.get("description");
    input.max = String(Math.max(labels.length - 1, 0));
    input.value = String(index);
    input.setAttribute("aria-valuetext", labels[index] ?? "");
    input.disabled = model.get("disabled");
    output.textContent = labels[index] ?? "";
  }
  input.addEventListener("input", () => {
    const index = Number(input.value);
    output.textContent = model.get("labels")[index] ?? "";
    input.setAttribute("aria-valuetext", output.textContent);
    model.set("index", index);
    model.save_changes();
  });
  for (const name of ["labels", "index", "description", "disabled"]) model.on(`change:${name}`, show);
  el.classList.add("course-slider");
  // The arrow keys are the slider's: JupyterLab's notebook would take them on their way up (in command
  // mode they move between cells, and the key's own action, moving the thumb, never happens). Its
  // shortcuts are told to leave keys inside this element alone, and the keys stop at the slider.
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  input.addEventListener("keydown", (event) => event.stopPropagation());
  el.append(label, input, output);
  show();
}
export default { render };
"""

_CSS = """
/* the padding holds the focus ring (3 px away, 2 px wide): the box clips what is drawn outside it */
.course-slider { display: flex; align-items: center; gap: 8px; margin: 0 12px; padding: 5px 0; font-size: var(--jp-widgets-font-size, 13px); }
.course-slider-label { white-space: nowrap; }
.course-slider-input { width: 180px; margin: 0; accent-color: var(--jp-brand-color1, #1976d2); }
.course-slider-input:focus-visible { outline: 2px solid var(--jp-brand-color1, #1976d2); outline-offset: 3px; }
.course-slider-value { min-width: 3.5em; font-variant-numeric: tabular-nums; white-space: nowrap; }
"""


def _decimals(step: float) -> int:
    """How many decimals a float slider shows: as many as its step has (0.05: 2; 0.1: 1; 1.0: 0)."""
    text = f"{step:.10f}".rstrip("0")
    return len(text.split(".")[1]) if "." in text else 0


@functools.cache
def _classes():
    """The slider classes, made on first use (in grading mode no widget is built, and anywidget is not imported)."""
    import traitlets

    from heads_and_masks.widgets.positions import positions_class

    class Slider(positions_class()):
        """Positions 0 … k − 1 in the browser, ``positions[i]`` in Python; ``labels[i]`` is what is shown and read."""

        _esm = _ESM
        _css = _CSS

        def __init__(self, value, description: str = "", **traits):
            super().__init__(description=description, **traits)
            self.positions: list = []
            self._relayout(value)
            self.observe(self._index_moved, names="index")
            self.observe(self._value_set, names="value")

        def _positions_and_labels(self) -> tuple[list, list[str]]:
            raise NotImplementedError

        def _nearest(self, value) -> int:
            raise NotImplementedError

        def _relayout(self, value) -> None:
            """New positions (a new range or new options): keep the value, or the nearest one inside."""
            positions, labels = self._positions_and_labels()
            if not positions:
                raise ValueError(f"the slider {self.description!r} has no position to take")
            self.positions = positions
            index = self._nearest(value)
            with self.hold_trait_notifications():
                self.labels = labels
                self.index = index
            self.value = positions[index]

        @traitlets.validate("value")
        def _a_position(self, proposal):
            """A value set from Python becomes the nearest position (clamped or rounded, as ipywidgets does);
            one that is no option at all is refused before it is taken."""
            positions = getattr(self, "positions", None)
            return positions[self._nearest(proposal["value"])] if positions else proposal["value"]

        def _value_set(self, change) -> None:
            self.index = self._nearest(change["new"])

    class NumberSlider(Slider):
        """min, min + step, … max; a new range keeps the value, clamped into it."""

        def __init__(self, value, min, max, step, description=""):  # noqa: A002 (the names ipywidgets uses)
            super().__init__(value, description=description, min=min, max=max, step=step)
            self.observe(lambda _: self._relayout(self.value), names=["min", "max", "step"])

        def _count(self) -> int:
            return max(int(round((self.max - self.min) / self.step)) + 1, 0)

        def _nearest(self, value) -> int:
            index = int(round((float(value) - self.min) / self.step))
            return min(max(index, 0), len(self.positions) - 1)

    class IntSlider(NumberSlider):
        min = traitlets.Int(0)
        max = traitlets.Int(1)
        step = traitlets.Int(1)

        def _positions_and_labels(self):
            positions = [self.min + i * self.step for i in range(self._count())]
            return positions, [readable_number(p) for p in positions]

    class FloatSlider(NumberSlider):
        min = traitlets.Float(0.0)
        max = traitlets.Float(1.0)
        step = traitlets.Float(0.1)

        def _positions_and_labels(self):
            decimals = _decimals(self.step)
            positions = [round(self.min + i * self.step, decimals) for i in range(self._count())]
            return positions, [f"{p:.{decimals}f}" for p in positions]

    class SelectionSlider(Slider):
        options = traitlets.List()

        def __init__(self, options, value, description=""):
            super().__init__(value, description=description, options=list(options))
            self.observe(lambda _: self._relayout(self.value), names="options")

        def _pairs(self):
            return [
                o if isinstance(o, tuple) else (readable_number(o) if _is_number(o) else str(o), o)
                for o in self.options
            ]

        def _positions_and_labels(self):
            pairs = self._pairs()
            return [value for _, value in pairs], [text for text, _ in pairs]

        def _nearest(self, value) -> int:
            if value in self.positions:
                return self.positions.index(value)
            if self.positions and _is_number(value) and all(_is_number(p) for p in self.positions):
                return min(range(len(self.positions)), key=lambda i: abs(self.positions[i] - value))
            if not self.positions:
                return 0
            raise traitlets.TraitError(f"{value!r} is not one of the options of {self.description!r}: {self.positions}")

    return IntSlider, FloatSlider, SelectionSlider


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def int_slider(value: int, min: int, max: int, step: int = 1, description: str = ""):  # noqa: A002
    """A slider over min, min + step, … max (integers)."""
    return _classes()[0](value, min, max, step, description=description)


def float_slider(value: float, min: float, max: float, step: float, description: str = ""):  # noqa: A002
    """A slider over min, min + step, … max, shown with as many decimals as the step has."""
    return _classes()[1](value, min, max, step, description=description)


def selection_slider(options, value, description: str = ""):
    """A slider over ``options``: values (shown as readable numbers or text) or (text, value) pairs."""
    return _classes()[2](options, value, description=description)


# ``IntSlider``, ``FloatSlider`` and ``SelectionSlider`` as module names (made on first use)
__getattr__ = made_on_first_use(
    __name__,
    {
        "IntSlider": lambda: _classes()[0],
        "FloatSlider": lambda: _classes()[1],
        "SelectionSlider": lambda: _classes()[2],
    },
)
