"""On a laptop: JupyterLab in a 1100 px wide window with its file browser open, every picture stays legible.

Each solution notebook, once test_browser_notebooks.py has run it (Run All, in a 1400 × 1000 window) and
moved its widgets, is looked at again in a 1100 × 900 window with the file browser open (it takes about
250 px): the lab lays the same outputs out again at that width, without a second Run All. Then it checks

* every course widget: the smallest text of its picture *on the screen* is at least ``LEGIBLE_TEXT_PX``.
  That is the smallest text size in the picture's own pixels (``CourseWidget.text_sizes_px`` of the
  package's widget of the same class, drawn here: same code, same fonts, and the test checks that it makes
  a picture of the same size) times the scale the page shows the picture at (rendered width / natural width).
  The readouts may move below the picture, but are never cut off or clipped (``layout_problems``).
* every output fits the window: no output wider than its area, none past the window's right edge, every
  widget drawn with a size inside its output area (``outputs_that_do_not_fit``).
* every static picture (a figure shown as a PNG) is shown at its own size, not scaled down to fit:
  scaled down, its text shrinks with it.

Screenshots of every widget and the whole page go to ``test-artifacts/browser/laptop-*.png``.
The untouched student notebooks are run at this width from the start, in test_browser_notebooks.py.
"""

from __future__ import annotations

import importlib
import pkgutil

from heads_and_masks.pictures import LEGIBLE_TEXT_PX
from labdriver import (
    LAPTOP,
    layout_problems,
    open_file_browser,
    outputs_that_do_not_fit,
    settle,
)


def widget_class(name: str):
    """The course widget class called ``name`` (from the box's ``course-widget-NAME`` class)."""
    import heads_and_masks.widgets as package

    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"heads_and_masks.widgets.{info.name}")
        if isinstance(getattr(module, name, None), type):
            return getattr(module, name)
    raise LookupError(f"no course widget class {name} in heads_and_masks.widgets")


_PICTURES_JS = """() => [...document.querySelectorAll('.jp-OutputArea-output img')].map((img, index) => {
  const box = img.closest('.course-widget');
  const name = box ? [...box.classList].find(c => c.startsWith('course-widget-')) : null;
  const output = img.closest('.jp-OutputArea-output');
  return {index, natural: img.naturalWidth, shown: img.getBoundingClientRect().width,
          room: output ? output.getBoundingClientRect().width : 0,
          widget: box ? (name ? name.slice('course-widget-'.length) : '?') : null};
})"""


def check_pictures_at_laptop_width(page, assignment: str, screenshots) -> None:
    """The solution notebook open in ``page``, already run: seen again at laptop width, file browser open."""
    page.set_viewport_size(LAPTOP)
    browser_width = open_file_browser(page)
    boxes = page.locator(".course-widget")
    for index in range(boxes.count()):
        settle(boxes.nth(index))
    pictures = page.evaluate(_PICTURES_JS)
    room = max((p["room"] for p in pictures), default=0)
    assert 0 < room < 720, (
        f"{assignment}: the notebook's outputs are {room:.0f} px wide with the file browser "
        f"({browser_width:.0f} px) open: not the laptop layout this test is about"
    )
    problems, smallest = [], {}
    for number in range(boxes.count()):
        box = boxes.nth(number)
        box.scroll_into_view_if_needed()
        box.screenshot(path=str(screenshots / f"laptop-solution-{assignment}-{number + 1}.png"))
        problems += [f"widget {number + 1}: {p}" for p in layout_problems(box)]
    for picture in pictures:
        if picture["widget"] is None:
            if picture["shown"] < picture["natural"] - 1:
                problems.append(
                    f"static picture {picture['index'] + 1} is {picture['natural']} px wide and "
                    f"scaled down to {picture['shown']:.0f} px (the notebook has {picture['room']:.0f} "
                    f"px): its text shrinks to {picture['shown'] / picture['natural']:.0%} of its size"
                )
            continue
        widget = widget_class(picture["widget"])()
        if abs(widget.figure.bbox.width - picture["natural"]) > 1:
            problems.append(
                f"{picture['widget']}: the page's picture is {picture['natural']} px wide, the "
                f"package's {widget.figure.bbox.width:.0f} px: not the same picture"
            )
            continue
        scale = picture["shown"] / picture["natural"]
        on_screen = min(widget.text_sizes_px()) * scale
        smallest[picture["widget"]] = on_screen
        if on_screen < LEGIBLE_TEXT_PX:
            problems.append(
                f"{picture['widget']}: its smallest text is {on_screen:.1f} px on the screen "
                f"(the picture is shown at {scale:.0%} of its {picture['natural']} px), below "
                f"{LEGIBLE_TEXT_PX} px"
            )
    problems += outputs_that_do_not_fit(page)
    page.screenshot(path=str(screenshots / f"laptop-solution-{assignment}-page.png"))
    print(
        f"{assignment} at {LAPTOP['width']} px, file browser {browser_width:.0f} px, outputs {room:.0f} px: "
        + ", ".join(f"{name} smallest text {px:.1f} px" for name, px in smallest.items())
    )
    assert not problems, (
        f"{assignment} in a {LAPTOP['width']} px window with the file browser open "
        f"(screenshots test-artifacts/browser/laptop-solution-{assignment}-*.png):\n" + "\n".join(problems)
    )
