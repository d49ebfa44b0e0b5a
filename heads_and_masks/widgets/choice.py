"""The course's choice of one among a few options: a named group of radio buttons, drawn as toggle buttons.

ipywidgets' ToggleButtons draw a row of buttons named only by their option ("bf16", "(d h)") beside a
description that is not tied to them: a screen reader says "bf16, button", not what it sets, and not which
one is chosen (its ``mod-active`` class is only a colour: WCAG 1.3.1, 1.4.1, 4.1.2). Each button is a Tab
stop of its own and the arrow keys do nothing. The browser's own radio buttons have all of it built in: the
group is named by its label ("format, radio group"), each option says whether it is chosen ("bf16, radio
button, checked, 2 of 3"), Tab reaches the group once (at the chosen option), and the arrow keys choose the
next or previous option. The inputs are drawn as the buttons the notebooks describe: each option's label is
the button, the chosen one is pressed in (darker, and its text bold: not colour alone), and the focused one
shows a ring.

The Python side reads like ipywidgets' ToggleButtons: ``.value``, ``.options``, ``.description``,
``.disabled``, ``observe(..., names="value")``; the browser knows only positions 0 … k − 1 and their texts.

An on/off button (``on_off_button``, notebook 08's heads) is the same idea for one option: ipywidgets'
ToggleButton shows its state by a class (``mod-active``, a colour) and nothing else, so a screen reader says
"head 0 on, button" whether the head is on or off. The browser's checkbox says "head 0 on, checkbox, checked"
or "not checked"; it is drawn as the same button, pressed in (darker, bold) while checked, and Space switches it.

A dropdown (``dropdown``, for a choice among many) is the browser's ``<select>`` with its ``<label>``, as
ipywidgets' Dropdown is, but it keeps its keys in JupyterLab: there, the up and down arrows on ipywidgets'
dropdown, focused in a notebook in command mode, move the notebook to the cell above or below (the focus
leaves the widget) and the dropdown never changes (measured in the browser tests, JupyterLab 4).
"""

from __future__ import annotations

import functools

from .positions import made_on_first_use

_ESM = """
let count = 0;
function render({ model, el }) {
  const group = `course-choice-${++count}-${Math.random().toString(36).slice(2, 8)}`;
  const label = document.createElement("span");
  label.id = `${group}-label`;
  label.className = "course-choice-label";
  const options = document.createElement("div");
  options.className = "course-choice-options";
  options.setAttribute("role", "radiogroup");
  options.setAttribute("aria-labelledby", label.id);
  function show() {
    label.textContent = model.get("description");
    const labels = model.get("labels"), index = model.get("index"), width = model.get("button_width");
    if (options.children.length !== 2 * labels.length) {
      options.replaceChildren();
      labels.forEach((text, position) => {
        const input = document.createElement("input");
        input.type = "radio";
        input.name = group;
        input.id = `${group}-${position}`;
        input.className = "course-choice-input";
        input.addEventListener("change", () => {
          if (!input.checked) return;
          model.set("index", position);
          model.save_changes();
        });
        const button = document.createElement("label");
        button.htmlFor = input.id;
        button.className = "course-choice-button";
        options.append(input, button);
      });
    }
    const inputs = options.querySelectorAll("input"), buttons = options.querySelectorAll("label");
    labels.forEach((text, position) => {
      buttons[position].textContent = text;
      buttons[position].style.minWidth = width;
      inputs[position].checked = position === index;
      inputs[position].disabled = model.get("disabled");
    });
  }
  for (const name of ["labels", "index", "description", "disabled", "button_width"]) model.on(`change:${name}`, show);
  el.classList.add("course-choice");
  // The arrow keys are the group's: JupyterLab's notebook would take them on their way up (see slider.py).
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  options.addEventListener("keydown", (event) => event.stopPropagation());
  el.append(label, options);
  show();
}
export default { render };
"""

_ON_OFF_ESM = """
let count = 0;
function render({ model, el }) {
  const input = document.createElement("input");
  input.type = "checkbox";
  input.id = `course-on-off-${++count}-${Math.random().toString(36).slice(2, 8)}`;
  input.className = "course-choice-input";
  input.addEventListener("change", () => {
    model.set("value", input.checked);
    model.save_changes();
  });
  const button = document.createElement("label");
  button.htmlFor = input.id;
  button.className = "course-choice-button";
  function show() {
    button.textContent = model.get("description");
    button.title = model.get("tooltip");
    input.checked = model.get("value");
    input.disabled = model.get("disabled");
  }
  for (const name of ["value", "description", "tooltip", "disabled"]) model.on(`change:${name}`, show);
  el.classList.add("course-choice", "course-on-off");
  // Space is the checkbox's: JupyterLab's notebook would take keys on their way up (see slider.py).
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  input.addEventListener("keydown", (event) => event.stopPropagation());
  el.append(input, button);
  show();
}
export default { render };
"""

_DROPDOWN_ESM = """
let count = 0;
function render({ model, el }) {
  const id = `course-dropdown-${++count}-${Math.random().toString(36).slice(2, 8)}`;
  const label = document.createElement("label");
  label.htmlFor = id;
  label.className = "course-dropdown-label";
  const select = document.createElement("select");
  select.id = id;
  select.className = "course-dropdown-select";
  select.addEventListener("change", () => {
    model.set("index", select.selectedIndex);
    model.save_changes();
  });
  function show() {
    label.textContent = model.get("description");
    const labels = model.get("labels");
    if ([...select.options].map((option) => option.text).join("\\n") !== labels.join("\\n"))
      select.replaceChildren(...labels.map((text) => new Option(text)));
    select.selectedIndex = model.get("index");
    select.disabled = model.get("disabled");
  }
  for (const name of ["labels", "index", "description", "disabled"]) model.on(`change:${name}`, show);
  el.classList.add("course-dropdown");
  // The arrow keys are the list's: JupyterLab's notebook would take them on their way up (see slider.py).
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  select.addEventListener("keydown", (event) => event.stopPropagation());
  el.append(label, select);
  show();
}
export default { render };
"""

_DROPDOWN_CSS = """
/* the padding holds the focus ring (2 px away, 2 px wide): the box clips what is drawn outside it */
.course-dropdown { display: flex; align-items: center; gap: 8px; margin: 0 8px 0 12px; padding: 4px; font-size: var(--jp-widgets-font-size, 13px); }
.course-dropdown-label { white-space: nowrap; }
.course-dropdown-select { font: inherit; padding: 2px 4px; border: 1px solid #757575; border-radius: 2px;
  background: var(--jp-layout-color1, #ffffff); color: var(--jp-ui-font-color1, #212121); }
.course-dropdown-select:focus-visible { outline: 2px solid var(--jp-brand-color1, #1976d2); outline-offset: 2px; }
"""

# The input stays in the page (focusable, read by screen readers) but takes no room: its label is the button.
_CSS = """
/* the padding holds the focus ring (2 px away, 2 px wide): the box clips what is drawn outside it */
.course-choice { display: flex; align-items: center; gap: 8px; margin: 0 8px 0 12px; padding: 4px; font-size: var(--jp-widgets-font-size, 13px); }
.course-choice-label { white-space: nowrap; }
.course-choice-options { display: flex; flex-wrap: wrap; gap: 6px; }
.course-choice-input { position: absolute; opacity: 0; width: 1px; height: 1px; margin: 0; pointer-events: none; }
.course-choice-button { box-sizing: border-box; padding: 4px 10px; text-align: center; white-space: nowrap; cursor: pointer;
  border: 1px solid #757575; border-radius: 2px; background: #eeeeee; color: #212121; }
.course-choice-input:checked + .course-choice-button { background: #424242; border-color: #212121; color: #ffffff; font-weight: bold; }
.course-choice-input:focus-visible + .course-choice-button { outline: 2px solid var(--jp-brand-color1, #1976d2); outline-offset: 2px;
  position: relative; z-index: 1; }
.course-choice-input:disabled + .course-choice-button { opacity: 0.5; cursor: default; }
"""


@functools.cache
def _choice_class():
    """Made on first use (in grading mode no widget is built, and anywidget is not imported)."""
    import traitlets

    from heads_and_masks.widgets.positions import positions_class

    class ToggleButtons(positions_class()):
        """One of ``options`` (values, or (text, value) pairs), chosen from a named group of buttons."""

        _esm = _ESM
        _css = _CSS
        button_width = traitlets.Unicode("").tag(sync=True)
        options = traitlets.List()

        def __init__(self, options, value, description: str = "", button_width: str = ""):
            super().__init__(description=description, button_width=button_width)
            self.positions: list = []
            self.observe(self._relayout, names="options")
            self.options = list(options)
            self.value = value
            self.observe(self._index_moved, names="index")
            self.observe(self._value_set, names="value")
            self.index = self._position(value)

        def _relayout(self, _change=None) -> None:
            pairs = [o if isinstance(o, tuple) else (str(o), o) for o in self.options]
            self.positions = [value for _, value in pairs]
            self.labels = [text for text, _ in pairs]

        def _position(self, value) -> int:
            if value not in self.positions:
                raise traitlets.TraitError(
                    f"{value!r} is not one of the options of {self.description!r}: {self.positions}"
                )
            return self.positions.index(value)

        @traitlets.validate("value")
        def _an_option(self, proposal):
            self._position(proposal["value"])  # refused before it is taken
            return proposal["value"]

        def _value_set(self, change) -> None:
            self.index = self._position(change["new"])

    return ToggleButtons


@functools.cache
def _on_off_class():
    """Made on first use, as the group's."""
    import anywidget
    import traitlets

    class OnOffButton(anywidget.AnyWidget):
        """On (``value`` True) or off: a named checkbox drawn as a button that stays pressed in while on."""

        _esm = _ON_OFF_ESM
        _css = _CSS
        value = traitlets.Bool(False).tag(sync=True)
        description = traitlets.Unicode("").tag(sync=True)
        tooltip = traitlets.Unicode("").tag(sync=True)
        disabled = traitlets.Bool(False).tag(sync=True)

    return OnOffButton


def on_off_button(value: bool, description: str, tooltip: str = ""):
    """On or off, as a named checkbox drawn as a button: its state is read out, not only coloured."""
    return _on_off_class()(value=value, description=description, tooltip=tooltip)


@functools.cache
def _dropdown_class():
    """The group's Python side (options, value, index) with a ``<select>`` for its browser side."""

    class Dropdown(_choice_class()):
        """One of ``options`` (values, or (text, value) pairs), chosen from a named list."""

        _esm = _DROPDOWN_ESM
        _css = _DROPDOWN_CSS

    return Dropdown


def dropdown(options, value, description: str = ""):
    """One of ``options`` (values, or (text, value) pairs), as a named ``<select>`` that keeps its keys."""
    return _dropdown_class()(options, value, description=description)


def toggle_buttons(options, value, description: str = "", button_width: str = ""):
    """One of ``options`` (values, or (text, value) pairs), as a named radio group drawn as toggle buttons."""
    return _choice_class()(options, value, description=description, button_width=button_width)


# ``ToggleButtons``, ``OnOffButton`` and ``Dropdown`` as module names (made on first use)
__getattr__ = made_on_first_use(
    __name__, {"ToggleButtons": _choice_class, "OnOffButton": _on_off_class, "Dropdown": _dropdown_class}
)
