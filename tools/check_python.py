"""Can this interpreter make the course's environment? `make env` asks before it installs anything.

    python3 tools/check_python.py --venv NAME      before make env creates a venv with NAME (make's PYTHON)
    VENV/bin/python tools/check_python.py --made VENV    an environment that is already there

checks that the interpreter's version is in the course's range and, with --venv, that it can create a
virtual environment with pip in it.

Exits 0, or prints one line that says what is needed, what was found and the ways out, and exits 1 (the line
ends without a full stop: make's error adds one).
It runs on whatever `python3` a learner has, perhaps an old one: only syntax and modules every Python 3 has.
"""

import os
import sys

# The Pythons the pinned packages (requirements.lock) install on and the course is tested with: Debian 12's
# own 3.11.2 is the oldest (soupsieve 3.x needs 3.11.5, so the lock keeps 2.x). pyproject.toml's
# requires-python, environment.yml and README.md say the same (tests/test_environment.py).
OLDEST = (3, 11, 2)
NEWEST_MINOR = (3, 11)
NEEDED = "Python 3.11 (3.11.2 or a later 3.11 release)"


def version_problem(python, version, made=None):
    """The line to print when ``version`` (a tuple) is outside the range, else None. ``made``: the folder of
    an environment that interpreter is already in (then another interpreter needs a new one)."""
    if OLDEST <= tuple(version[:3]) and tuple(version[:2]) <= NEWEST_MINOR:
        return None
    found = ".".join(str(part) for part in version[:3])
    if made and os.path.isdir(os.path.join(made, "conda-meta")):  # an active conda environment, not the course's
        return (
            "Heads & Masks needs %s, but the active conda environment (%s) has Python %s: use the course's "
            "(conda env create -f environment.yml && conda activate heads-and-masks)" % (NEEDED, made, found)
        )
    if made:
        return (
            "Heads & Masks needs %s, but the environment in %s was made with Python %s: make it again with "
            "another interpreter (rm -r %s && make env PYTHON=/path/to/python3.11), or use conda "
            "(conda env create -f environment.yml && conda activate heads-and-masks)" % (NEEDED, made, found, made)
        )
    return (
        "Heads & Masks needs %s, but %s is Python %s: give make another interpreter "
        "(make env PYTHON=/path/to/python3.11), or use conda (conda env create -f environment.yml "
        "&& conda activate heads-and-masks)" % (NEEDED, python, found)
    )


def venv_problem(python, version):
    """The line to print when this interpreter cannot make a virtual environment with pip, else None.

    Debian and Ubuntu split ``ensurepip`` (what puts pip in a new venv) off into the package
    python3.X-venv: without it ``python3 -m venv`` leaves a half-made environment and an error."""
    try:
        import ensurepip  # noqa: F401
        import venv  # noqa: F401
    except ImportError:
        package = "python%d.%d-venv" % tuple(version[:2])
        return (
            "%s cannot create a virtual environment (its ensurepip module is missing): install %s "
            "(Debian, Ubuntu: sudo apt install %s) and run make again, or use conda "
            "(conda env create -f environment.yml && conda activate heads-and-masks)" % (python, package, package)
        )
    return None


def main(arguments):
    made = arguments[arguments.index("--made") + 1] if "--made" in arguments else None
    names = [a for a in arguments if not a.startswith("--") and a != made]
    python = names[0] if names else sys.executable
    problem = version_problem(python, sys.version_info, made)
    if problem is None and "--venv" in arguments:
        problem = venv_problem(python, sys.version_info)
    if problem:
        sys.stderr.write(problem + "\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
