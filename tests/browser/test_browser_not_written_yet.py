"""On a laptop (1100 px window, file browser open), the "not written yet" message breaks only between words.

JupyterLab shows stderr in a ``<pre>`` whose ``word-break: break-all`` cuts a line too long for the column at
any character ("your co / de"). The untouched notebook 00 is Run All; in every stderr output each word (a run
of non-space characters) must sit on one line: a word the browser cut has more than one line box
(``Range.getClientRects``). Screenshot: ``test-artifacts/browser/laptop-not-written-yet.png``.
"""

from __future__ import annotations

import pytest
from labdriver import LAPTOP, NOT_LOCAL, open_file_browser, opened_notebook

pytestmark = pytest.mark.browser

# Each word of every stderr output, with the number of lines the browser laid it out on.
_WORDS_JS = """() => {
  const words = [];
  for (const pre of document.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"] pre')) {
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        words.push({word: match[0], lines: tops.size});
      }
    }
  }
  return words;
}"""


def test_not_written_yet_breaks_between_words_at_laptop_width(lab, browser, screenshots):
    context = browser.new_context(viewport=LAPTOP, device_scale_factor=1)
    attempted = []
    context.route(NOT_LOCAL, lambda route: (attempted.append(route.request.url), route.abort()))
    try:
        with opened_notebook(lab, context, "student", "00_start_here") as notebook:
            page = notebook.page
            open_file_browser(page)
            notebook.run_all()
            words = page.evaluate(_WORDS_JS)
            message = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').first
            message.scroll_into_view_if_needed()
            page.screenshot(path=str(screenshots / "laptop-not-written-yet.png"))
    finally:
        context.close()
    assert attempted == [], attempted
    assert any(w["word"] == "written" for w in words), f"no 'not written yet' message on the page: {words}"
    cut = [w["word"] for w in words if w["lines"] > 1]
    assert not cut, f"words cut across two lines at 1100 px: {cut}"
