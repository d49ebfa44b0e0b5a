"""What the instructor's HTML pages (the class report, the similarity page) share: the language they are written in,
and templates that escape every value they write.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jinja2

from heads_and_masks import i18n


def written_in() -> str:
    """The language a report is written in now, for its page's ``lang``: the current one where the course speaks it,
    else English (what a language without catalogs falls back to)."""
    current = i18n.language()
    return current if current in i18n.course_languages() else i18n.ENGLISH


@functools.cache
def page_template(folder: str, name: str) -> jinja2.Template:
    """The template ``templates/<folder>/<name>`` of an instructor's page (the class report, the similarity page),
    in an environment that escapes every value it writes (autoescape): what students wrote is shown, never run."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates" / folder),
        autoescape=True,
        undefined=jinja2.StrictUndefined,  # a name the template uses and the page does not give: an error, not ""
    )
    return environment.get_template(name)
