"""Reflow at 200 % zoom (WCAG 1.4.10, 1.4.4): a 1280 px wide window zoomed to 200 % lays the page out in
640 CSS px, and the page must then be read and used without scrolling sideways.

Browser zoom does two things: the page gets half as many CSS pixels to lay itself out in (640 × 400 for a
1280 × 800 window), and each CSS pixel is drawn with two device pixels. Layout depends only on the first, so
``at_200_percent`` sets a 640 × 400 viewport (Playwright's ``set_viewport_size``) on the page already open
(no second page load, no second kernel) and draws it with device scale factor 2 through Chrome's own
device-metrics emulation, as Playwright does for a new context with ``device_scale_factor=2``: the
screenshots are then 1280 px wide, as the zoomed window shows them. Then ``reflow_problems`` checks

* the page does not scroll sideways: the document and every box that scrolls (Voilà's page, JupyterLab's
  notebook) are no wider than their window (``scrollWidth <= clientWidth``). A box that scrolls sideways by
  itself is allowed by WCAG only for content that needs two dimensions (a wide table, a picture): any such box
  is listed, and only a picture or a table may be one. Boxes of the frame around the course's part (a
  JupyterLab cell editor) are listed and not counted, as in the accessibility audit;
* every control of every course widget, its picture and its readouts are inside the window (not cut off at
  its edge) and no two of them overlap; the widget's own layout checks hold (``layout_problems``).
"""

from __future__ import annotations

from contextlib import contextmanager

from labdriver import layout_problems, settle

ZOOM_200 = {"width": 640, "height": 400}  # a 1280 × 800 window at 200 %, in CSS px


@contextmanager
def at_200_percent(page):
    """The page laid out as in a 1280 × 800 window zoomed to 200 %; as it was afterwards."""
    before = page.viewport_size
    page.set_viewport_size(ZOOM_200)
    session = page.context.new_cdp_session(page)
    session.send(
        "Emulation.setDeviceMetricsOverride",
        {**ZOOM_200, "deviceScaleFactor": 2, "mobile": False, "screenWidth": 1280, "screenHeight": 800},
    )
    try:
        page.wait_for_timeout(300)  # the layout settles (widgets listen for the window's resize)
        assert page.evaluate("() => [innerWidth, devicePixelRatio]") == [ZOOM_200["width"], 2]
        yield
    finally:
        session.send("Emulation.clearDeviceMetricsOverride")
        session.detach()
        page.set_viewport_size(before)


_REFLOW_JS = """ours => {
  const problems = [], own = [], frame = [];
  const course = [...document.querySelectorAll(ours.join(', '))];
  const width = document.documentElement.clientWidth;
  const describe = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
      (e.classList.length ? '.' + [...e.classList].slice(0, 2).join('.') : '');
  // sideways scrolling: the page itself, and every box that scrolls
  const page = document.scrollingElement;
  if (page.scrollWidth > page.clientWidth + 1)
    problems.push(`the page scrolls sideways: ${page.scrollWidth} px of content in a ${page.clientWidth} px window`);
  for (const e of document.querySelectorAll('body *')) {
    const style = getComputedStyle(e);
    if (!/(auto|scroll)/.test(style.overflowX) || e.scrollWidth <= e.clientWidth + 1 || e.clientWidth === 0) continue;
    // what sticks out of the box: allowed when all of it is a picture or a table (content in two dimensions)
    const edge = e.getBoundingClientRect().right + 1;
    const wide = [...e.querySelectorAll('*')].filter(c => c.getBoundingClientRect().right > edge);
    const twoDimensional = wide.length > 0 && wide.every(c => c.closest('table, img, canvas, svg'));
    const holds = [...new Set(wide.map(c => c.tagName.toLowerCase()))].join(', ');
    const where = `${describe(e)}: ${e.scrollWidth} px in ${e.clientWidth} px (${holds || 'text'} sticks out)`;
    if (!course.some(c => c.contains(e) || e.contains(c))) { frame.push(where); continue; }
    own.push(where);
    if (!twoDimensional)
      problems.push(`${where}: it scrolls sideways, and is not a picture or a table`);
  }
  // every course widget: its controls, picture and readouts inside the window and apart from each other
  document.querySelectorAll('.course-widget').forEach((box, number) => {
    const row = box.querySelector('.widget-hbox');
    const parts = [...(row ? row.children : []), box.querySelector('img'), box.querySelector('table.course-readouts')]
        .filter(e => e && e.getClientRects().length);
    const name = e => (e.innerText || e.getAttribute('alt') || describe(e)).replace(/\\s+/g, ' ').trim().slice(0, 40);
    const rects = parts.map(e => e.getBoundingClientRect());
    parts.forEach((e, i) => {
      const r = rects[i];
      if (r.left < -1 || r.right > width + 1)
        problems.push(`widget ${number + 1}: "${name(e)}" spans ${Math.round(r.left)} … ${Math.round(r.right)} px, outside the ${width} px window`);
      for (let j = i + 1; j < parts.length; j++) {
        const s = rects[j];
        const x = Math.min(r.right, s.right) - Math.max(r.left, s.left), y = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
        if (x > 1 && y > 1)
          problems.push(`widget ${number + 1}: "${name(e)}" and "${name(parts[j])}" overlap (${Math.round(x)} × ${Math.round(y)} px)`);
      }
    });
  });
  return {problems, own, frame, width};
}"""


_SCROLLED_HEIGHT_JS = """() => Math.max(document.scrollingElement.scrollHeight,
    ...[...document.querySelectorAll('body *')].filter(e => /(auto|scroll)/.test(getComputedStyle(e).overflowY))
        .map(e => e.scrollHeight - e.clientHeight + innerHeight))"""


def screenshot_at_200_percent(page, path) -> None:
    """The whole page as the zoomed window shows it (1280 device px wide): the window made as tall as the
    content (the page scrolls inside its own box in Voilà and JupyterLab, which a full-page screenshot misses)."""
    import base64

    height = min(int(page.evaluate(_SCROLLED_HEIGHT_JS)), 6000)
    session = page.context.new_cdp_session(page)
    metrics = {"width": ZOOM_200["width"], "deviceScaleFactor": 2, "mobile": False}
    try:
        session.send("Emulation.setDeviceMetricsOverride", {**metrics, "height": height})
        page.wait_for_timeout(300)
        shot = session.send("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))
    finally:
        session.send("Emulation.setDeviceMetricsOverride", {**metrics, "height": ZOOM_200["height"]})
        session.detach()


# What the course makes in a page (as for the accessibility audit): the cells' outputs and text.
COURSE_PARTS = [".jp-OutputArea-output", ".jp-MarkdownOutput"]


def reflow_problems(page, label: str, screenshot_path, ours=COURSE_PARTS) -> list[str]:
    """At 200 % (inside ``at_200_percent``): what cannot be read or used without scrolling sideways.

    A box that scrolls sideways counts when it is in what the course makes (``ours``) or holds it (the page's
    own scrolling boxes); one elsewhere (a JupyterLab cell editor) is the frame's: printed, not counted."""
    boxes = page.locator(".course-widget")
    for index in range(boxes.count()):
        settle(boxes.nth(index))
    found = page.evaluate(_REFLOW_JS, list(ours))
    problems = list(found["problems"])
    for index in range(boxes.count()):
        problems += [f"widget {index + 1}: {p}" for p in layout_problems(boxes.nth(index))]
    screenshot_at_200_percent(page, screenshot_path)
    print(
        f"{label} at 200 % ({found['width']} CSS px): "
        + (
            f"boxes that scroll by themselves: {'; '.join(found['own'])}"
            if found["own"]
            else "nothing scrolls sideways"
        )
        + (f"; in the frame around: {'; '.join(found['frame'][:5])}" if found["frame"] else "")
    )
    return problems
