"""`make bench` (tools/bench.py): its report, and that README and docs show a full run's figures.

The timings themselves are never asserted here (shared machines are noisy); the benchmark command
checks its own targets and exits non-zero on a miss.
"""

from __future__ import annotations

import re
import sys

from course import REPO

sys.path.insert(0, str(REPO / "tools"))
import bench  # noqa: E402


def test_summary_says_which_targets_were_missed():
    checks = [bench.Check("fast thing", "2.0×", "≥ 1.8×", True), bench.Check("slow thing", "1.1×", "≥ 1.6×", False)]
    rows = bench.summary(checks)
    assert rows[2].startswith("| fast thing | 2.0× | ≥ 1.8× | met |")
    assert rows[3].startswith("| slow thing | 1.1× | ≥ 1.6× | MISSED |")


def test_write_readme_replaces_only_its_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{bench.README_BEGIN}\nold figures\n{bench.README_END}\nafter\n", encoding="utf-8")
    bench.write_readme("Measured today.", [bench.Check("thing", "1 s", "≤ 2 s", True)], path=readme)
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("before\n") and text.endswith("\nafter\n")
    assert "old figures" not in text
    assert "Measured today." in text and "| thing | 1 s | ≤ 2 s | met |" in text


def test_readme_shows_the_last_full_run():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert bench.README_BEGIN in text and bench.README_END in text, "README lost its benchmark block"
    block = text.split(bench.README_BEGIN, 1)[1].split(bench.README_END, 1)[0]
    assert re.search(r"Measured \d{4}-\d\d-\d\d \d\d:\d\d on .*cores", block), "no date and machine in README's figures"
    promised = ["causal attention at n = 4096", "widget", "the whole course", "grading"]
    missing = [p for p in promised if p not in block]
    assert not missing, f"README's figures lack {missing}: run `make bench` on an idle machine"


def test_docs_hold_every_section_of_a_full_run():
    text = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    missing = [title for title, _ in bench.SECTIONS.values() if f"## {title}" not in text]
    assert not missing, f"docs/benchmarks.md lacks {missing}: run `make bench` (all sections)"
    assert "(quick run)" not in text, "docs/benchmarks.md holds a quick run"
