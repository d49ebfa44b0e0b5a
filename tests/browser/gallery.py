"""The gallery of the course's widgets: docs/images/*.png (screenshots by the browser tests) and docs/gallery.md.

Written only when the environment variable ``UPDATE_GALLERY=1`` is set.
"""

from __future__ import annotations

import html
import json
import os
import re

from labdriver import REPO

UPDATE_GALLERY = os.environ.get("UPDATE_GALLERY", "") == "1"
GALLERY_IMAGES = REPO / "docs" / "images"
GALLERY_PAGE = REPO / "docs" / "gallery.md"
GALLERY_MANIFEST = GALLERY_IMAGES / "gallery.json"


def write_gallery(new_entries: dict[str, dict]) -> None:
    """Merge the new entries into docs/images/gallery.json and rewrite docs/gallery.md from it."""
    GALLERY_IMAGES.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(GALLERY_MANIFEST.read_text()) if GALLERY_MANIFEST.exists() else {}
    manifest.update(new_entries)
    manifest = {name: entry for name, entry in sorted(manifest.items()) if (GALLERY_IMAGES / name).exists()}
    GALLERY_MANIFEST.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")

    lines = [
        "# Gallery: the course's widgets in JupyterLab",
        "",
        "Each picture is a screenshot taken by the browser tests (`tests/browser/`) in a real JupyterLab",
        "running in headless Chromium, right after *Run All* on the solution notebook. Every one of these",
        "widgets is moved by the tests (keyboard and mouse) and must change its picture and its readouts.",
        "Regenerate with `UPDATE_GALLERY=1 .venv/bin/python -m pytest tests/browser`.",
        "",
    ]
    current_title = None
    explore = {name: entry for name, entry in manifest.items() if entry.get("explore")}
    russian = {name: entry for name, entry in manifest.items() if entry.get("language") == "ru"}
    for name, entry in manifest.items():
        if entry.get("explore") or name in russian:
            continue
        if entry["title"] != current_title:
            current_title = entry["title"]
            lines += [
                f"## {current_title}",
                "",
                f"Notebook: `notebooks/{entry['assignment']}/{entry['assignment']}.ipynb`",
                "",
            ]
        if entry.get("heading"):
            lines += [f"**{entry['heading']}**", ""]
        lines += [f"![{entry['assignment']}: {entry.get('heading') or 'widget'}](images/{name})", ""]
        if entry.get("paragraph"):
            lines += [_caption(entry["paragraph"]), ""]
        parts = [
            f"{label}: {', '.join(_clean(entry[key]))}."
            for key, label in (("controls", "Controls"), ("readouts", "Readouts"))
            if entry.get(key)
        ]
        if parts:
            lines += [" ".join(parts), ""]
    if explore:
        lines += [
            "## The explore page (`make explore`, Voilà)",
            "",
            "Every widget on a page of its own, with its short explanation and without code, served by Voilà",
            "from this environment (offline): for a lecture, or to play before reading. Screenshots by",
            "`tests/browser/test_browser_explore.py`, which moves every widget there too.",
            "",
        ]
        lines += _pictures(explore, lambda name, entry: (entry["assignment"], f"explore {entry['assignment']}"))
    if russian:
        lines += [
            "## The Russian course (`make lab LANG=ru`)",
            "",
            "The same widgets in the untouched Russian student notebooks (`notebooks-ru/`), in a laptop-sized",
            "window, right after *Run All*: their labels and readouts in Russian, from the notebook's language.",
            "They run in the lab `make lab LANG=ru` starts, whose own menus and dialogs are in Russian too",
            "(JupyterLab's Russian language pack): the first picture is its whole window.",
            "",
        ]
        windows_first = dict(sorted(russian.items(), key=lambda item: not item[1].get("window")))
        lines += _pictures(windows_first, _russian_where_and_alt)
    GALLERY_PAGE.write_text("\n".join(lines).rstrip() + "\n")


def _pictures(entries: dict, where_and_alt) -> list[str]:
    """A section's pictures: each under its title and where it is (``where_and_alt(name, entry)`` gives both)."""
    lines = []
    for name, entry in entries.items():
        where, alt = where_and_alt(name, entry)
        lines += [f"**{entry['title']}** (`{where}`)", "", f"![{alt}](images/{name})", ""]
    return lines


def _russian_where_and_alt(name: str, entry: dict) -> tuple[str, str]:
    """Where a Russian picture's notebook is, and its text alternative: the window's says what it shows."""
    where = f"notebooks-ru/{entry['assignment']}"
    return where, (f"JupyterLab in Russian (make lab LANG=ru) around {where}" if entry.get("window") else name)


def _clean(names: list[str]) -> list[str]:
    return [
        html.escape(name.replace("\u200b", "").strip(), quote=False)
        for name in names
        if name.replace("\u200b", "").strip()
    ]


def _caption(paragraph: str) -> str:
    """The notebook's paragraph before the widget, as plain Markdown text, without a trailing lead-in
    sentence ("Things to try:") whose list is not shown here."""
    text = " ".join(paragraph.split())
    sentences = re.split(r"(?<=[.!?])\s+", text)
    while len(sentences) > 1 and sentences[-1].endswith(":"):
        sentences.pop()
    return html.escape(" ".join(sentences), quote=False)
