"""A course widget used with the keyboard alone, as someone who cannot use a mouse uses it (WCAG 2.1.1, 2.1.2,
2.4.3, 2.4.7, 2.5.3, 4.1.2).

``keyboard_walk`` starts at the top of the page with nothing focused and presses Tab until the focus has gone
through the widget and out of it. It records every control the focus stops at, in order, and checks

* the order: every control that can be used (enabled; one stop per radio group) is reached, none is skipped,
  none twice, in reading order (each one below the one before, or on its line and to its right), and Tab
  leads out of the widget again (no trap);
* the focus shows: the control's own piece of the page (its box, its label and the room around them) is
  photographed unfocused before the walk and again while focused; at least as many pixels must differ as
  the control's box has around its edge (a 1 px ring all round: ``min_changed``), so a focus style that is
  removed (``outline: none``) or too faint to see fails;
* the name says what it sets: the accessible name (Playwright's aria snapshot, what a screen reader reads)
  is not empty and contains the control's visible label ("slider, head size d"; a radio button's group,
  "format"; a button, its own text), so what is seen and what is heard agree (2.5.3, label in name).

``keyboard_session`` then uses each control with its own keys (a slider: an arrow key; a checkbox or a
button: Space; a radio group: an arrow key; a dropdown: the down or up arrow) and checks that its value, the
picture and the text readouts all change, and so does the state a screen reader is told of the control (a
toggle's aria-pressed or aria-checked, a native control's own state: 4.1.2); then it puts the control back
and waits until the widget shows the text it opened with.

In JupyterLab the walk starts just before the widget (``from_page_start=False``): the lab's menus, panels and
cell editors before it are not the course's, and Tab in an editor indents.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from labdriver import wait_for_change, wait_until, widget_state

# Every control of the box the focus should stop at, in DOM order: enabled, one per radio group (the checked
# one). With ``mark``, each gets data-walk="i" so that the Tab walk can say which one it reached; without, they
# are only counted.
_EXPECTED_STOPS_JS = """(box, mark) => {
  if (mark) for (const e of box.querySelectorAll('[data-walk]')) e.removeAttribute('data-walk');
  const seen = new Set(), stops = [];
  for (const e of box.querySelectorAll('input, select, button, textarea, [tabindex]')) {
    // a native control counts even when taken out of the Tab order (tabindex=-1): that is the fault to find
    const native = e.matches('input, select, button, textarea');
    if (e.disabled || (!native && e.tabIndex < 0) || e.type === 'hidden' || !e.getClientRects().length) continue;
    if (e.type === 'radio') {
      if (seen.has(e.name)) continue;
      seen.add(e.name);
      const group = [...box.querySelectorAll('input[type=radio]')].filter(r => r.name === e.name);
      stops.push(group.find(r => r.checked) || group[0]);
    } else stops.push(e);
  }
  if (mark) stops.forEach((e, i) => e.setAttribute('data-walk', String(i)));
  return stops.length;
}"""

# What the focused element is: its number (data-walk), whether it is inside the box, what it shows as its label,
# the rectangle it takes on the screen (its label's for an input drawn by its label), and its piece of the page.
_FOCUSED_JS = """([box, which]) => {
  const e = which === null ? document.activeElement : box.querySelector(`[data-walk='${which}']`);
  if (!e || e === document.body) return {inside: false, walk: null, what: 'the page'};
  const inside = box.contains(e);
  const labels = e.labels ? [...e.labels] : [];
  const group = e.type === 'radio' ? e.closest('[role=radiogroup]') : null;
  const groupLabel = group && group.getAttribute('aria-labelledby')
      ? document.getElementById(group.getAttribute('aria-labelledby')) : null;
  let visible = groupLabel ? groupLabel.innerText
      : labels.length ? labels.map(l => l.innerText).join(' ') : (e.innerText || e.value || '');
  visible = visible.replace(/\\u200b/g, '').replace(/\\s+/g, ' ').trim();
  const own = e.getBoundingClientRect();
  const drawn = own.width < 4 || own.height < 4 ? (labels[0] || e).getBoundingClientRect() : own;
  let piece = e;  // the control's own piece of the page: the child of the controls' row that holds it
  while (piece.parentElement && piece.parentElement !== box && !piece.parentElement.classList.contains('widget-hbox'))
    piece = piece.parentElement;
  const p = piece.getBoundingClientRect(), x = Math.max(p.x - 8, 0), y = Math.max(p.y - 8, 0);
  return {inside, walk: e.getAttribute('data-walk'), radio: Boolean(group),
          what: `${e.tagName.toLowerCase()}${e.type ? '[' + e.type + ']' : ''} "${visible}"`, visible,
          rect: {x: drawn.x, y: drawn.y, width: drawn.width, height: drawn.height},
          piece: {x, y, width: Math.min(p.right + 8, innerWidth) - x, height: Math.min(p.bottom + 8, innerHeight) - y}};
}"""


@dataclass
class Stop:
    walk: str  # the control's data-walk number
    what: str  # e.g. 'input[range] "head size d"'
    name: str  # its accessible name (a radio button's: its group's)
    visible: str  # its visible label
    rect: dict  # where it is drawn (CSS px, viewport)
    changed_pixels: int  # pixels of its piece of the page that differ focused and unfocused
    min_changed: int  # the ring all round its box: the least a visible focus indicator changes


def accessible_name(locator) -> tuple[str, str]:
    """(role, name) as Playwright's aria snapshot gives them: what a screen reader announces."""
    first = locator.aria_snapshot().splitlines()[0] if locator.count() else ""
    found = re.match(r'\s*- (\w+)(?: "((?:[^"\\]|\\.)*)")?', first)
    return (found.group(1), (found.group(2) or "").replace('\\"', '"')) if found else ("", "")


def _pixels(page, clip: dict):
    from PIL import Image

    return Image.open(io.BytesIO(page.screenshot(clip=clip, animations="disabled"))).convert("RGB")


def _changed(before, after) -> int:
    from PIL import ImageChops

    # a pixel counts when it moved by more than 24 of 255 (antialiasing noise stays below)
    difference = ImageChops.difference(before, after).convert("L").point(lambda v: 255 if v > 24 else 0)
    return difference.histogram()[255]


def keyboard_walk(page, box, label: str, max_presses: int = 60, from_page_start: bool = True) -> list[Stop]:
    """Tab from the page's start (or, ``from_page_start`` False, from just before the widget) through the
    widget and out of it; returns the stops, after checking them."""
    # the start: a mark before everything (or before the widget), focused (not a Tab stop itself, removed after
    # the walk); a blur() alone would leave the browser's starting point of Tab where the focus was
    box.evaluate(
        """(box, fromPageStart) => { const start = document.createElement('span'); start.id = 'walk-start';
             start.tabIndex = -1; if (fromPageStart) document.body.prepend(start); else box.before(start);
             start.focus(); if (fromPageStart) window.scrollTo(0, 0); }""",
        from_page_start,
    )
    expected = box.evaluate(_EXPECTED_STOPS_JS, True)
    assert expected, f"{label}: the widget has no control that Tab can reach"
    # each control's piece of the page, unfocused (nothing is focused yet)
    unfocused = {}
    for index in range(expected):
        control = box.locator(f"[data-walk='{index}']")
        control.scroll_into_view_if_needed()
        piece = page.evaluate(_FOCUSED_JS, [box.element_handle(), str(index)])
        unfocused[str(index)] = (piece["piece"], _pixels(page, piece["piece"]))
    page.evaluate(
        "fromPageStart => { document.getElementById('walk-start').focus(); if (fromPageStart) window.scrollTo(0, 0); }",
        from_page_start,
    )

    stops: list[Stop] = []
    left_widget = False
    for _ in range(max_presses):
        page.keyboard.press("Tab")
        focused = page.evaluate(_FOCUSED_JS, [box.element_handle(), None])
        if not focused["inside"]:
            if stops:
                left_widget = True
                break
            continue  # still before the widget
        assert focused["walk"] is not None, (
            f"{label}: Tab stopped at {focused['what']}, which is not a control the widget offers"
        )
        _, before = unfocused[focused["walk"]]
        # where it is now that Tab has scrolled it into view (if it had to): the same piece, focused
        now = page.evaluate(_FOCUSED_JS, [box.element_handle(), None])
        focused_pixels = _pixels(page, now["piece"])
        if focused_pixels.size != before.size:  # cut by the window's edge in one of the two
            before = before.resize(focused_pixels.size)
        locator = page.locator(f"[data-walk='{focused['walk']}']")
        _, name = accessible_name(
            locator.locator("xpath=ancestor::*[@role='radiogroup'][1]") if focused["radio"] else locator
        )
        rect = now["rect"]
        stops.append(
            Stop(
                walk=focused["walk"],
                what=focused["what"],
                name=name,
                visible=focused["visible"],
                rect=rect,
                changed_pixels=_changed(before, focused_pixels),
                min_changed=round(2 * (rect["width"] + rect["height"])),
            )
        )
        if len(stops) > expected + 2:
            break
    page.evaluate("() => document.getElementById('walk-start')?.remove()")
    order = [int(stop.walk) for stop in stops]
    problems = []
    if order != list(range(expected)):
        missing = sorted(set(range(expected)) - set(order))
        problems.append(
            f"Tab reached the controls in the order {order}, not 0 … {expected - 1} as they stand"
            + (f" (never reached: {missing})" if missing else "")
        )
    if not left_widget:
        problems.append(f"the focus does not leave the widget after {max_presses} presses of Tab (a keyboard trap)")
    for before, after in zip(stops, stops[1:], strict=False):
        a, b = before.rect, after.rect
        below = b["y"] >= a["y"] + a["height"] - 1
        to_the_right = b["x"] >= a["x"] + a["width"] - 1 and b["y"] < a["y"] + a["height"]
        if not (below or to_the_right):
            problems.append(f"{after.what} comes after {before.what} but stands before it on the screen")
    for stop in stops:
        if stop.changed_pixels < stop.min_changed:
            problems.append(
                f"{stop.what}: focused, it changes {stop.changed_pixels} pixels of its piece of the page, fewer than "
                f"the {stop.min_changed} of a 1 px ring round it: no visible focus indicator"
            )
        if not stop.name or stop.visible.casefold() not in stop.name.casefold():
            problems.append(
                f"{stop.what}: its accessible name is {stop.name!r}, which does not say what its label says "
                f"({stop.visible!r})"
            )
    assert not problems, f"{label}, keyboard walk:\n" + "\n".join(problems)
    return stops


# Which key uses a control, what its value is, and what a screen reader is told of its state (read before and
# after the key). A button's state is only what it exposes (aria-pressed, aria-checked): a class or a colour is
# not heard, and a text that changes ("head 0 on" to "head 0 off") is heard as a new name, not as a state.
_KEY_AND_VALUE_JS = """e => {
  const t = e.type, group = t === 'radio' ? [...document.getElementsByName(e.name)] : [];
  const value = t === 'range' ? e.value + ' ' + (e.getAttribute('aria-valuetext') || '')
      : t === 'checkbox' ? String(e.checked)
      : t === 'radio' ? String(group.findIndex(r => r.checked))
      : e.tagName === 'SELECT' ? String(e.selectedIndex)
      : e.innerText + ' ' + e.className;
  const exposed = ['range', 'checkbox', 'radio'].includes(t) || e.tagName === 'SELECT' ? value
      : `aria-pressed=${e.getAttribute('aria-pressed')} aria-checked=${e.getAttribute('aria-checked')}`;
  const key = t === 'range' ? (Number(e.value) < Number(e.max) ? 'ArrowRight' : 'ArrowLeft')
      : t === 'radio' ? 'ArrowRight'
      : e.tagName === 'SELECT' ? (e.selectedIndex < e.options.length - 1 ? 'ArrowDown' : 'ArrowUp')
      : 'Space';
  return {key, value, exposed};
}"""


_REVERSE = {"ArrowRight": "ArrowLeft", "ArrowLeft": "ArrowRight", "ArrowDown": "ArrowUp", "ArrowUp": "ArrowDown"}


def keyboard_session(
    page, box, label: str, timeout: float = 15.0, from_page_start: bool = True
) -> tuple[list[Stop], list[str]]:
    """The walk, then every control used with its own key, each from the state the widget opened in (it is
    put back after). A control that switches others on (notebook 05: a mask's checkbox enables its sliders)
    is walked through again while it is on, and the controls it enabled are used too."""
    stops = keyboard_walk(page, box, label, from_page_start=from_page_start)
    controls = [page.locator(f"[data-walk='{stop.walk}']").element_handle() for stop in stops]
    used = []
    for stop, control in zip(stops, controls, strict=True):
        used += _use(page, box, label, stop, control, {s.visible for s in stops}, timeout)
    return stops, used


def _use(page, box, label: str, stop: Stop, control, enabled_before: set[str] | None, timeout: float) -> list[str]:
    """Press the control's key: its value, the picture and the text beside it change; then put it back."""
    state = widget_state(box)
    control.focus()
    before = control.evaluate(_KEY_AND_VALUE_JS)
    page.keyboard.press(before["key"])
    # the picture and the text beside it (the readouts, and for some widgets the name of what is drawn)
    wait_for_change(
        box,
        state,
        f"{label}: after pressing {before['key']} on {stop.what}",
        need=("src", "readout_words"),
        timeout=timeout,
    )
    after = control.evaluate(_KEY_AND_VALUE_JS)
    assert after["value"] != before["value"], f"{label}: {before['key']} on {stop.what} did not change its value"
    # a control that changes the widget says so to a screen reader: a toggle its state, not a colour (4.1.2)
    assert after["exposed"] != before["exposed"], (
        f"{label}: {before['key']} on {stop.what} changed it, but not the state a screen reader is told "
        f"({before['exposed']} both before and after): a toggle must expose whether it is on "
        "(aria-pressed, aria-checked, or a native checkbox)"
    )
    used = [f"{stop.what}: {before['key']}"]
    if enabled_before is not None and box.evaluate(_EXPECTED_STOPS_JS, False) > len(enabled_before):
        again = keyboard_walk(page, box, f"{label}, {stop.what} changed", from_page_start=False)
        for new in again:
            if new.visible not in enabled_before:
                handle = page.locator(f"[data-walk='{new.walk}']").element_handle()
                used += [f"({u})" for u in _use(page, box, label, new, handle, None, timeout)]
    # back as it was: the checked radio of a group moves back, anything else is pressed again the other way
    control.evaluate_handle(
        "e => e.type === 'radio' ? [...document.getElementsByName(e.name)].find(r => r.checked) : e"
    ).as_element().focus()
    shown = widget_state(box)
    page.keyboard.press(_REVERSE.get(before["key"], before["key"]))
    _wait_until_back(box, state, shown, f"{label}: after putting {stop.what} back", timeout)
    return used


def _wait_until_back(box, opened: dict, shown: dict, what: str, timeout: float) -> None:
    """Until the widget shows again the text it opened with, on a picture drawn since ``shown`` (its state
    when the key that puts it back was pressed).

    The text comes back word for word; the picture drawn back is not the same bytes (blitting), so what is
    waited for is a new picture after the readouts. The widget writes its readouts before its picture
    (base.py), so both have arrived once the readouts are back and the picture has changed: no quiet time.
    """

    def back():
        now = widget_state(box)
        return now["readout_words"] == opened["readout_words"] and now["src"] != shown["src"] and now["loaded"]

    try:
        wait_until(back, timeout=timeout, interval=0.05, what=what, page=box.page)
    except TimeoutError:
        now = widget_state(box)
        raise AssertionError(
            f"{what}: the widget did not come back as it opened within {timeout:.0f} s "
            f"(readouts when it opened {opened['readouts']}, now {now['readouts']}; "
            f"{'a new' if now['src'] != shown['src'] else 'the same'} picture)"
        ) from None
