"""The sandbox every grading kernel runs in: what student code can reach, and nothing more.

A student's notebook is code, and grading runs it. The kernel that runs it is started inside
bubblewrap with an **allowlist**, not a blocklist: it sees

* the operating system read-only (``/usr``, ``/etc`` and the merged-usr links), the Python it runs on
  and the course's environment read-only;
* the course package **cut to the notebook's allowlist**: what its own cells use, every graded function a
  function that only raises, nothing that computes a graded answer (``allowlist.py``, made by
  ``stub_package.stub_package``), and the course's ``data/``;
* a private scratch folder as its working directory, a private ``/tmp`` and ``/dev/shm``: small
  tmpfs mounts with a size cap, thrown away with the kernel;
* a private folder for the two unix sockets it talks to the grader through (no network at all: its
  own empty network namespace). The folder is made read-only as soon as the kernel is up (without root,
  where the kernel owns it, its mount in the kernel's view: ``kernel_manager.READ_ONLY_IN_ITS_VIEW``).

Nothing else exists for it: not the repository, the gradebook, the solutions, the exchange, other
submissions, ``/root``, ``/home`` or ``/srv``. It runs

* as a **uid of its own** (no other process on the machine has it), so its process limit and its
  files are its own (only root can switch to it: without root every kernel has the instructor's uid, and
  the view above is all that keeps it from the instructor's files: docs/security.md, Grading without root);
* in its own pid, IPC and UTS namespaces, in a new session, dying with its parent;
* with an **environment built from nothing** (a handful of variables, no secret of the grader's);
* under limits: a memory cgroup that also counts shared memory and tmpfs pages (when the machine
  offers cgroups to root), a pids cgroup, RLIMIT_DATA (an allocation beyond it is a ``MemoryError``
  in the cell rather than a killed kernel), CPU time, file size, no core dumps, one BLAS thread
  (the cgroups: ``resources.py``).

After the kernel the grader reads back nothing it wrote: answers travel as plain data over the
kernel protocol (``kernel_client.py``), and the scratch folder vanishes with its mount.

Where bubblewrap is missing or cannot create namespaces, :func:`sandbox_available` says why; the
kernel then runs unsandboxed (with a clean environment and limits) and every grade says so.

This module says what a kernel sees and whether it can be had here; ``kernel_manager.py`` starts each kernel
with it, on its own (:func:`bwrap_command`) or forked from the zygote (``zygote.py``, with :func:`kernel_view`).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INSIDE = Path(__file__).resolve().parents[1] / "inside"  # what runs inside the sandbox (standard library only)
LAUNCHER = INSIDE / "kernel_launch.py"
LAUNCHER_INSIDE = Path("/opt/heads-and-masks/kernel_launch.py")  # where a sandboxed kernel finds it
CONFINE = INSIDE / "confine.py"  # what the launcher and the zygote import, beside them inside
GRADING_ENV = "HEADS_AND_MASKS_GRADING"  # set in every grading kernel: pictures and widgets stay idle
UNSANDBOXED_ENV = "HEADS_AND_MASKS_UNSANDBOXED"  # "1": grade without bubblewrap (loudly marked)

# Variables a kernel may inherit from the grader, by name: nothing secret, only what makes the
# numerics run correctly on this machine (see the OpenBLAS note in docs/security.md).
PASSED_THROUGH = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "LANG", "TZ")

# One BLAS/OpenMP thread per kernel: parallel grading runs one kernel per core (kernel_launch --threads).
THREAD_LIMITS = {
    name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
}


def sandbox_available() -> tuple[bool, str]:
    """(True, "") when bubblewrap can run a process without network here; else (False, why)."""
    if os.environ.get(UNSANDBOXED_ENV) == "1":
        return False, f"the sandbox was turned off ({UNSANDBOXED_ENV}=1)"
    return _bubblewrap_works()


@functools.cache
def _bubblewrap_works() -> tuple[bool, str]:
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False, "bubblewrap is not installed (Debian package `bubblewrap`)"
    try:
        probe = subprocess.run(
            [
                bwrap,
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--unshare-net",
                "--unshare-pid",
                "--die-with-parent",
                "true",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"bubblewrap failed to start: {error}"
    if probe.returncode != 0:
        return False, f"bubblewrap cannot create namespaces here: {probe.stderr.strip()[:200]}"
    return True, ""


_uids = itertools.count()


def private_uid() -> int:
    """A uid no other process on the machine uses: 100000 + 64 * (our pid) + a counter.

    Only root can switch to it. Every kernel gets its own, so RLIMIT_NPROC (which counts per uid)
    and file ownership are never shared between two students graded at the same time.
    """
    return 100_000 + 64 * os.getpid() + next(_uids) % 64


def python_paths() -> list[Path]:
    """The interpreter and the environment the kernel needs, wherever they live (outermost folders only)."""
    candidates = [
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.exec_prefix),
        Path(os.path.realpath(sys.executable)).parent.parent,
    ]
    candidates = [p.resolve() for p in candidates] + candidates
    unique: list[Path] = []
    for path in candidates:
        if str(path) in ("/", "/usr") or str(path).startswith("/usr/"):
            continue  # already there
        if path not in unique:
            unique.append(path)
    return [p for p in unique if not any(other != p and other in p.parents for other in unique)]


def kernel_environment(runtime: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a grading kernel: built from nothing, nothing of the grader's secrets."""
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "IPYTHONDIR": "/tmp/.ipython",
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "JUPYTER_CONFIG_DIR": "/tmp/.jupyter",
        "JUPYTER_DATA_DIR": "/tmp/.jupyter-data",
        "MPLBACKEND": "Agg",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "LC_ALL": "C.UTF-8",
        GRADING_ENV: "1",
    }
    env.update({name: os.environ[name] for name in PASSED_THROUGH if name in os.environ})
    env.update(extra or {})
    return env


def bwrap_command(
    command: list[str],
    *,
    scratch: str,
    runtime: Path,
    package: Path | None,
    env: dict[str, str],
    uid: int | None,
    scratch_mb: int,
    cpu_seconds: int,
    max_file_mb: int,
    max_processes: int,
) -> list[str]:
    """``command`` wrapped in bubblewrap, limits and a switch to ``uid`` (see the module's docstring)."""
    view = kernel_view(
        scratch=scratch, scratch_mb=scratch_mb, package=package, env=env, binds=[("--bind", runtime, runtime)]
    )
    # bubblewrap's root and its /dev are tmpfs mounts, with the folders on the way to each bind made in the root.
    # Run by root, they are root's; run by an instructor without root, they are the instructor's, so the kernel's
    # (the same uid): it could fill memory through them, beyond every size cap and with no memory cgroup. Made
    # read-only once made (the kernel's own folders, /tmp, /dev/shm and scratch, are mounts of their own).
    # Its /proc too: without root, what the grader measures of a call (MemoryMeter: each process's peak resident
    # set) is in /proc, and a process may reset its own peak there (/proc/self/clear_refs) before it returns.
    view += ["--remount-ro", "/", "--remount-ro", "/dev", "--remount-ro", "/proc"]
    limits = [shutil.which("prlimit"), f"--cpu={cpu_seconds}", f"--fsize={max_file_mb * 2**20}", "--core=0"]
    if max_processes:
        limits.append(f"--nproc={max_processes}")
    drop = []
    if uid is not None:
        drop = [shutil.which("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--"]
    return [*view, "--", *limits, "--", *drop, *command]


# Folders every kernel forked from the zygote gets empty, of its own (zygote_server.private_mounts).
PRIVATE_FOLDERS = ("/tmp", "/dev/shm")


class HiddenFromKernels(RuntimeError):
    """What a grading kernel must see (its Python, the course) lies where every kernel sees an empty folder, or
    is unreadable by the uid of its own it runs as."""


def forked_kernels() -> bool:
    """Whether this process's kernels will be forked from a zygote: a root grader whose bubblewrap works."""
    return os.geteuid() == 0 and sandbox_available()[0] and _runtime_base() is not None


def check_kernels_can_see_the_course() -> None:
    """Raise HiddenFromKernels, saying what to do, when the Python environment or the course itself lies
    under a folder each forked kernel gets empty of its own: every kernel would die as it started, and
    every student would be graded "kernel died" with no word of why."""
    environment = tuple(python_paths())
    hidden = _hidden_from_kernels(environment, REPO) or _unreadable_by_kernels(environment, kernel_reads())
    if hidden:
        raise HiddenFromKernels(hidden)


@functools.cache
def _hidden_from_kernels(environment: tuple[Path, ...], course: Path) -> str | None:
    """Why no forked kernel could see ``environment`` or ``course`` (None: it can), decided once per process."""
    for needed in [*environment, course]:
        for path in {needed, needed.resolve()}:
            for folder in PRIVATE_FOLDERS:
                if path == Path(folder) or Path(folder) in path.parents:
                    what = "the course" if needed == course else "Python"
                    return (  # short: a student's note keeps 200 characters of it
                        f"{needed} is under {folder}, which each grading kernel sees empty: no kernel could find "
                        f"{what}. Move the course and its environment elsewhere (home, /srv, /opt), grade again"
                    )
    return None


def kernel_reads() -> tuple[Path, ...]:
    """Files every kernel reads from its Python: the interpreter (as named, and the file it is), the standard
    library, ipykernel and numpy."""
    import importlib.util

    read = [Path(sys.executable), Path(os.path.realpath(sys.executable)), Path(os.__file__)]
    return (*read, *(Path(importlib.util.find_spec(module).origin) for module in ("ipykernel", "numpy")))


def _unreadable_by_kernels(environment: tuple[Path, ...], read: tuple[Path, ...]) -> str | None:
    """Why a kernel, a uid of its own that only the modes' "others" bits let in, could not ``read`` its Python in
    ``environment`` (None: it can), from those files and the folders down to each (a few dozen stats).
    An environment made under an instructor's umask 077 fails at the first (a walk of all of it, some 90,000
    files, would take seconds)."""
    for file in read:
        around = next((root for root in environment if {root, root.resolve()} & set(file.parents)), None)
        if around is None:  # in /usr: the system's, not ours to judge
            continue
        # the folders from the environment down to the file (those above it are bubblewrap's, 0755)
        folders = [folder for folder in file.parents if {around, around.resolve()} & {folder, *folder.parents}]
        for path, needs in [(file, stat.S_IROTH), *((folder, stat.S_IROTH | stat.S_IXOTH) for folder in folders)]:
            mode = path.stat().st_mode
            if mode & needs != needs:
                return (  # short: a student's note keeps 200 characters of it
                    f"{around} is not readable by other users ({path.name}: mode {stat.S_IMODE(mode):o}), and each "
                    f"grading kernel runs as a user of its own: chmod -R a+rX {around}, then grade again"
                )
    return None


def kernel_view(
    *, scratch: str, scratch_mb: int, package: Path | None, env: dict[str, str], binds: list[tuple[str, Path, Path]]
) -> list[str]:
    """bubblewrap's options for what a kernel sees (the module's docstring): its namespaces, the
    allowlisted files, private tmpfs folders, ``binds`` besides, and nothing but ``env``; the command
    to run goes after them (``--``). Shared by a kernel started on its own and by the zygote
    (``zygote.zygote_command``), whose forks see the same."""
    wrapper = [
        shutil.which("bwrap"),
        "--die-with-parent",
        "--new-session",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--clearenv",
        "--ro-bind",
        "/usr",
        "/usr",
        "--ro-bind",
        "/etc",
        "/etc",
    ]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        path = Path(top)
        if path.is_symlink():
            wrapper += ["--symlink", os.readlink(path), top]
        elif path.is_dir():
            wrapper += ["--ro-bind", top, top]
    wrapper += ["--proc", "/proc", "--dev", "/dev"]
    for folder in ("/tmp", "/dev/shm", scratch):
        wrapper += ["--size", str(scratch_mb * 2**20), "--perms", "1777", "--tmpfs", folder]
    allowed: list[tuple[str, Path, Path]] = []
    for path in python_paths():
        if path.exists():
            allowed.append(("--ro-bind", path, path))
    allowed.append(("--ro-bind", LAUNCHER, LAUNCHER_INSIDE))
    allowed.append(("--ro-bind", CONFINE, LAUNCHER_INSIDE.with_name(CONFINE.name)))
    if (REPO / "data").is_dir():
        allowed.append(("--ro-bind", REPO / "data", REPO / "data"))
    if package is not None:  # where the installed package is looked for (an editable install points here)
        allowed.append(("--ro-bind", package, REPO / "heads_and_masks"))
    made: set[Path] = {Path("/"), Path("/usr"), Path("/etc"), Path("/tmp"), Path(scratch)}
    for option, source, target in [*allowed, *binds]:
        for ancestor in reversed(target.parents):  # the way down to it, traversable by the kernel's uid
            if ancestor not in made:
                wrapper += ["--perms", "0755", "--dir", str(ancestor)]
                made.add(ancestor)
        wrapper += [option, str(source), str(target)]
        made.add(target)
    for name, value in env.items():
        wrapper += ["--setenv", name, value]
    return [*wrapper, "--chdir", scratch]


RUN_SOCKETS_ENV = "HEADS_AND_MASKS_RUN_SOCKETS"


def _runtime_base() -> str | None:
    """Where the kernels' socket folders go: a root-owned folder of their own when we are root (in it, the
    folder of the grading run this worker grades for, which the run removes as it ends)."""
    if os.geteuid() == 0:
        base = Path("/run/heads-and-masks")
        with contextlib.suppress(OSError):
            base.mkdir(mode=0o755, parents=True, exist_ok=True)
            if base.is_dir() and not base.is_symlink():
                # 0755 whoever made it first: the grading command runs under umask 077 and made it 0700, a
                # library caller 0755. Each socket folder in it is the boundary (sealed: root and its kernel only).
                found = base.stat()
                if found.st_uid == 0 and found.st_mode & 0o777 != 0o755:
                    os.chmod(base, 0o755)
                run = os.environ.get(RUN_SOCKETS_ENV, "")  # a grading run's own folder in it (run_folder.py)
                return run if os.path.dirname(run) == str(base) and os.path.isdir(run) else str(base)
    return None
