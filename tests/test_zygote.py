"""Kernels forked from the zygote (autograde/kernel/zygote.py, inside/zygote_server.py): each one as closed in as a kernel
started on its own (its uid, no capability, its processes, its folders, its cgroups, no network), nothing
shared between two of them, and every process of a kernel gone when the grader lets it go."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from course import _template_course

from autograde.kernel import kernel_client, sandbox, zygote

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sandbox.sandbox_available()[0], reason="the zygote serves a root grader with bubblewrap"
)

INSIDE = r"""
import os, socket, sys
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print(repr({
    "ids": (os.getresuid(), os.getresgid(), os.getgroups()),
    "caps": [status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
    "no_new_privs": status["NoNewPrivs"].strip(),
    "pids": pids, "me": os.getpid(), "parent": os.getppid(),
    "owners": sorted({os.stat(f"/proc/{p}").st_uid for p in pids}),
    "interfaces": [name for _, name in socket.if_nameindex()],
    "sockets": os.listdir(os.path.dirname(os.environ["JUPYTER_RUNTIME_DIR"])),
    "tmp": sorted(os.listdir("/tmp")) + sorted(os.listdir("/dev/shm")) + sorted(os.listdir(".")),
    "random": __import__("numpy").random.rand(),
}))
"""


def _inside(kernel: kernel_client.StudentKernel, code: str = INSIDE):
    run = kernel.run(code, 60)
    assert run.error is None, run.outputs
    return ast.literal_eval(run.stdout.strip().splitlines()[-1])


def _cgroup_pids(manager) -> set[int]:
    pids: set[int] = set()
    for procs in manager.cgroups.procs:
        pids |= {int(p) for p in procs.read_text().split()}
    return pids


def test_a_forked_kernel_is_as_closed_in_as_one_started_on_its_own():
    first, second = kernel_client.StudentKernel(1024, 300), kernel_client.StudentKernel(1024, 300)
    try:
        assert first.manager.forked and second.manager.forked, "root with bubblewrap: kernels come from the zygote"
        mine = _inside(first)
        uid = first.manager.uid
        assert mine["ids"] == ((uid,) * 3, (uid,) * 3, []), "its own uid and gid, no other group"
        assert mine["caps"] == ["0000000000000000"] * 5 and mine["no_new_privs"] == "1", "no capability, no way back"
        assert mine["me"] == 2 and mine["parent"] == 1 and mine["owners"] == [uid], (
            "its own pid namespace: only its init and itself (and what it starts), all of its uid"
        )
        assert mine["interfaces"] == ["lo"], "no network"
        assert mine["sockets"] == [first.manager.runtime.name], "of all the kernels' socket folders, only its own"
        assert mine["tmp"] == [".ipython"], "fresh /tmp, /dev/shm and scratch folder"

        _inside(first, "open('/tmp/mine', 'w').write('x'); open('/dev/shm/mine', 'w').write('x'); print(1)")
        other = _inside(second)
        assert other["ids"][0][0] != uid and other["tmp"] == [".ipython"], "nothing of the other kernel's"
        assert other["random"] != mine["random"], "each kernel draws its own random numbers"
        assert _cgroup_pids(first.manager), "the kernel runs in the cgroups made for it"
    finally:
        first.shutdown()
        second.shutdown()


def test_every_process_of_a_kernel_ends_with_it():
    kernel = kernel_client.StudentKernel(1024, 300)
    manager = kernel.manager
    try:
        _inside(
            kernel,
            "import subprocess\n"
            "subprocess.Popen(['sleep', '600'], start_new_session=True)\n"  # a daemon of the student's
            "subprocess.Popen(['sh', '-c', 'sleep 600 & exit 0'])\n"  # an orphan, adopted by init
            "print(1)",
        )
        alive = _cgroup_pids(manager)
        assert len(alive) >= 5, f"keeper, init, kernel and two sleeps: {alive}"
        process = manager.provisioner.process
        assert process.pid in alive, "the keeper's pid, as the grader sees it"
    finally:
        kernel.shutdown()
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in alive) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in alive if Path(f"/proc/{pid}").exists()], "a process of the kernel outlived it"


def test_a_kernel_that_exits_is_seen_to_exit_with_its_code():
    kernel = kernel_client.StudentKernel(1024, 300)
    try:
        run = kernel.run("import os; os._exit(3)", 30)
        assert run.error == "KernelDied"
        assert kernel.manager.provisioner.process.poll() == 3
        assert not kernel.manager.is_alive()
    finally:
        kernel.shutdown()


def test_a_dead_zygote_is_started_again_and_takes_its_kernels_with_it():
    kernel = kernel_client.StudentKernel(1024, 300)
    try:
        process = kernel.manager.provisioner.process
        keeper = process.pid
        running = zygote.Zygote.for_package(kernel.manager.package, kernel.manager.runtime.parent)
        running.process.kill()
        running.process.wait()
        assert process.wait(timeout=10) is not None, "its kernels end with it"
        deadline = time.monotonic() + 10
        while Path(f"/proc/{keeper}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{keeper}").exists(), "the keeper ended too"
    finally:
        kernel.shutdown()
    again = kernel_client.StudentKernel(1024, 300)
    try:
        assert _inside(again)["ids"][0][0] == again.manager.uid, "a new zygote serves the next kernel"
        assert zygote.Zygote.for_package(again.manager.package, again.manager.runtime.parent) is not running
    finally:
        again.shutdown()


def test_without_the_zygote_a_kernel_started_on_its_own_is_closed_in_as_well(monkeypatch):
    """A grader whose socket folders cannot be under /run (not root, or /run read-only) starts each kernel
    in bubblewrap on its own (sandbox.bwrap_command): the same uid, capabilities, processes and network."""
    monkeypatch.setattr(sandbox, "_runtime_base", lambda: None)
    kernel = kernel_client.StudentKernel(1024, 300)
    try:
        assert not kernel.manager.forked
        found = _inside(kernel)
        uid = kernel.manager.uid
        assert found["ids"] == ((uid,) * 3, (uid,) * 3, [])
        assert found["caps"][:3] + found["caps"][4:] == ["0000000000000000"] * 4 and found["no_new_privs"] == "1"
        assert found["owners"] == [0, uid] and found["me"] != 1, found  # pid 1 is bubblewrap (root), then the kernel
        assert found["interfaces"] == ["lo"]
    finally:
        kernel.shutdown()


SETTINGS = "print(repr((get_ipython().kernel._execute_sleep, __import__('gc').get_freeze_count())))"


@pytest.mark.parametrize("forked", [True, False], ids=["forked", "on its own"])
def test_a_kernel_replies_without_ipykernels_sleep_and_a_forked_one_leaves_the_zygotes_heap_to_itself(
    monkeypatch, forked
):
    """Every grading kernel replies to an execute request without ipykernel's 0.5 ms sleep (KERNEL_OPTIONS); a
    kernel forked from the zygote finds the zygote's objects frozen (gc.freeze after the preload): its
    collections never walk them, so the pages it shares with the zygote stay shared (no copy on write)."""
    if not forked:
        monkeypatch.setattr(sandbox, "_runtime_base", lambda: None)
    kernel = kernel_client.StudentKernel(1024, 300)
    try:
        assert kernel.manager.forked is forked
        sleep, frozen = _inside(kernel, SETTINGS)
        assert sleep == 0, f"the kernel sleeps {sleep} s before each reply"
        if forked:  # numpy, ipykernel and the course package: tens of thousands of objects (44,541 here)
            assert frozen > 10_000, f"only {frozen} objects of the zygote are frozen"
        else:
            assert frozen == 0
    finally:
        kernel.shutdown()


# A module whose namespace is not among the objects gc tracks was made before the zygote froze its heap: by the
# zygote. One the kernel imported after the fork is tracked like anything new.
IMPORTED_SINCE_THE_FORK = (
    "import gc, sys\n"
    "made_here = {id(o) for o in gc.get_objects() if type(o) is dict}\n"
    "print(repr(sorted(name for name, module in list(sys.modules.items())\n"
    "                  if module is not None and id(getattr(module, '__dict__', None)) in made_here)))"
)


def test_a_forked_kernel_imports_nothing_as_it_starts():
    """What every kernel imports as it starts (ipykernel's modules, numpy.random as the kernel reseeds it, ...)
    the zygote imported once: at its first cell a forked kernel has imported no module of its own but the
    ``__main__`` it runs (before: numpy.random and its eleven modules, IPython's logger, ipykernel's debugger,
    secrets, unicodedata, faulthandler, in every kernel: 480 page faults and about 10 ms of CPU each)."""
    kernel = kernel_client.StudentKernel(1024, 300)
    try:
        if not kernel.manager.forked:
            pytest.skip("kernels are forked from the zygote only as root with bubblewrap")
        assert _inside(kernel, IMPORTED_SINCE_THE_FORK) == ["__main__"]
    finally:
        kernel.shutdown()


def test_a_course_under_a_kernels_private_folder_is_refused_with_what_to_do(monkeypatch, tmp_path):
    """A course (or its Python) under /tmp or /dev/shm, which every forked kernel gets empty of its own: no kernel
    could start. The zygote refuses to start, saying where and what to do (each student's note then says it),
    and the instructor's command refuses before anything is graded, in one line, without a traceback."""
    for folder in sandbox.PRIVATE_FOLDERS:
        monkeypatch.setattr(sandbox, "python_paths", lambda folder=folder: [Path(folder) / "clone" / ".venv"])
        with pytest.raises(sandbox.HiddenFromKernels, match=f"under {folder}, .* Move the course and its environment"):
            kernel_client.StudentKernel(1024, 300)
    monkeypatch.undo()
    sandbox.check_kernels_can_see_the_course()  # this course, where it is: nothing to say

    shutil.copytree(_template_course(), tmp_path / "course", symlinks=True)
    moved = "import autograde.kernel.sandbox as s, pathlib, sys; s.REPO = pathlib.Path('/dev/shm/heads-and-masks')\n"
    refused = subprocess.run(
        [sys.executable, "-c", moved + "from autograde.grade import main; sys.exit(main(sys.argv[1:]))"]
        + ["--root", str(tmp_path / "course"), "autograde", "00_start_here", "--workers", "1"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "error: /dev/shm/heads-and-masks is under /dev/shm" in refused.stderr, refused.stderr
    assert "no kernel could find the course" in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
    assert not (tmp_path / "course" / "class" / "results").exists(), "something was graded"


def test_an_environment_made_under_umask_077_is_refused_with_what_to_do(monkeypatch, tmp_path):
    """An instructor whose umask is 077 made the environment before `make env` set its own: it is theirs alone,
    and no kernel, a uid of its own, could start Python in it ("the kernel died before it answered"). Refused
    before anything is graded (grade.py says it in one line), with the command that mends it."""
    environment = tmp_path / "venv"
    numpy = environment / "lib" / "python3.11" / "site-packages" / "numpy" / "__init__.py"
    callers = os.umask(0o077)
    try:
        numpy.parent.mkdir(parents=True)
        numpy.write_text("")
    finally:
        os.umask(callers)
    monkeypatch.setattr(sandbox, "python_paths", lambda: [environment])
    monkeypatch.setattr(sandbox, "kernel_reads", lambda: (numpy,))
    monkeypatch.setattr(sandbox, "PRIVATE_FOLDERS", ("/dev/shm",))  # tmp_path is in /tmp: not this test's matter
    unreadable = r"venv is not readable by other users \(__init__.py: mode 600\)"
    with pytest.raises(sandbox.HiddenFromKernels, match=unreadable) as refused:
        sandbox.check_kernels_can_see_the_course()
    assert f"chmod -R a+rX {environment}, then grade again" in str(refused.value)
    subprocess.run(["chmod", "-R", "a+rX", str(environment)], check=True)  # what it says to do
    sandbox.check_kernels_can_see_the_course()


def test_the_socket_folders_base_has_one_mode_whoever_made_it_first():
    """The folder of the kernels' socket folders is 0755 whether a grading command made it first (it runs under
    umask 077: 0700) or a library caller (0755): what a local user may list does not depend on the order."""
    if os.geteuid() != 0:
        pytest.skip("only root makes the kernels' socket folders under /run")
    base = Path(sandbox._runtime_base())
    os.chmod(base, 0o700)  # as the grading command's umask left it
    assert sandbox._runtime_base() == str(base)
    assert base.stat().st_mode & 0o777 == 0o755, oct(base.stat().st_mode)
