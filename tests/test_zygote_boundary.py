"""The hostile student against kernels forked from the zygote (autograde/kernel/zygote.py, inside/zygote_server.py): what a
kernel leaves behind for the next kernel of its uid, and whether its limits hold on every kind of machine.

Each test is an attack that got through before its fix (docs/security.md, "Attacks tried").
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from autograde.kernel import kernel_client, resources, sandbox, zygote

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sandbox.sandbox_available()[0], reason="the zygote serves a root grader with bubblewrap"
)

# Keys live in the kernel (the operating system's), not in any process: a uid's user keyring, its user session
# keyring and its persistent keyring outlive every process of that uid (until reboot, or 3 days unused).
KEYS = r"""
import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
USER, USER_SESSION = -4, -5
rings = {"user": USER, "user session": USER_SESSION}
persistent = libc.syscall(KEYCTL, 22, ctypes.c_long(-1), ctypes.c_long(USER))  # KEYCTL_GET_PERSISTENT
if persistent > 0:
    rings["persistent"] = persistent
def leave():
    for name, ring in rings.items():
        text = ("left in the " + name + " keyring").encode()
        libc.syscall(ADD_KEY, b"user", b"hm-" + name.encode(), text, len(text), ctypes.c_long(ring))
def find():
    found = []
    for name, ring in rings.items():
        key = libc.syscall(KEYCTL, 10, ctypes.c_long(ring), b"user", b"hm-" + name.encode(), 0)  # KEYCTL_SEARCH
        if key > 0:
            buffer = ctypes.create_string_buffer(200)
            size = libc.syscall(KEYCTL, 11, ctypes.c_long(key), buffer, 200)  # KEYCTL_READ
            found.append(buffer.raw[:max(size, 0)].decode())
    return found
"""


def _last_line(run: kernel_client.CellRun):
    assert run.error is None, run.outputs
    return ast.literal_eval(run.stdout.strip().splitlines()[-1])


def test_a_kernel_leaves_nothing_in_a_keyring_for_the_next_kernel_of_its_uid():
    """A worker gives out kernel uids in a cycle of 64 (``sandbox.private_uid``): the 65th kernel a worker starts
    has the first one's uid. Whatever the first left in the keyrings of its uid, the 65th must not find."""
    first = kernel_client.StudentKernel(512, 120)
    try:
        uid = first.manager.uid
        assert _last_line(first.run(KEYS + "leave(); print(repr(find()))", 60)), "keyrings are there to be used"
    finally:
        first.shutdown()
    for _ in range(63):  # the 63 kernels a worker starts in between
        sandbox.private_uid()
    later = kernel_client.StudentKernel(512, 120)
    try:
        assert later.manager.uid == uid, "the 65th kernel of a worker has the first one's uid"
        assert _last_line(later.run(KEYS + "print(repr(find()))", 60)) == [], (
            "a kernel read what an earlier kernel (another student's) left in the keyrings of their uid"
        )
    finally:
        later.shutdown()


@pytest.mark.parametrize("started", ["forked from the zygote", "on its own"])
def test_a_kernel_cannot_read_the_graders_session_keyring(started, monkeypatch):
    """A login gives the instructor's processes a session keyring (pam_keyinit), where Kerberos tickets
    (``KRB5CCNAME=KEYRING:session:...``), ecryptfs keys or any ``keyctl add ... @s`` live. Every process started
    from that shell holds it (the workers, their zygote, every process forked from it), and whoever holds a keyring
    may read the keys in it: a kernel must not hold it, or its student prints the tickets into their feedback."""
    import ctypes
    import platform

    libc = ctypes.CDLL(None, use_errno=True)
    add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
    assert libc.syscall(keyctl, 1, b"_ses") > 0  # KEYCTL_JOIN_SESSION_KEYRING, as pam_keyinit at login
    secret = b"the instructor's ticket"
    key = libc.syscall(add_key, b"user", b"hm-instructor", secret, len(secret), ctypes.c_long(-3))  # @s
    assert key > 0
    for running in list(zygote.Zygote._running.values()):  # the zygote to come is started from this session
        running.process.kill()
        running.process.wait()
    if started == "on its own":  # what a grader without root gets (kernel_launch.py in bubblewrap)
        monkeypatch.setattr(sandbox, "_runtime_base", lambda: None)
    kernel = kernel_client.StudentKernel(512, 120)
    try:
        assert kernel.manager.forked == (started != "on its own")
        found = _last_line(
            kernel.run(
                KEYS
                + "key = libc.syscall(KEYCTL, 10, ctypes.c_long(-3), b'user', b'hm-instructor', 0)\n"
                + "buffer = ctypes.create_string_buffer(200)\n"
                + "size = libc.syscall(KEYCTL, 11, ctypes.c_long(key), buffer, 200)\n"
                + "print(repr(buffer.raw[: max(size, 0)]))",
                60,
            )
        )
        assert secret not in found, "the kernel read a key of the grader's session keyring"
    finally:
        kernel.shutdown()
        libc.syscall(keyctl, 21, ctypes.c_long(key))  # KEYCTL_INVALIDATE


FORKS = r"""
import os, time
children = []
for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.kill(pid, 9)
for pid in children:
    os.waitpid(pid, 0)
print(len(children))
"""

UNIFIED = Path("/sys/fs/cgroup/unified")  # a cgroup2 hierarchy that no controller was given to (hybrid setup)


@pytest.mark.parametrize("cgroup_root", ["this machine's", "cgroup2 without controllers"])
def test_a_kernel_starts_no_more_processes_than_its_limit_whatever_the_cgroups(cgroup_root, monkeypatch):
    """The process limit is the pids cgroup where there is one, else RLIMIT_NPROC: a kernel whose cgroup folder
    could be made but whose ``pids.max`` could not be written (cgroup v2 where nothing enabled the pids controller
    for ``heads-and-masks``'s children, as on a fresh Debian or Ubuntu) must still be capped."""
    if cgroup_root != "this machine's":
        if not (UNIFIED / "cgroup.controllers").exists():
            pytest.skip("no cgroup2 hierarchy beside the machine's own here")
        monkeypatch.setattr(resources, "CGROUP_ROOT", UNIFIED)
    kernel = kernel_client.StudentKernel(512, 120)
    try:
        assert kernel.manager.cgroups.procs, "the kernel was put in a cgroup"
        started = _last_line(kernel.run(FORKS, 100))
        assert started < kernel.manager.max_processes, f"a kernel started {started} processes"
    finally:
        kernel.shutdown()


BURNERS = r"""
import os
_burners = []
for _ in range(40):  # busy processes, until the kernel ends (pids.max allows them)
    pid = os.fork()
    if pid == 0:
        os.setsid()  # a session of its own: the scheduler's autogroups would otherwise put them all in one
        while True:
            pass
    _burners.append(pid)
print(len(_burners))
"""
PAUSE, RESUME = (
    f"import signal\nfor _pid in _burners: os.kill(_pid, signal.{name})\nprint(1)" for name in ("SIGSTOP", "SIGCONT")
)

WORK = r"""
import time
start = time.monotonic()
total = 0
for i in range(2_000_000):
    total += i
print(time.monotonic() - start)
"""


def test_a_kernel_leaves_a_classmates_kernel_its_share_of_the_cpu():
    """Kernels of two workers run side by side, and a cell's time limit is counted on the clock: a kernel that
    starts 40 busy processes must not slow a classmate's kernel down 20 times (each kernel one share of the CPU,
    whatever the number of its processes), or the classmate's cells run out of time. The busy processes are
    paused and resumed between the classmate's runs, so that the machine's other load weighs on both sides."""
    attacker, classmate = kernel_client.StudentKernel(512, 120), kernel_client.StudentKernel(512, 120)
    try:
        _last_line(attacker.run(BURNERS, 60))
        alone, beside = [], []
        for _ in range(3):
            _last_line(attacker.run(PAUSE, 30))
            alone.append(_last_line(classmate.run(WORK, 60)))
            _last_line(attacker.run(RESUME, 30))
            beside.append(_last_line(classmate.run(WORK, 60)))
        slower = min(beside) / min(alone)
        assert slower < 5, f"{slower:.1f} times slower beside a kernel's busy processes"
    finally:
        attacker.shutdown()
        classmate.shutdown()


@pytest.mark.slow
def test_a_submission_cannot_print_the_graders_session_keys_into_its_feedback(tmp_path):
    """The keyring attack through the instructor's pipeline: the grading command started from a login with a key
    in its session keyring, a student whose `attention` raises with what it finds there."""
    import ctypes
    import platform
    import secrets

    from course import grade_class
    from submissions import submission

    libc = ctypes.CDLL(None, use_errno=True)
    add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
    assert libc.syscall(keyctl, 1, b"_ses") > 0  # KEYCTL_JOIN_SESSION_KEYRING, as pam_keyinit at login
    secret = ("ticket-" + secrets.token_hex(8)).encode()
    key = libc.syscall(add_key, b"user", b"hm-instructor", secret, len(secret), ctypes.c_long(-3))
    attack = KEYS + (
        "def attention(q, k, v, mask=None):\n"
        "    key = libc.syscall(KEYCTL, 10, ctypes.c_long(-3), b'user', b'hm-instructor', 0)\n"
        "    buffer = ctypes.create_string_buffer(200)\n"
        "    size = libc.syscall(KEYCTL, 11, ctypes.c_long(key), buffer, 200)\n"
        "    raise RuntimeError('KEY ' + repr(buffer.raw[: max(size, 0)]))\n"
    )
    try:
        run = grade_class("00_start_here", {"keys": submission("00_start_here", {"attention": attack})}, tmp_path)
        written = "\n".join(
            p.read_text(encoding="utf-8", errors="replace")
            for p in run.course.runtime_root.rglob("*")
            if p.is_file() and p.suffix in (".ipynb", ".html", ".csv", ".txt", ".json")
        )
        assert "KEY b" in written, "the attack ran and its text reached the feedback"
        assert secret.decode() not in written, "a key of the grader's session keyring is in what grading wrote"
    finally:
        libc.syscall(keyctl, 21, ctypes.c_long(key))  # KEYCTL_INVALIDATE


USER_NAMESPACES = r"""
import ctypes, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
made = {}
for name, flags in {"user": CLONE_NEWUSER, "user and mount": CLONE_NEWUSER | CLONE_NEWNS}.items():
    pid = os.fork()  # in a child: a namespace made here would stay this process's
    if pid == 0:
        os._exit(0 if libc.unshare(flags) == 0 else 1)
    made[name] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
made["unshare -Ur"] = subprocess.run(["unshare", "-Ur", "true"], capture_output=True).returncode == 0
fd = os.open("/proc/self/ns/user", os.O_RDONLY)
made["setns"] = libc.setns(fd, 0) == 0
# what a kernel still does: threads (glibc tries clone3, then clone), processes, pipes
box = []
thread = threading.Thread(target=box.append, args=(1,))
thread.start(); thread.join()
works = bool(box) and subprocess.run(["true"]).returncode == 0
print(repr((made, works)))
"""


@pytest.mark.parametrize("started", ["forked from the zygote", "on its own"])
def test_a_kernel_cannot_make_a_user_namespace(started, monkeypatch):
    """Linux lets any process make a user namespace (``unshare -Ur``) where it is root: it may then mount, make
    network devices and call much more of the Linux kernel, where most of its privilege escalations were found.
    A kernel makes none (``confine.forbid_new_user_namespaces``), and still starts threads and processes."""
    if started == "on its own":  # what a grader without root gets (kernel_launch.py in bubblewrap)
        monkeypatch.setattr(sandbox, "_runtime_base", lambda: None)
    kernel = kernel_client.StudentKernel(512, 120)
    try:
        assert kernel.manager.forked == (started != "on its own")
        made, works = _last_line(kernel.run(USER_NAMESPACES, 60))
    finally:
        kernel.shutdown()
    assert not any(made.values()), f"the kernel made a user namespace: {made}"
    assert works, "the kernel could no longer start a thread or a process"
