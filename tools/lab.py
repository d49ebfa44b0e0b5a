"""Open the course in JupyterLab (what `make lab` runs).

Your working copies live in ``my-work/`` (ignored by git): the first start copies each student
notebook there, and later starts never overwrite them, so ``git pull`` never touches your answers.

JupyterLab opens ``my-work/00_start_here/00_start_here.ipynb`` with its file browser in ``my-work/``:
once the server is up, that URL is printed last, ready to paste into a browser, and opened in your
browser when this machine has a screen.

The lab is set up for studying on your own (the folder ``tools/lab_config/``, put on
``JUPYTER_CONFIG_PATH``): of nbgrader's JupyterLab tools only the *Validate* button of the notebook
toolbar is kept; the Assignments and Courses tabs (there is no course exchange here) and the
instructor's Formgrader and Create Assignment are left out. The terminals of the lab have the
environment's ``bin/`` on their PATH, so ``nbgrader validate`` works there too.

``--language ru`` (``make lab LANG=ru``; a locale such as ``ru_RU.UTF-8`` does too, so a learner whose system
speaks Russian gets the Russian course): the course's Russian notebooks (``notebooks-ru/``), copied into
``my-work/ru/``, and JupyterLab itself in Russian (its language pack, as the lab's default language: a
language chosen in JupyterLab's Settings menu still wins). A language the course is not built in gives
the English course, with a line that says so and names the languages it is built in (``tools/translations.py``'s
``LANGUAGES``, the one list of them).

``--instructor`` (``make instructor-lab``) starts the instructor's lab instead: every nbgrader tool,
run from ``autograde/`` so that they use the course's configuration (docs/instructors.md). Its
layout (open tabs, the file browser's folder) is kept in ``class/lab-workspaces/``, apart from the
learner's: it never reopens a learner's notebook, nor starts that notebook's kernel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote, urlencode

from translations import LANGUAGES  # the languages the course is built in besides English (tools/, beside us)

REPO = Path(__file__).resolve().parents[1]
WORK = "my-work"
LAB_CONFIG = Path(__file__).resolve().parent / "lab_config"
# the instructor's: nbconvert templates for the formgrader (MathJax from this server, not a CDN)
INSTRUCTOR_DATA = Path(__file__).resolve().parent / "instructor_lab_data"
# The instructor's lab keeps its layout here, apart from the learner's (JupyterLab's workspaces folder, by
# default one per user): sharing it, `make instructor-lab` reopened the learner's last notebook and started
# its kernel. Runtime, never committed.
INSTRUCTOR_WORKSPACES = REPO / "class" / "lab-workspaces"  # in the class's folder (autograde/class_folder.py)


def copy_assignment(source: Path, target: Path) -> None:
    """One assignment's folder copied into the learner's work, its notebooks told of the kernel that runs them
    (so that they open unmodified: autograde/kernel_language.py)."""
    from autograde.kernel_language import tell_notebooks_their_kernel

    shutil.copytree(source, target)
    tell_notebooks_their_kernel(target)


def language_code(requested: str) -> str:
    """The language of ``requested`` ("ru", "ru-RU", a locale such as "ru_RU.UTF-8"): "ru"; "" for nothing."""
    return requested.strip().replace("-", "_").split("_")[0].split(".")[0].lower()


def course_language(requested: str) -> str | None:
    """The language of the course to open for ``requested``: one the course is built in (in ``LANGUAGES``, with
    its ``notebooks-<language>/`` folder), else None: English."""
    code = language_code(requested)
    return code if code in LANGUAGES and (REPO / f"notebooks-{code}").is_dir() else None


# What a locale says when it names no language at all, or English: the English course, without a word about it.
ENGLISH_LOCALES = {"", "en", "c", "posix"}


def unknown_language_note(requested: str) -> str | None:
    """A line for a ``requested`` language the course is not built in (``make lab LANG=de``, or a German
    locale): the course opens in English, and these are the languages there are. None when there is nothing
    to say."""
    if language_code(requested) in ENGLISH_LOCALES or course_language(requested) is not None:
        return None
    there_are = ", ".join(f"{name} (LANG={code})" for code, name in sorted(LANGUAGES.items()))
    return (
        f"The course is not built in the language {requested!r}, so it opens in English (LANG=en). "
        f"Besides English, it is built in: {there_are}."
    )


def work_folder(language: str | None) -> str:
    """Where the learner's copies of a language's notebooks live (English: my-work/ itself)."""
    return WORK if language is None else f"{WORK}/{language}"


def copy_missing_notebooks(work: Path, language: str | None = None) -> list[str]:
    copied = []
    released = REPO / ("notebooks" if language is None else f"notebooks-{language}")
    for assignment in sorted(released.iterdir()):
        if assignment.is_dir() and not (work / assignment.name).exists():
            copy_assignment(assignment, work / assignment.name)
            copied.append(assignment.name)
    return copied


def start_notebook(language: str | None = None) -> str:
    return f"{work_folder(language)}/00_start_here/00_start_here.ipynb"


def start_path(language: str | None = None) -> str:
    """The URL path that opens the first notebook in JupyterLab."""
    return "/lab/tree/" + quote(start_notebook(language))


def lab_environment(environ: dict[str, str], instructor: bool = False, language: str | None = None) -> dict[str, str]:
    """The server's environment, inherited by its kernels and terminals.

    * the environment's ``bin/`` first on PATH: ``nbgrader`` and ``jupyter`` in the lab's terminals
      are the course's, whether or not ``make`` started us (it puts it there; a direct start does not);
    * ``tools/lab_config`` on JUPYTER_CONFIG_PATH: which nbgrader extensions the lab shows, and an
      ``nbgrader_config.py`` for self-study (nbgrader warns at every start without one). The user's
      own ``~/.jupyter`` keeps its priority over it. With a ``language``, ``tools/lab_config_<language>``
      before it: JupyterLab's default display language (``labconfig/default_setting_overrides.json``).
    * the instructor's: ``tools/instructor_lab_data`` first on JUPYTER_PATH: its nbconvert template makes
      the formgrader load MathJax from this server (jupyter-server-mathjax), so math in written answers
      is typeset offline too.
    """
    env = dict(environ)
    bin_dir = str(Path(sys.executable).parent)  # not resolved: a venv's python is a symlink
    env["PATH"] = os.pathsep.join([bin_dir] + [p for p in env.get("PATH", "").split(os.pathsep) if p and p != bin_dir])
    if instructor:
        extra = [p for p in env.get("JUPYTER_PATH", "").split(os.pathsep) if p and p != str(INSTRUCTOR_DATA)]
        env["JUPYTER_PATH"] = os.pathsep.join([str(INSTRUCTOR_DATA)] + extra)
    else:
        extra = [p for p in env.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if p]
        ours = [str(LAB_CONFIG.with_name(f"lab_config_{language}"))] if language else []
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join([*ours, str(LAB_CONFIG), *extra])
    return env


def lab_command(extra: list[str], instructor: bool = False, language: str | None = None) -> list[str]:
    shell = os.environ.get("SHELL") or shutil.which("sh") or "sh"
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={REPO}"]
    if not instructor:
        command += [
            # the file browser starts in my-work/ (solutions/ stays one level up, for when you are stuck)
            f"--ContentsManager.preferred_dir={work_folder(language)}",
            # "/" and the URLs JupyterLab prints open the first notebook, not the Launcher
            f"--LabApp.default_url={start_path(language)}",
        ]
    else:
        command.append(f"--LabApp.workspaces_dir={INSTRUCTOR_WORKSPACES}")
    command += [
        # this script opens the browser, once the server is up, at the URL it prints (see notebook_url)
        "--no-browser",
        # terminals run the shell as it is: a login shell would read /etc/profile, which resets PATH
        "--ServerApp.terminado_settings",
        f"shell_command={json.dumps([shell])}",
        *extra,
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    return command


def has_screen() -> bool:
    """Whether a graphical browser can open here (without a screen, Python would pick a text browser)."""
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def _runtime_dir(env: dict[str, str]) -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    saved = os.environ.get("JUPYTER_RUNTIME_DIR")
    try:
        if "JUPYTER_RUNTIME_DIR" in env:
            os.environ["JUPYTER_RUNTIME_DIR"] = env["JUPYTER_RUNTIME_DIR"]
        return Path(jupyter_runtime_dir())
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_RUNTIME_DIR", None)
        else:
            os.environ["JUPYTER_RUNTIME_DIR"] = saved


def server_info(process: subprocess.Popen, runtime: Path, timeout: float = 180.0) -> dict | None:
    """What the server wrote about itself (url, token) once it is up; None if it stopped first."""
    info_file = runtime / f"jpserver-{process.pid}.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            return json.loads(info_file.read_text())
        except (OSError, ValueError):  # not written yet, or caught mid-write
            time.sleep(0.3)
    return None


def notebook_url(info: dict, instructor: bool = False, language: str | None = None) -> str:
    """The URL that opens the first notebook with the file browser in my-work/ (``file-browser-path``);
    the instructor's: JupyterLab with the file browser in solutions/ (nbgrader's source)."""
    query = {
        "file-browser-path": "solutions" if instructor else work_folder(language),
        **({"token": info["token"]} if info.get("token") else {}),
    }
    path = "/lab" if instructor else start_path(language)
    return info["url"].rstrip("/") + path + "?" + urlencode(query, safe="/")


def open_in_browser(url: str, runtime: Path) -> None:
    """Open ``url`` through a local redirect page, as Jupyter does: the token stays off command lines."""
    import html
    import webbrowser

    page = runtime / f"heads-and-masks-{os.getpid()}-open.html"
    page.write_text(
        f'<!DOCTYPE html><meta http-equiv="refresh" content="0;url={html.escape(url)}">'
        f'<p><a href="{html.escape(url)}">Open JupyterLab</a></p>\n'
    )
    page.chmod(0o600)
    try:
        webbrowser.open(page.as_uri(), new=2)
    except webbrowser.Error:
        print("No web browser found here: open the URL above in one.")


def refuse_a_gradebook_password() -> None:
    """Stop, as the grading commands do, when the gradebook's URL (``make instructor-lab DB=...``) holds a
    password: every user of the machine reads it in the command's line while it runs (autograde/course.py)."""
    from autograde.course import PasswordInURL, configured_gradebook_url, without_password

    try:
        without_password(configured_gradebook_url())
    except PasswordInURL as refused:  # said before the formgrader connects
        raise SystemExit(f"error: {refused}") from None


def main(arguments: list[str]) -> int:
    instructor = "--instructor" in arguments
    if instructor:
        from autograde.grade import move_class_data

        refuse_a_gradebook_password()
        move_class_data(REPO)  # the formgrader reads the class's folder: what an earlier layout kept elsewhere
    extra = [a for a in arguments if a != "--instructor"]
    requested = ""
    if "--language" in extra:  # --language VALUE (make passes $(LANG), which may be empty)
        at = extra.index("--language")
        requested = extra[at + 1] if at + 1 < len(extra) else ""
        del extra[at : at + 2]
    language = None if instructor else course_language(requested)
    note = None if instructor else unknown_language_note(requested)
    if note:
        print(note)
    work = work_folder(language)
    if not instructor:
        copied = copy_missing_notebooks(REPO / work, language)
        if copied:
            print(f"Copied {len(copied)} notebooks into {work}/ (your answers go there): {', '.join(copied)}")
    env = lab_environment(os.environ, instructor, language)
    print("Starting JupyterLab (stop it with Ctrl-C, twice)...", flush=True)
    browser = has_screen() and "--no-browser" not in extra and "--ServerApp.open_browser=False" not in extra
    # Learners: started in my-work/, so a terminal opened from the File menu starts there too (the
    # Launcher's starts in the file browser's folder). Instructors: in autograde/, where nbgrader finds
    # the course's nbgrader_config.py.
    process = subprocess.Popen(
        lab_command(extra, instructor, language), cwd=REPO / ("autograde" if instructor else work), env=env
    )
    try:
        runtime = _runtime_dir(env)
        info = server_info(process, runtime)
        if info:
            url = notebook_url(info, instructor, language)
            what = "the instructor's lab" if instructor else start_notebook(language)
            print(f"\nJupyterLab is running. Open {what} with this URL:\n\n    {url}\n", flush=True)
            if browser:
                open_in_browser(url, runtime)
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:  # JupyterLab handles Ctrl-C itself (it asks for a second one)
                continue
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
