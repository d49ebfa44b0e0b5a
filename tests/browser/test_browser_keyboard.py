"""The keyboard walk (keyboard.py) and the reflow check (reflow.py) find what they are there to find.

A small stand-in for a course widget (two named sliders, with or without an on/off button, a picture drawn
from their values, readouts) is written into a blank page: no server, no kernel. As it is, it passes both checks; broken in one way each, as
a widget could be broken, it must fail the check that is about that way, with a message that says so.
"""

from __future__ import annotations

import pytest
from keyboard import keyboard_session
from reflow import at_200_percent, reflow_problems

pytestmark = pytest.mark.browser

# Two sliders in a row, a picture that shows their values, the readouts beside it (the classes of the course's
# widget, so that the checks read it as they read one); {style} and {extra} break it.
STAND_IN = """<!doctype html><html lang="en"><head><title>stand-in</title><style>
.course-slider {{ display: flex; align-items: center; gap: 8px; padding: 5px 0; margin: 0 12px; overflow: hidden; }}
.course-slider-input:focus-visible {{ outline: 2px solid #1976d2; outline-offset: 3px; }}
.widget-hbox {{ display: flex; flex-flow: row wrap; }}
{style}
</style></head><body><main>
<div class="course-widget">
  <div class="widget-hbox">
    <div class="course-slider"><label {size_label}>size</label>
      <input type="range" id="size" class="course-slider-input" min="0" max="9" value="3" {size}></div>
    <div class="course-slider"><label for="speed">speed</label>
      <input type="range" id="speed" class="course-slider-input" min="0" max="9" value="5" {speed}></div>
    {toggle}
  </div>
  <div class="widget-hbox"><img alt="" width="200" height="60">
    <div><table class="course-readouts"><tr><td>size</td><td><b>3</b></td></tr>
    <tr><td>speed</td><td><b>5</b></td></tr></table></div></div>
</div>{extra}</main>
<script>
const img = document.querySelector('img'), cells = document.querySelectorAll('td b');
function draw() {{
  const canvas = document.createElement('canvas');
  canvas.width = 200; canvas.height = 60;
  const pen = canvas.getContext('2d');
  pen.font = '20px sans-serif';
  const grid = window.gridOn ? ', grid' : '';
  pen.fillText(`size ${{size.value}}, speed ${{{speed_drawn}}}${{grid}}`, 10, 35);
  img.src = canvas.toDataURL();
  img.alt = `size ${{size.value}}, speed ${{speed.value}}${{grid}}`;
  cells[0].textContent = size.value;
  cells[1].textContent = speed.value + grid;
}}
size.addEventListener('input', draw);
speed.addEventListener('input', draw);
draw();
</script></body></html>"""

SOUND = {
    "style": "",
    "size_label": 'for="size"',
    "size": "",
    "speed": "",
    "toggle": "",
    "extra": "",
    "speed_drawn": "speed.value",
}

# A third control, an on/off button that draws a grid; {pressed} is how it says its state (or does not).
TOGGLE = """<button id="grid" {pressed}>grid</button>"""
TOGGLE_SCRIPT = """<script>window.gridOn = false;
grid.addEventListener('click', () => {
  gridOn = !gridOn;
  grid.classList.toggle('on', gridOn);  // what a sighted user sees: a colour
  if (grid.hasAttribute('aria-pressed')) grid.setAttribute('aria-pressed', String(gridOn));
  draw();
});</script>"""
SOUND_TOGGLE = {"toggle": TOGGLE.format(pressed='aria-pressed="false"'), "extra": TOGGLE_SCRIPT}

# Each breakage: what is changed in the stand-in, and the check's message it must produce.
BROKEN = {
    "tabindex-minus-one": ({"speed": 'tabindex="-1"'}, r"never reached: \[1\]"),
    "tabindex-one": ({"speed": 'tabindex="1"'}, r"Tab reached the controls in the order \[0\], not 0 … 1"),
    "outline-none": ({"style": ".course-slider-input:focus-visible { outline: none; }"}, "no visible focus indicator"),
    "label-for-nothing": ({"size_label": 'for="nothing"'}, "does not say what its label says"),
    "aria-label-not-the-label": ({"speed": 'aria-label="value"'}, r"accessible name is 'value'.*\('speed'\)"),
    "keyboard-trap": (
        {
            "extra": "<script>speed.addEventListener('keydown', e => { if (e.key === 'Tab') e.preventDefault(); });</script>"
        },
        "keyboard trap",
    ),
    "picture-ignores-a-slider": (
        {"speed_drawn": "speed.defaultValue"},
        r"speed.*the picture \(img src\) did not change",
    ),
    "box-1400-px-wide": ({"extra": '<div style="width: 1400px">a fixed row</div>'}, "the page scrolls sideways"),
    "toggle-state-only-a-class": (
        {"toggle": TOGGLE.format(pressed=""), "extra": TOGGLE_SCRIPT},
        r'button\[submit\] "grid" changed it, but not the state a screen reader is told',
    ),
}


def checked(page, content: dict, screenshot) -> None:
    """The stand-in, changed by ``content``, used with the keyboard and then laid out at 200 %."""
    page.set_content(STAND_IN.format(**{**SOUND, **content}))
    keyboard_session(page, page.locator(".course-widget"), "stand-in", timeout=2.0)
    with at_200_percent(page):
        problems = reflow_problems(page, "stand-in", screenshot, ours=[".course-widget", "main"])
    assert not problems, "stand-in at 200 % zoom: " + "; ".join(problems)


@pytest.fixture
def page(browser_context):
    page = browser_context.new_page()
    yield page
    page.close()


def test_the_sound_stand_in_passes(page, screenshots):
    checked(page, {}, screenshots / "zoom200-stand-in.png")


def test_the_sound_stand_in_with_an_on_off_button_passes(page, screenshots):
    checked(page, SOUND_TOGGLE, screenshots / "zoom200-stand-in-toggle.png")


@pytest.mark.parametrize("breakage", list(BROKEN))
def test_a_broken_stand_in_fails(page, screenshots, breakage):
    content, message = BROKEN[breakage]
    with pytest.raises(AssertionError, match=message):
        checked(page, content, screenshots / f"zoom200-stand-in-{breakage}.png")
