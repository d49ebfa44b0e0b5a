"""The class's data in a folder of its own (autograde/class_folder.py): a course graded when it lived in
``autograde/`` loses nothing on the first command after the move, and nothing already in ``class/`` is
overwritten."""

from __future__ import annotations

import csv
import stat

import pytest

from autograde import grade
from autograde.course import Course

A = "00_start_here"
KEY = "k" * 64 + "\n"


def old_layout_course(root, real_gradebook: bool = True):
    """A course root as an instructor left it before ``class/``: the gradebook (alice, in it; a stand-in file
    unless ``real_gradebook``), the grading key (0600), alice's collected submission, all in ``autograde/``."""
    from nbgrader.api import Gradebook

    old = root / "autograde"
    old.mkdir(parents=True)
    if real_gradebook:  # (nbgrader makes a new one in about a second: alembic runs)
        with Gradebook(f"sqlite:///{old / 'gradebook.db'}", "heads-and-masks") as book:
            book.update_or_create_student("alice")
            book.update_or_create_assignment(A)
    else:
        (old / "gradebook.db").write_bytes(b"the gradebook")
    (old / "grading-key").write_text(KEY)
    (old / "grading-key").chmod(0o600)
    handed_in = old / "submitted" / "alice" / A
    handed_in.mkdir(parents=True)
    (handed_in / f"{A}.ipynb").write_text("{}")
    return root


def test_the_first_command_moves_the_old_layout_into_the_class_folder(tmp_path, capsys):
    root = old_layout_course(tmp_path / "course")
    assert grade.main(["--root", str(root), "export", A]) == 0
    said = capsys.readouterr().out
    assert "moved the class's data from" in said and "gradebook.db, grading-key, submitted/" in said, said
    assert said.count("moved the class's data") == 1, said

    new = Course(root=root).runtime_root
    assert new == root / "class" and stat.S_IMODE(new.stat().st_mode) == 0o700
    assert (new / "grading-key").read_text() == KEY and stat.S_IMODE((new / "grading-key").stat().st_mode) == 0o600
    assert (new / "submitted" / "alice" / A / f"{A}.ipynb").read_text() == "{}"
    assert not [p.name for p in (root / "autograde").iterdir()], "something of the class stayed behind"
    with open(new / "grades.csv", newline="") as exported:  # the moved gradebook, read by the command
        assert [row["student"] for row in csv.DictReader(exported)] == ["alice"]

    assert grade.main(["--root", str(root), "export", A]) == 0
    assert "moved" not in capsys.readouterr().out, "the second command had nothing to move"


def test_nothing_moves_over_what_the_class_folder_already_holds(tmp_path):
    root = old_layout_course(tmp_path / "course", real_gradebook=False)
    (root / "class").mkdir(mode=0o700)
    (root / "class" / "grading-key").write_text("another key\n")
    with pytest.raises(SystemExit) as stopped:
        grade.main(["--root", str(root), "export", A])
    assert "grading-key" in str(stopped.value) and "Nothing was moved" in str(stopped.value), stopped.value
    assert (root / "class" / "grading-key").read_text() == "another key\n"
    assert (root / "autograde" / "grading-key").read_text() == KEY
    assert (root / "autograde" / "gradebook.db").read_bytes() == b"the gradebook"
    assert not (root / "class" / "gradebook.db").exists(), "something moved before the command stopped"
