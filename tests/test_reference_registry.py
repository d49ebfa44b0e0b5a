"""The registry of reference implementations is the one list of graded functions: every check locks all of
them while a learner's function runs, and the grading kernels' copy of the package has none of them."""

from __future__ import annotations

import ast
import importlib
import pkgutil

import numpy as np
import pytest

import heads_and_masks as hm
from heads_and_masks import _guard
from heads_and_masks._guard import ReferenceUsedError, locked, reference, references
from heads_and_masks.checks.core import CheckFailed, call, expect_value_error

REGISTERED = references()


def _package_function(ref):
    return getattr(importlib.import_module(ref.module), ref.name)


def _calling(function):
    """An answer that hands back the course's own result instead of computing it."""

    def answer(*args):
        return function(*args)

    return answer


@pytest.fixture
def own_registry(monkeypatch):
    """References registered by a test stay out of the package's registry."""
    monkeypatch.setattr(_guard, "_registry", dict(_guard._registry))


def test_the_registry_holds_every_reference_of_the_package():
    for module in pkgutil.walk_packages(hm.__path__, "heads_and_masks."):
        importlib.import_module(module.name)  # widgets, pictures and checks too: none may hide a reference
    assert references() == _guard._registry
    assert {"attention", "split_heads", "causal_mask", "blocked_causal_attention", "decode_step"} <= set(REGISTERED)
    for name, ref in REGISTERED.items():
        assert ref.name == name and _package_function(ref).__name__ == name


@pytest.mark.parametrize("name", sorted(REGISTERED))
def test_every_reference_is_refused_inside_a_graded_call(name):
    function = _package_function(REGISTERED[name])
    for run in (
        lambda answer: call(answer, what=f"answer calling {name}"),
        lambda answer: expect_value_error(answer, what=f"answer calling {name}", why="bad"),
    ):
        with pytest.raises(CheckFailed) as failure:
            run(_calling(function))
        assert failure.value.misconception == "conventions.called_reference"
        assert f"answer calling {name}: your answer called the course's reference `{name}`" in str(failure.value)


def test_a_new_reference_is_locked_without_being_listed(own_registry):
    @reference
    def brand_new_exercise(x):
        return x

    assert references()["brand_new_exercise"] == _guard.Reference("brand_new_exercise", __name__)
    with pytest.raises(CheckFailed, match="called the course's reference `brand_new_exercise`"):
        call(_calling(brand_new_exercise), 1, what="brand_new_exercise(1)")
    assert brand_new_exercise(1) == 1  # outside a graded call it works


def test_a_reference_imported_during_a_graded_call_is_locked_too(own_registry):
    with locked():
        defined_now = reference(lambda: "the answer")
        with pytest.raises(ReferenceUsedError):
            defined_now()


def test_the_lock_nests_and_is_released_afterwards():
    x = np.ones((1, 2, 4))
    with locked():
        with locked():
            pass
        with pytest.raises(ReferenceUsedError):
            hm.split_heads(x, 2)  # still inside the outer block
    assert hm.split_heads(x, 2).shape == (1, 2, 2, 2)
    assert not hasattr(hm.split_heads, "__wrapped__")


def test_two_references_of_one_name_are_refused(own_registry):
    def attention(q, k, v, mask=None):
        return q

    with pytest.raises(ValueError, match="two references named `attention`"):
        reference(attention)


def test_the_grading_kernels_package_has_no_reference_bodies(tmp_path):
    from autograde.kernel.stub_package import stub_package
    from autograde.kernel.allowlist import assignments

    for assignment in [None, *assignments()]:
        target = stub_package(tmp_path / str(assignment), assignment)
        left = set(REGISTERED)
        for path in target.rglob("*.py"):
            module = ".".join(path.relative_to(target.parent).with_suffix("").parts)
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.FunctionDef) and REGISTERED.get(node.name) == _guard.Reference(
                    node.name, module
                ):
                    assert [type(statement) for statement in node.body] == [ast.ImportFrom, ast.Raise], node.name
                    left.discard(node.name)
        assert not left, f"references missing from the {assignment} kernel's package: {sorted(left)}"


def test_an_allowlisted_name_the_source_does_not_define_stops_the_stub(tmp_path, monkeypatch):
    from autograde.kernel import allowlist
    from autograde.kernel.stub_package import stub_package

    names = dict(allowlist.NOTEBOOK_NAMES, **{"03_causal_mask": {"heads_and_masks.masks": ("not_there",)}})
    monkeypatch.setattr(allowlist, "NOTEBOOK_NAMES", names)
    with pytest.raises(RuntimeError, match="does not define"):
        stub_package(tmp_path, "03_causal_mask")


def test_the_kept_stub_is_made_again_when_the_course_package_changes(tmp_path, monkeypatch):
    """A grading run reuses the stub kept from the last run only while nothing in the course package (or
    in the code that makes the stub) changed; a half-made stub of a killed run is never used."""
    import shutil

    from autograde.kernel import stub_package

    repo = tmp_path / "repo"
    shutil.copytree(
        stub_package.REPO / "heads_and_masks", repo / "heads_and_masks", ignore=shutil.ignore_patterns("__pycache__")
    )
    monkeypatch.setattr(stub_package, "REPO", repo)
    kept = tmp_path / "work"
    kept.mkdir()
    (kept / ".stub-0123-half").mkdir()  # what a run killed while making its stub leaves
    first = stub_package.kept_stub_package(kept)
    assert first.parent.parent.name == f"stub-{stub_package.stub_fingerprint()}"
    assert [p.name for p in kept.iterdir()] == [first.parent.parent.name], "the half-made stub was not removed"
    marker = first / "kept-marker"
    marker.write_text("x")
    assert stub_package.kept_stub_package(kept) == first and marker.exists(), "an unchanged package was made again"

    masks = repo / "heads_and_masks" / "masks.py"
    masks.write_text(masks.read_text(encoding="utf-8") + "\nEDITED_BY_THE_TEST = 1\n", encoding="utf-8")
    second = stub_package.kept_stub_package(kept)
    assert second != first and not first.exists(), "the stub of the old package was kept or reused"
    assert second.parent.parent.name == f"stub-{stub_package.stub_fingerprint()}"
    (second / "__init__.py").unlink()  # incomplete: never used as it is
    assert (stub_package.kept_stub_package(kept) / "__init__.py").is_file()


def test_a_second_course_gets_a_copy_of_the_kept_stub(tmp_path):
    """A process grading several courses (the test suite, a department's script) makes the stub once and
    copies it into each course's folder, with the same contents and modes the kernels' uids can read."""
    import filecmp
    import stat

    from autograde.kernel import stub_package

    first_course, second_course = tmp_path / "one", tmp_path / "two"
    first_course.mkdir()
    second_course.mkdir()
    first = stub_package.kept_stub_package(first_course)
    second = stub_package.kept_stub_package(second_course)
    assert second.is_relative_to(second_course) and second.parent.name == first.parent.name
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    match, mismatch, errors = filecmp.cmpfiles(first, second, files, shallow=False)
    assert not mismatch and not errors and len(match) == len(files) > 10
    for path in [second.parent, *second.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        needed = 0o005 if path.is_dir() else 0o004  # read (and enter, for a folder)
        assert (mode & needed) == needed, f"{path} is not readable by others ({oct(mode)})"
