"""The set-up: pip (pyproject.toml) and conda (environment.yml) pin the same versions."""
from __future__ import annotations

import re
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
    assert re.search(r"^\s*-\s*python=3\.1[1-9]", text, re.M)
    assert re.search(r"^\s*-\s*-e \.\s*$", text, re.M)


def test_lock_file_agrees_with_the_pins():
    locked = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if "==" in line:
            name, version = line.split("==")
            locked[name.lower().replace("_", "-")] = version.strip()
    for name, version in _pyproject_pins().items():
        assert locked.get(name) == version, f"requirements.lock has {name}=={locked.get(name)}, pyproject {version}"
