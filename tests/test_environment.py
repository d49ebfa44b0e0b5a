"""The set-up: pip (pyproject.toml) and conda (environment.yml) pin the same versions."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
import tomllib

from course import REPO


def _pyproject_pins() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + [r for group in project["optional-dependencies"].values() for r in group]
    pins = {}
    for requirement in requirements:
        name, _, version = requirement.partition("==")
        assert version, f"pyproject.toml: {requirement} is not pinned with =="
        pins[name.lower().replace("_", "-")] = version
    return pins


def _environment_pins() -> dict[str, str]:
    pins = {}
    for line in (REPO / "environment.yml").read_text().splitlines():
        match = re.match(r"^\s*-\s*([A-Za-z0-9_.-]+)==([^\s#]+)", line)
        if match:
            pins[match[1].lower().replace("_", "-")] = match[2]
    return pins


def test_environment_yml_pins_what_pyproject_pins():
    assert _environment_pins() == _pyproject_pins()


def test_environment_yml_installs_the_package_and_python_311():
    text = (REPO / "environment.yml").read_text()
    assert re.search(r"^\s*-\s*python=3\.11\s*$", text, re.M), "environment.yml: python=3.11 (check_python.py)"
    assert re.search(r"^\s*-\s*-e \.\s*$", text, re.M)


def test_the_python_range_is_said_the_same_everywhere():
    """make env's check (tools/check_python.py), pyproject.toml's requires-python and the README name one range."""
    import check_python

    oldest = ".".join(map(str, check_python.OLDEST))
    newest_minor = check_python.NEWEST_MINOR
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == f">={oldest},<{newest_minor[0]}.{newest_minor[1] + 1}", requires
    assert check_python.NEEDED in (REPO / "README.md").read_text(), f"README.md does not say {check_python.NEEDED!r}"


def _locked() -> dict[str, str]:
    locked = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            locked[re.sub(r"[-_.]+", "-", name.lower())] = version.strip()
    return locked


def test_every_locked_package_admits_every_python_of_the_range():
    """Each pinned package's Requires-Python (read from the installed copy, which must be the locked version)
    admits the oldest and the newest Python of the range: soupsieve 4.1.3 needs 3.11.5, and Debian 12's own
    python3 is 3.11.2 (pip then stops with "ResolutionImpossible" about nbconvert). The lock serves two
    environments: this one (make env) and the class's hub/env (make hub-env: JupyterHub and what it needs),
    read where it has been built (CI builds it)."""
    import importlib.metadata
    import os

    import check_python
    from packaging.specifiers import SpecifierSet

    hub_packages = sorted((REPO / "hub" / "env" / "lib").glob("python3.*/site-packages"))
    hub_built = (REPO / "hub" / "env" / ".ready").exists() and bool(hub_packages)
    assert hub_built or not os.environ.get("CI"), "CI builds hub/env (make hub-env) before the tests: it is missing"
    installed = {}
    # The first copy found wins, as for an import: this environment's site-packages before hub/env's, and before
    # the copies setuptools vendors (it puts setuptools/_vendor, with their dist-info, at the end of sys.path).
    for place in [None] + ([str(p) for p in hub_packages] if hub_built else []):
        found = importlib.metadata.distributions(path=[place]) if place else importlib.metadata.distributions()
        for distribution in found:
            installed.setdefault(re.sub(r"[-_.]+", "-", distribution.metadata["Name"].lower()), distribution)

    ends = [".".join(map(str, check_python.OLDEST)), ".".join(map(str, check_python.NEWEST_MINOR)) + ".99"]
    stale, excluded, nowhere = {}, {}, []
    for name, version in sorted(_locked().items()):
        if name not in installed:
            nowhere.append(name)
            continue
        if installed[name].version != version:
            stale[name] = (version, installed[name].version)
            continue
        requires = installed[name].metadata.get("Requires-Python") or ""
        refused = [python for python in ends if python not in SpecifierSet(requires)]
        if refused:
            excluded[f"{name}=={version}"] = (requires, refused)
    assert not stale, f"this environment is not the lock's (run make env): (locked, installed) {stale}"
    assert not excluded, f"pinned packages that refuse a Python of the range (Requires-Python, refused): {excluded}"
    if hub_built:  # (without hub/env, the hub's own packages are not here to read)
        assert not nowhere, (
            f"locked, but installed by neither make env nor make hub-env (a stale lock line?): {nowhere}"
        )


def test_lock_file_agrees_with_the_pins():
    locked = _locked()
    for name, version in _pyproject_pins().items():
        assert locked.get(name) == version, f"requirements.lock has {name}=={locked.get(name)}, pyproject {version}"


# Imported only where installed, and said so where imported.
OPTIONAL_IMPORTS = {"torch"}  # heads_and_masks.benchmarks: PyTorch's SDPA as a yardstick, when it is there


def test_every_imported_package_is_declared():
    """Each third-party module that the package, the grader, the tools or the tests import comes from a
    distribution pinned in pyproject.toml (not merely pulled in by another one)."""
    import ast
    import importlib.metadata
    import sys

    # (tools/hub.py imports hub/lms_login.py by its name, from the hub's folder)
    local = {p.stem for folder in ("tests", "tests/browser", "tools", "hub") for p in (REPO / folder).glob("*.py")}
    local |= {"heads_and_masks", "autograde", "catalog"}
    # the scripts that run inside the sandbox (kernel_launch.py, zygote_server.py) import a sibling by its own name
    local |= {p.stem for p in (REPO / "autograde" / "inside").glob("*.py")}
    imported: dict[str, str] = {}
    for folder in ("heads_and_masks", "autograde", "tools", "tests", "authoring"):
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module]
                    if isinstance(node, ast.ImportFrom) and node.level == 0
                    else []
                )
                for name in names:
                    imported.setdefault(name.split(".")[0], str(path.relative_to(REPO)))
    third_party = {
        m: where
        for m, where in imported.items()
        if m not in sys.stdlib_module_names and m not in local and m not in OPTIONAL_IMPORTS
    }
    distributions = importlib.metadata.packages_distributions()
    declared = set(_pyproject_pins())
    undeclared = {}
    for module, where in sorted(third_party.items()):
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [])}
        if not names & declared:
            undeclared[module] = (sorted(names), where)
    assert not undeclared, (
        f"imported but not pinned in pyproject.toml (module: (distribution, first importer)): {undeclared}"
    )


@functools.cache
def _imported_with_nbgrader() -> frozenset[str]:
    """The modules a fresh interpreter has loaded once it imported nbgrader's converters (as the grader, its
    workers' fork server and every nbgrader command do), probed once for the tests below."""
    probe = "import sys, nbgrader.converters; print(' '.join(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    return frozenset(loaded)


def test_nbformat_imports_no_grammar_compiler():
    """Every process that reads a notebook imports jsonschema (through nbformat): the grader, its workers'
    fork server, each nbgrader command, the lab's server. jsonschema 4.25+ then imports rfc3987-syntax, which
    builds some 35 Earley parsers with lark as it is imported (1.4-2 s of CPU each time, on this kind of
    machine); the pinned jsonschema does not. Fails if an upgrade brings that import back."""
    loaded = sorted({"rfc3987_syntax", "lark"} & _imported_with_nbgrader())
    assert loaded == [], f"importing nbgrader also imported {loaded}: check the jsonschema pin in pyproject.toml"


def test_nbgrader_imports_no_distribution_scan():
    """nbgrader.utils imports setuptools.archive_util; the setuptools a venv starts with (65.x, from ensurepip)
    then imports pkg_resources, which reads the metadata of every installed distribution as it is imported
    (0.1 s more in the grader, its workers' fork server and every nbgrader command). The pinned setuptools
    does not. Fails if the pin is lost or an upgrade brings that import back."""
    assert "pkg_resources" not in _imported_with_nbgrader(), (
        "importing nbgrader also imported pkg_resources: check the setuptools pin in pyproject.toml"
    )
