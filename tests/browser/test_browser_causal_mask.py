"""The lesson's widget (notebook 03, box class ``lesson-widget``) used in JupyterLab as the lesson uses it.

* Toggling "causal mask" on hatches exactly the cells above the diagonal (the keys in the future) and makes
  the first row's entropy read 0: the first token can only look at itself.
* With "divide by √d" off, moving "head size d" up makes the score spread grow (like √d); with it on, the
  spread stays put.

The picture is checked pixel by pixel on the PNG the browser shows. Where each heatmap cell lies in that
PNG is computed by the package's own ``LessonWidget`` drawn here with the same settings (same code, same
fonts: the same layout, which the test verifies through the image size).
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from labdriver import (
    REPO,
    drag_slider,
    handle_position,
    slider_text,
    opened_notebook,
    settle,
    wait_for_change,
    widget_state,
)

pytestmark = pytest.mark.browser
ASSIGNMENT = "03_causal_mask"
NOTEBOOK = REPO / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"

# A hatched cell is drawn in neutral greys (light background, mid-grey "///" lines); a weight cell is a
# shade of blue with its number on it. The share of mid-grey pixels tells them apart: measured on the
# package's own PNG, 0.30 in every hatched cell, at most 0.09 in a weight cell (the edges of its number).
HATCHED_AT_LEAST = 0.22
PLAIN_AT_MOST = 0.15


def _png_shown(box) -> Image.Image:
    """The PNG the page currently shows in the widget's <img> (fetched from its blob: URL)."""
    encoded = box.locator("img").first.evaluate("""async img => {
        const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
        let text = '';
        for (let i = 0; i < bytes.length; i += 8192) text += String.fromCharCode(...bytes.subarray(i, i + 8192));
        return btoa(text);
    }""")
    return Image.open(io.BytesIO(base64.b64decode(encoded))).convert("RGB")


def _cell_boxes():
    """Pixel boxes (left, top, right, bottom) in the PNG of every heatmap cell, and the PNG size."""
    from heads_and_masks.sentence import TOKENS
    from heads_and_masks.widgets.causal_mask import LessonWidget

    reference = LessonWidget()
    ax, height = reference.ax_weights, reference.figure.bbox.height
    n = len(TOKENS)
    boxes = {}
    for i in range(n):
        for j in range(n):
            (x0, y0), (x1, y1) = ax.transData.transform([(j - 0.5, i - 0.5), (j + 0.5, i + 0.5)])
            left, right = sorted((x0, x1))
            top, bottom = sorted((height - y0, height - y1))  # PNG rows go down, display y goes up
            inset_x, inset_y = 0.15 * (right - left), 0.15 * (bottom - top)
            boxes[i, j] = tuple(
                int(round(v)) for v in (left + inset_x, top + inset_y, right - inset_x, bottom - inset_y)
            )
    size = Image.open(io.BytesIO(reference.png())).size
    return n, boxes, size


def _mid_grey_share(image: Image.Image, box) -> float:
    pixels = np.asarray(image.crop(box), dtype=int)  # (h, w, 3)
    neutral = np.ptp(pixels, axis=-1) <= 12  # R, G and B nearly equal
    mid = (pixels.mean(axis=-1) > 60) & (pixels.mean(axis=-1) < 215)
    return float((neutral & mid).mean())


def _readout(state: dict, name: str) -> float:
    assert name in state["readouts"], f"the lesson widget has no readout {name!r}; it shows {list(state['readouts'])}"
    return float(state["readouts"][name])


def _set_checkbox(box, description: str, checked: bool) -> None:
    checkbox = box.locator(".widget-checkbox", has_text=description).locator("input[type=checkbox]")
    assert checkbox.count() == 1, f"the lesson widget has no checkbox {description!r}"
    if checkbox.is_checked() != checked:
        before = widget_state(box)
        checkbox.click()
        wait_for_change(box, before, f"after turning {description!r} {'on' if checked else 'off'}", need=("src",))


def _slider_to_end(page, box, description: str, end: str) -> float:
    """Drag the slider's handle past the end of its track ("min" or "max"); return the value it reads."""
    slider = box.locator(".course-slider", has_text=description)
    assert slider.count() == 1, f"the lesson widget has no slider {description!r}"
    handle = slider.locator("input[type=range]").first
    value, low, high = handle_position(handle)
    target = low if end == "min" else high
    if value != target:
        before = widget_state(box)
        drag_slider(page, handle, fraction=1.2, towards_max=(end == "max"))
        wait_for_change(box, before, f"after dragging {description!r} to its {end}", need=("src",))
    value = handle_position(handle)[0]
    assert value == target, f"dragging {description!r} past the end of its track left it at {value}, not {target}"
    return float(slider_text(handle).replace(",", ""))  # the value it shows, e.g. "512"


@pytest.fixture(scope="module")
def lesson(lab, browser_context):
    """Notebook 03's solution, run once for the tests of this module; its lesson widget."""
    if not NOTEBOOK.exists():
        pytest.skip(f"{NOTEBOOK.relative_to(REPO)} does not exist yet: the lesson widget test waits for notebook 03")
    with opened_notebook(lab, browser_context, "solution", ASSIGNMENT) as notebook_page:
        notebook_page.run_all()
        boxes = notebook_page.page.locator(".lesson-widget")
        assert boxes.count() >= 1, "notebook 03 shows no widget with the CSS class lesson-widget"
        box = boxes.first
        box.scroll_into_view_if_needed()
        settle(box)
        yield notebook_page.page, box


def test_causal_mask_hatches_the_future_and_zeroes_the_first_row_entropy(lesson, screenshots):
    page, box = lesson
    n, cells, size = _cell_boxes()
    above = [(i, j) for (i, j) in cells if j > i]  # keys after the query: forbidden by the causal mask
    on_or_below = [(i, j) for (i, j) in cells if j <= i]

    _set_checkbox(box, "causal mask", False)
    unmasked_state, unmasked = settle(box), _png_shown(box)
    assert unmasked.size == size, (
        f"the widget's picture is {unmasked.size} pixels, the package draws {size}: "
        "the cell positions computed here would not match"
    )
    _set_checkbox(box, "causal mask", True)
    masked_state, masked = settle(box), _png_shown(box)
    box.screenshot(path=str(screenshots / "lesson-03-mask-on.png"))

    assert _readout(unmasked_state, "first row entropy (bits)") > 0.5, (
        f"without the mask the first query sees {n} keys, yet its entropy reads {unmasked_state['readouts']}"
    )
    assert _readout(masked_state, "first row entropy (bits)") == 0.0, (
        "with the causal mask the first query may look only at itself (one-hot row, entropy 0), but the "
        f"widget reads first row entropy {masked_state['readouts']['first row entropy (bits)']}"
    )

    for cell in above:
        before, after = _mid_grey_share(unmasked, cells[cell]), _mid_grey_share(masked, cells[cell])
        assert after >= HATCHED_AT_LEAST and before <= PLAIN_AT_MOST, (
            f"cell (query {cell[0]}, key {cell[1]}) lies above the diagonal: it should be plain without the "
            f"mask and hatched with it; mid-grey share {before:.2f} without, {after:.2f} with the mask"
        )
        assert unmasked.crop(cells[cell]).tobytes() != masked.crop(cells[cell]).tobytes()
    for cell in on_or_below:
        share = _mid_grey_share(masked, cells[cell])
        assert share <= PLAIN_AT_MOST, (
            f"cell (query {cell[0]}, key {cell[1]}) is allowed by the causal mask "
            f"but looks hatched (mid-grey share {share:.2f})"
        )


def test_without_sqrt_d_the_spread_grows_with_the_head_size(lesson, screenshots):
    page, box = lesson
    _set_checkbox(box, "divide by √d", False)
    d_low = _slider_to_end(page, box, "head size d", "min")
    spread_low = _readout(settle(box), "score spread")
    d_high = _slider_to_end(page, box, "head size d", "max")
    spread_high = _readout(settle(box), "score spread")
    box.screenshot(path=str(screenshots / "lesson-03-no-sqrt-d-max-d.png"))
    # the spread of a sum of d products grows like √d: a factor √(d_high / d_low) is expected, half is required
    growth = spread_high / spread_low
    assert growth >= 0.5 * np.sqrt(d_high / d_low), (
        f"without the division by √d the score spread should grow like √d: from d={d_low:g} to d={d_high:g} "
        f"it went from {spread_low:.3g} to {spread_high:.3g} (×{growth:.2f}, expected about ×{np.sqrt(d_high / d_low):.1f})"
    )

    _set_checkbox(box, "divide by √d", True)
    spread_scaled = _readout(settle(box), "score spread")
    assert spread_scaled < spread_high / 4, (
        f"dividing by √d should bring the spread at d={d_high:g} back to about 1; it reads {spread_scaled:.3g} "
        f"(without the division {spread_high:.3g})"
    )
