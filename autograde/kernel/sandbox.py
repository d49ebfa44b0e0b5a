"""The sandbox every grading kernel runs in: what student code can reach, and nothing more.

A student's notebook is code, and grading runs it. The kernel that runs it is started inside
bubblewrap with an **allowlist**, not a blocklist: it sees

* the operating system read-only (``/usr``, ``/etc`` and the merged-usr links), the Python it runs on
  and the course's environment read-only;
* the course package **cut to the notebook's allowlist**: what its own cells use, every graded function a
  function that only raises, nothing that computes a graded answer (``kernel_package.py``, made by
  ``stub_package.stub_package``), and the course's ``data/``;
* a private scratch folder as its working directory, a private ``/tmp`` and ``/dev/shm``: small
  tmpfs mounts with a size cap, thrown away with the kernel;
* a private folder for the two unix sockets it talks to the grader through (no network at all: its
  own empty network namespace). The folder is made read-only as soon as the kernel is up (without root,
  where the kernel owns it, its mount in the kernel's view: :data:`READ_ONLY_IN_ITS_VIEW`).

Nothing else exists for it: not the repository, the gradebook, the solutions, the exchange, other
submissions, ``/root``, ``/home`` or ``/srv``. It runs

* as a **uid of its own** (no other process on the machine has it), so its process limit and its
  files are its own (only root can switch to it: without root every kernel has the instructor's uid, and
  the view above is all that keeps it from the instructor's files: docs/security.md, Grading without root);
* in its own pid, IPC and UTS namespaces, in a new session, dying with its parent;
* with an **environment built from nothing** (a handful of variables, no secret of the grader's);
* under limits: a memory cgroup that also counts shared memory and tmpfs pages (when the machine
  offers cgroups to root), a pids cgroup, RLIMIT_DATA (an allocation beyond it is a ``MemoryError``
  in the cell rather than a killed kernel), CPU time, file size, no core dumps, one BLAS thread.

After the kernel the grader reads back nothing it wrote: answers travel as plain data over the
kernel protocol (``kernel_client.py``), and the scratch folder vanishes with its mount.

Where bubblewrap is missing or cannot create namespaces, :func:`sandbox_available` says why; the
kernel then runs unsandboxed (with a clean environment and limits) and every grade says so.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import KernelManager

REPO = Path(__file__).resolve().parents[1]
INSIDE = Path(__file__).resolve().with_name("inside")  # what runs inside the sandbox (standard library only)
LAUNCHER = INSIDE / "kernel_launch.py"
LAUNCHER_INSIDE = Path("/opt/heads-and-masks/kernel_launch.py")  # where a sandboxed kernel finds it
CONFINE = INSIDE / "confine.py"  # what the launcher and the zygote import, beside them inside
CGROUP_ROOT = Path("/sys/fs/cgroup")
GRADING_ENV = "HEADS_AND_MASKS_GRADING"  # set in every grading kernel: pictures and widgets stay idle
UNSANDBOXED_ENV = "HEADS_AND_MASKS_UNSANDBOXED"  # "1": grade without bubblewrap (loudly marked)

# Variables a kernel may inherit from the grader, by name: nothing secret, only what makes the
# numerics run correctly on this machine (see the OpenBLAS note in docs/security.md).
PASSED_THROUGH = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "LANG", "TZ")

# One BLAS/OpenMP thread per kernel: parallel grading runs one kernel per core (kernel_launch --threads).
THREAD_LIMITS = {
    name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
}


# IPython options of every grading kernel. The judge keeps only an error's name and message (never its
# traceback), so IPython need not build one: a context traceback costs 0.1-0.5 s per failing cell, and
# a graded notebook has many (its demonstrations call the course's reference, absent from the stub).
# No input history either: the judge's calls are not the student's work, and nothing reads it.
# Nor the 0.5 ms ipykernel sleeps before every execute reply, for clients that take the reply as the end
# of a cell's outputs: the judge reads them until the idle status, which the kernel publishes after them
# on the same socket (a notebook's cells and the judge's calls: 30-250 execute requests per submission).
KERNEL_OPTIONS = (
    "--InteractiveShell.xmode=Minimal",
    "--HistoryManager.enabled=False",
    "--Kernel._execute_sleep=0",
)


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


class Cgroups:
    """A memory and a pids cgroup (v1 or v2) for one kernel, when root may create them here."""

    def __init__(self, name: str, memory_bytes: int, max_pids: int):
        self.folders: list[Path] = []
        self.procs: list[Path] = []
        self.caps_processes = False  # a pids.max was set: the pids cgroup caps the processes, not RLIMIT_NPROC
        if os.geteuid() != 0:
            return
        v2 = (CGROUP_ROOT / "cgroup.controllers").exists()
        wanted = (
            [("", {"memory.max": memory_bytes, "pids.max": max_pids, "memory.swap.max": 0})]
            if v2
            else [
                ("memory", {"memory.limit_in_bytes": memory_bytes}),
                ("pids", {"pids.max": max_pids}),
                ("cpu", {"cpu.shares": 1024}),  # one share per kernel, however many processes it starts
            ]
        )
        for controller, limits in wanted:
            folder = CGROUP_ROOT / controller / "heads-and-masks" / name
            try:
                folder.parent.mkdir(parents=True, exist_ok=True)
                if v2:  # a v2 cgroup has only the controllers its parent enables for its children
                    for parent in (CGROUP_ROOT, folder.parent):
                        for enable in ("+memory", "+pids", "+cpu"):  # cpu: one share per kernel
                            with contextlib.suppress(OSError):
                                (parent / "cgroup.subtree_control").write_text(enable)
                folder.mkdir(exist_ok=True)
                if controller == "cpu":  # the kernels together weigh one core each, as when each was on its own
                    with contextlib.suppress(OSError):
                        (folder.parent / "cpu.shares").write_text(str(1024 * (os.cpu_count() or 1)))
                for key, value in limits.items():
                    with contextlib.suppress(OSError):
                        (folder / key).write_text(str(value))
                        self.caps_processes |= key == "pids.max"
            except OSError:
                continue
            self.folders.append(folder)
            self.procs.append(folder / "cgroup.procs")

    def _memory_file(self, *names: str) -> Path | None:
        for folder in self.folders:
            for name in names:
                if (folder / name).exists():
                    return folder / name
        return None

    def memory_files(self) -> tuple[Path, Path] | None:
        """The files of the memory cgroup that say the memory in use now and its peak, if there is one."""
        usage = self._memory_file("memory.usage_in_bytes", "memory.current")
        peak = self._memory_file("memory.max_usage_in_bytes", "memory.peak")
        return (usage, peak) if usage is not None and peak is not None else None

    def enter_command(self) -> list[str]:
        """A prefix that moves the starting process into the cgroups before it execs the rest."""
        if not self.procs:
            return []
        script = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 97; shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *map(str, self.procs), "--"]

    def remove(self) -> None:
        for folder in self.folders:
            for _ in range(20):
                with contextlib.suppress(OSError):
                    for pid in (folder / "cgroup.procs").read_text().split():
                        with contextlib.suppress(OSError):
                            os.kill(int(pid), signal.SIGKILL)
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


class MemoryMeter:
    """How far a kernel's memory grows during one call, read by the grader from outside the kernel.

    Nothing of it runs in the kernel's process, so code there cannot tell whether (or when) it is measured,
    nor stop or reset the measurement (a kernel's /proc is read-only to it). With a memory cgroup: its usage
    when the call starts and its peak since (every process of the kernel, its shared memory and tmpfs pages
    included). Without one (a
    grader that is not root): the peak resident set of each of the kernel's processes (``VmHWM``, reset
    through ``/proc/<pid>/clear_refs``) against its resident set when the call starts. What it cannot see
    (memory already held before the call began, or given back as it starts) is in docs/security.md.
    """

    def __init__(self, cgroups: Cgroups | None, pid: int | None):
        self.files = cgroups.memory_files() if cgroups is not None else None
        self.pid = pid
        self.start_usage: int | None = None
        self.peak_file = None  # cgroup v2: a reset holds for reads through the same open file only
        self.start_resident: dict[int, int] = {}

    def start(self) -> None:
        """The call begins now: from here on, the peak counts."""
        self.start_usage = None
        if self.files is not None:
            usage, peak = self.files
            with contextlib.suppress(OSError, ValueError):
                if peak.name == "memory.peak":
                    if self.peak_file is None:
                        self.peak_file = open(peak, "r+")  # noqa: SIM115 - kept open: v2 resets per open file
                    self.peak_file.seek(0)
                    self.peak_file.write("reset\n")
                    self.peak_file.flush()
                else:
                    peak.write_text("0")  # cgroup v1: the peak starts again from the usage now
                self.start_usage = int(usage.read_text())
                return
        self.start_resident = {}
        for pid in self._processes():
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/clear_refs").write_text("5")  # the peak resident set starts again here
                self.start_resident[pid] = _resident_kib(pid, "VmRSS") * 1024

    def growth(self) -> int | None:
        """The most memory the kernel held beyond what it held at :meth:`start` (bytes), or None if unknown."""
        if self.start_usage is not None:
            try:
                if self.peak_file is not None:
                    self.peak_file.seek(0)
                    peak = int(self.peak_file.read())
                else:
                    peak = int(self.files[1].read_text())
            except (OSError, ValueError):
                return None
            return max(0, peak - self.start_usage)
        if not self.start_resident:
            return None
        grown = 0
        for pid in self._processes():  # a process started during the call held nothing at its start
            try:
                grown += max(0, _resident_kib(pid, "VmHWM") * 1024 - self.start_resident.get(pid, 0))
            except (OSError, ValueError):
                return None  # a process of the kernel hid its memory (made itself unreadable): not measured
        return grown

    def _processes(self) -> list[int]:
        """The kernel's process and every process under it (through ``/proc/<pid>/task/<tid>/children``)."""
        found, todo = [], [self.pid] if self.pid else []
        while todo:
            pid = todo.pop()
            found.append(pid)
            for children in Path(f"/proc/{pid}/task").glob("*/children"):
                with contextlib.suppress(OSError, ValueError):
                    todo.extend(int(child) for child in children.read_text().split())
        return found

    def close(self) -> None:
        if self.peak_file is not None:
            with contextlib.suppress(OSError):
                self.peak_file.close()
            self.peak_file = None


def _resident_kib(pid: int, field: str) -> int:
    """A memory field of ``/proc/<pid>/status`` in KiB. A process that has ended but is not yet reaped (a zombie)
    has no memory fields: it holds no memory, so 0. A process that cannot be read raises OSError."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


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


# Run by the grader in a process of its own (``seal``, without root; ``python -c``, arguments: a pid of the kernel's
# sandbox and a folder). bubblewrap made the sandbox's mounts in a user namespace of our uid, then moved the kernel
# into a second one, nested in it, where the kernel holds no capability. This process enters the first (the owner of
# the kernel's mount namespace, in which our uid holds every capability, as its creator) and the mount namespace,
# and makes the folder a read-only mount there: the kernel can then neither write into it, nor chmod it, nor mount it
# again. One thread (as ``setns`` into a user namespace needs); nothing is imported after the switch.
READ_ONLY_IN_ITS_VIEW = """
import ctypes, fcntl, os, sys
libc = ctypes.CDLL(None, use_errno=True)
NS_GET_USERNS, CLONE_NEWUSER, CLONE_NEWNS = 0xB701, 0x10000000, 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 1, 2, 4, 32, 4096
mounts = os.open("/proc/%s/ns/mnt" % sys.argv[1], os.O_RDONLY)
for namespace, kind in ((fcntl.ioctl(mounts, NS_GET_USERNS), CLONE_NEWUSER), (mounts, CLONE_NEWNS)):
    if libc.setns(namespace, kind) != 0:
        raise OSError(ctypes.get_errno(), "setns: " + os.strerror(ctypes.get_errno()))
flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
if libc.mount(None, sys.argv[2].encode(), None, flags, None) != 0:
    raise OSError(ctypes.get_errno(), "remount: " + os.strerror(ctypes.get_errno()))
"""

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


def zygote_module(command: list[str]) -> str | None:
    """MODULE when ``command`` is ``<this python> -m MODULE ...``, what the zygote can run."""
    if len(command) >= 3 and command[1] == "-m" and os.path.realpath(command[0]) == os.path.realpath(sys.executable):
        return command[2]
    return None


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


class SandboxedKernelManager(KernelManager):
    """A kernel manager whose kernel runs in the sandbox described above (or, where bubblewrap is not
    available, unsandboxed with a clean environment and the same limits, loudly marked by the caller).

    Set the limits before ``start_kernel``; ``package`` is the stub package to show as the course's.
    """

    memory_mb = 2048
    address_space_mb = 0  # RLIMIT_AS (0: none): set where grading relies on what a kernel cannot hold
    cgroup_mb = 0  # as root, the memory cgroup's limit (0: memory_mb + 256, room for shared memory and tmpfs)
    cpu_seconds = 900
    max_processes = 64
    max_file_mb = 64
    scratch_mb = 256
    package: Path | None = None
    extra_env: dict[str, str] | None = None
    preload: tuple[str, ...] = ()  # modules the kernel imports before it listens (kernel_launch.py --preload)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.sandboxed, self.why_not = sandbox_available()
        # Root with a working bubblewrap: the kernel is forked from this process's zygote (zygote.py),
        # with numpy, the package and ipykernel imported already; else it starts on its own.
        self.forked = forked_kernels()
        if self.forked:  # before anything is made: a kernel forked blind would die as it starts, unexplained
            check_kernels_can_see_the_course()
        # Sockets and the connection file live in a folder of their own, made read-only once the
        # kernel is up: the kernel can neither leave files there nor replace a socket. Until then only
        # the grader and the kernel's own uid may write there (root's, its group the kernel's: mode 1770;
        # as ourselves: 0700), never another user: a file of theirs in place of a socket the kernel is
        # about to bind would kill a classmate's kernel.
        self.uid = private_uid() if os.geteuid() == 0 else None
        self.runtime = Path(tempfile.mkdtemp(prefix="kernel-", dir=_runtime_base()))
        if self.uid is not None:
            os.chown(self.runtime, 0, self.uid)
            os.chmod(self.runtime, 0o1770)
        self.transport = "ipc"
        self.ip = str(self.runtime / "kernel")
        self.connection_file = str(self.runtime / "connection.json")
        self.cgroups: Cgroups | None = None
        self.scratch = "/scratch" if self.sandboxed else tempfile.mkdtemp(prefix="hm-scratch-")
        self._request: dict | None = None

    def format_kernel_cmd(self, extra_arguments=None):
        if self.kernel_spec is not None:  # interrupts by message: signals do not cross the sandbox
            self.kernel_spec.interrupt_mode = "message"
        command = [*super().format_kernel_cmd(extra_arguments), *KERNEL_OPTIONS]
        name = f"kernel-{self.uid or os.getpid()}-{os.urandom(3).hex()}"
        self.cgroups = Cgroups(name, (self.cgroup_mb or self.memory_mb + 256) * 2**20, self.max_processes)
        # Without a memory cgroup the meter reads the kernel's processes at the end of a call (remote_calls.py): a
        # child started and ended within it would go unseen, so the kernel may start none (threads only).
        new_processes = self.cgroups.memory_files() is not None
        launcher = LAUNCHER_INSIDE if self.sandboxed else LAUNCHER
        launch = [
            sys.executable,
            str(launcher),
            f"--memory-mb={self.memory_mb}",
            f"--address-space-mb={self.address_space_mb}",
            "--threads=1",
            *([] if new_processes else ["--no-new-processes"]),
            *([f"--preload={','.join(self.preload)}", "--no-debugger"] if self.preload else []),
            "--",
        ]
        if self.uid is not None:
            os.chown(self.connection_file, self.uid, self.uid)
        os.chmod(self.connection_file, 0o400 if self.uid is not None else 0o600)
        env = kernel_environment(self.runtime, self.extra_env)
        if self.forked and zygote_module(command) == "ipykernel_launcher":
            self._request = {
                "uid": self.uid,
                "runtime": str(self.runtime),
                "scratch": self.scratch,
                "scratch_mb": self.scratch_mb,
                "memory_mb": self.memory_mb,
                "address_space_mb": self.address_space_mb,
                "cpu_seconds": self.cpu_seconds,
                "max_file_mb": self.max_file_mb,
                "max_processes": 0 if self.cgroups.caps_processes else self.max_processes,
                "new_processes": new_processes,
                "env": {**env, **THREAD_LIMITS},
                "module": command[2],
                "args": command[3:],
            }
            return command
        if not self.sandboxed:
            self._unsandboxed_env = env
            return [
                *self.cgroups.enter_command(),
                shutil.which("prlimit"),
                f"--cpu={self.cpu_seconds}",
                f"--fsize={self.max_file_mb * 2**20}",
                "--core=0",
                "--",
                *launch,
                *command,
            ]
        wrapped = bwrap_command(
            [*launch, *command],
            scratch=self.scratch,
            runtime=self.runtime,
            package=self.package,
            env=env,
            uid=self.uid,
            scratch_mb=self.scratch_mb,
            cpu_seconds=self.cpu_seconds,
            max_file_mb=self.max_file_mb,
            max_processes=0 if self.cgroups.caps_processes else self.max_processes,
        )
        return [*self.cgroups.enter_command(), *wrapped]

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        if self._request is not None:
            from autograde.zygote import Zygote

            zygote = Zygote.for_package(self.package, self.runtime.parent)
            process = zygote.spawn(self._request, self.cgroups.procs)
            # What LocalProvisioner.launch_kernel keeps of a Popen: jupyter_client polls, waits for and
            # kills the kernel through it (interrupts go by message).
            self.provisioner.process, self.provisioner.pid, self.provisioner.pgid = process, None, None
            self._reconcile_connection_info(self.provisioner.connection_info)
            return
        # The kernel's environment is the one built above, never the grader's (bubblewrap clears
        # its own; the few processes in front of it get no more than a PATH).
        kw["env"] = getattr(self, "_unsandboxed_env", None) or {"PATH": "/usr/bin:/bin"}
        kw["cwd"] = self.scratch if not self.sandboxed else "/"
        return await super()._async_launch_kernel(kernel_cmd, **kw)

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # After its SIGKILL a kernel is gone within milliseconds: poll at 10 ms, not jupyter_client's
        # 100 ms, which every submission would otherwise wait out once.
        await super()._async_wait(pollinterval=min(pollinterval, 0.01))

    def memory_meter(self) -> MemoryMeter:
        """A meter of this kernel's memory, read from outside it (its cgroup, or its processes in /proc)."""
        process = getattr(self.provisioner, "process", None) if self.provisioner is not None else None
        return MemoryMeter(self.cgroups, getattr(process, "pid", None))

    def seal(self) -> None:
        """Once the kernel is connected: its socket folder becomes read-only to it."""
        os.chmod(self.runtime, 0o550 if self.uid is not None else 0o500)
        if self.uid is None and self.sandboxed and not self.forked:
            # Without root the kernel has our uid: it owns the folder and could make it writable again, and the
            # folder is on our disk, not a capped tmpfs (a kernel wrote 720 MiB there). Its mount in the kernel's
            # view is made read-only instead, which the kernel cannot undo.
            self._read_only_in_its_view(self.runtime)

    def _read_only_in_its_view(self, folder: Path) -> None:
        process = getattr(self.provisioner, "process", None)
        try:
            children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        except (AttributeError, OSError):
            children = []
        if not children:
            raise RuntimeError("the kernel's sandbox ended before its socket folder could be sealed")
        done = subprocess.run(
            [sys.executable, "-c", READ_ONLY_IN_ITS_VIEW, children[0], str(folder)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or ["(nothing said)"])[-1]
            raise RuntimeError(f"the kernel's socket folder could not be made read-only in its view: {said[:200]}")

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart)
        if restart:
            return
        if self.cgroups is not None:
            self.cgroups.remove()
        with contextlib.suppress(OSError):
            os.chmod(self.runtime, 0o700)
        shutil.rmtree(self.runtime, ignore_errors=True)
        if not self.sandboxed:
            shutil.rmtree(self.scratch, ignore_errors=True)
