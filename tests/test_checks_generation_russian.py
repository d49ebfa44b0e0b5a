"""The messages of the checks of notebook 07 (generation) in Russian: the notebook's own test cells run on the
wrong answers of the catalog test_misconceptions runs in process, and on the reference solutions, and every
message of generation.py that comes out has a translation."""

from __future__ import annotations

import numpy as np

import heads_and_masks as hm
from heads_and_masks.checks import generation as checks
from heads_and_masks.checks.core import CheckFailed

from catalog.nb07_generation import ANSWERS as CATALOG
from russian_checks import in_russian

# what the Russian report of a wrong answer must say: the catalog's English `says`, in Russian
SAYS = {
    "cache_forgets_own_kv": "забывает собственные K/V нового токена",
    "cache_not_appended": "не дописаны",
    "new_token_prepended": "перед токенами из кэша",
    "decode_top_left_tril": "по левому верхнему углу",
    "top_left_tril": "по левому верхнему углу",
    "bottom_right_without_own_key": "свой собственный ключ",
    "bottom_right_refuses_no_new_query": "Без новых запросов",
    "bottom_right_rows_from_a_list": "пустого списка строк",
    "rolling_indexed_by_step": "по шагу, а не по позиции",
    "rolling_off_by_one_slot": "сдвиг на один слот",
    "rolling_appends": "как очередь",
    "sinks_and_instead_of_or": "И там, где нужно ИЛИ",
    "sinks_see_the_future": "должна быть причинной",
    "documents_see_earlier_documents": "видят предыдущие документы",
    "documents_or_instead_of_and": "ИЛИ там, где нужно И",
    "documents_assume_sorted_ids": "возрастают вдоль строки",
    "documents_batch_axes_mixed": "смешивает ось батча",
    "documents_bidirectional": "двунаправленное",
    "every_layer_global": "посчитаны как глобальные",
    "local_layers_always_full_window": "не может хранить больше токенов",
}


def _notebook_cells():
    """The notebook's code cells that tests run after (answers, and the given attention()), and its graded test
    cells (visible and hidden calls), by grade id, in the notebook's order."""
    from build_notebooks import read_source
    from course import REPO

    code = [c for c in read_source(REPO / "authoring" / "07_generation.py").cells if c.cell_type == "code"]
    graded = {c.metadata["nbgrader"]["grade_id"]: c for c in code if "grade_id" in c.metadata.get("nbgrader", {})}
    solutions = {grade_id: c.source for grade_id, c in graded.items() if not c.metadata["nbgrader"].get("grade")}
    return solutions, {grade_id: c.source for grade_id, c in graded.items() if grade_id not in solutions}


def _failures(cells: dict[str, str], solutions: dict[str, str], tests: dict[str, str]) -> dict[str, str]:
    """What the test cells say of the answer cells ``cells`` (the reference solution elsewhere), by grade id."""
    namespace = {"np": np, "hm": hm}
    for grade_id, source in solutions.items():
        exec(cells.get(grade_id, source), namespace)
    failures = {}
    for grade_id, source in tests.items():
        try:
            exec(source, dict(namespace))
        except CheckFailed as failure:
            failures[grade_id] = str(failure)
    return failures


def _report(answer, solutions, tests) -> str:
    """What the test cells of the exercise an answer breaks say of it."""
    own_tests = {grade_id: source for grade_id, source in tests.items() if grade_id.startswith(f"test_{answer.breaks}")}
    return " ".join(_failures({k: answer.source(k) for k in answer.cells}, solutions, own_tests).values())


def test_generation_checks_speak_russian(capsys):
    solutions, tests = _notebook_cells()  # read once: reading the notebook is the slow part
    with in_russian(checks):
        reports = {answer.name: _report(answer, solutions, tests) for answer in CATALOG if answer.breaks}
        assert not _failures({}, solutions, tests)  # the reference solutions pass, every passing line in Russian
    assert all(reports.values()), [name for name, report in reports.items() if not report]
    for name, phrase in SAYS.items():
        assert phrase in reports[name], (name, reports[name])
    passing = capsys.readouterr().out
    assert "причинная диагональ выровнена по правому нижнему углу" in passing
    assert "sinks_window_mask совпадает с эталоном" in passing
