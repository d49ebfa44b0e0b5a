"""The kernel zygote: one sandboxed process per grading worker that every grading kernel is forked from.

A kernel started from nothing spends about a quarter of a second of CPU importing numpy, the course
package and ipykernel before it can run a single cell; a worker grading a class pays that for every
submission. This process pays it once: it imports them (``--preload``) and then, for each request of the
worker, forks a process that already has them. (The name comes from Android, where every app is forked
from one such process.)

It runs inside bubblewrap, as root, with exactly the files a kernel may see (``zygote.zygote_command``),
and it never runs a student's code nor holds anything secret: it imports public code before any
submission exists and then receives only paths, limits and a uid. Each request is served by three
processes of its own, and it is the fork in the middle that builds the per-submission sandbox:

    zygote (root)                      this loop: preloaded, forks a keeper per request, nothing else
    └── keeper (root)                  joins the kernel's cgroups, unshares every namespace, mounts the
        │                              kernel's private /tmp, /dev/shm, scratch folder and pseudo-terminals,
        │                              hides every other kernel's socket folder; then waits, killing the
        │                              kernel when told to; once it has ended, empties the keyrings its uid
        │                              left (the uid comes back later) and reports to the worker how it ended
        └── init (kernel's uid, pid 1) mounts its /proc, sets the limits, drops every privilege for good,
            │                          leaves the grader's session keyring for an empty one of its own and
            │                          forbids user namespaces (confine.py); then only reaps processes, and
            │                          ends (taking all of them) with the kernel
            └── kernel (pid 2)         ipykernel, and the student's code

The keeper's end of the worker's socket is how the worker sees the kernel (``zygote.ForkedKernel``): the
keeper writes the exit status there, and kills the kernel when the worker writes ``kill`` or goes away.

Run as ``python zygote_server.py CONTROL_FD MODULE,MODULE...``; standard library only, so that it can
import nothing before its preload.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import io
import json
import os
import resource
import runpy
import select
import signal
import socket
import sys
import threading
import tokenize

import confine  # next to this file, inside the sandbox and out (standard library only)

STAGE = "/opt/heads-and-masks/stage"  # an empty folder: where a keeper holds the socket folder while it hides the rest

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SYS_KEYCTL = confine.SYS_KEYCTL  # one table of system call numbers (confine.SYSCALLS)
KEYCTL_CLEAR, KEYCTL_GET_PERSISTENT = 7, 22
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda text: None if text is None else text.encode()  # noqa: E731
    _check(libc.mount(encode(source), encode(target), encode(kind), flags, encode(data)), f"mount {target}")


def prctl(option: int, value: int = 0, more: int = 0) -> int:
    return libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(more), ctypes.c_ulong(0), ctypes.c_ulong(0))


# ---- the zygote ---------------------------------------------------------------------------------


def main(argv: list[str]) -> None:
    control = socket.socket(fileno=int(argv[0]))
    sys.modules["debugpy"] = None  # no kernel is ever debugged: ipykernel finds no debugpy and starts no debugger
    for name in filter(None, argv[1].split(",")):
        importlib.import_module(name)
    # The tokenizer's regular expression (a few kilobytes, compiled on first use and cached) is compiled once
    # here, not in every kernel as IPython reads its first cell (with the imports above: 15 % of a kernel's start).
    list(tokenize.generate_tokens(io.StringIO("x = 1\n").readline))
    if threading.active_count() != 1 or len(os.listdir("/proc/self/task")) != 1:
        sys.exit("the zygote must stay single-threaded: a fork copies only the thread that forks")
    # Every object imported so far lives as long as the zygote: frozen, it is left out of every collection,
    # here and in each kernel, whose collections would otherwise walk them all and so write to (copy) every
    # page they share with the zygote (measured: 12 % less CPU per kernel, 1,400 fewer page copies).
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the system as they end
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, 1 << 16, 8)
        except InterruptedError:
            continue
        if not data:
            return  # the worker is gone: so are we
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                control.close()
                keeper(json.loads(data), fds)
            except BaseException as error:  # noqa: BLE001 - said on stderr (the worker's log); the kernel never starts
                print(f"zygote: a kernel could not be started: {error!r}", file=sys.stderr, flush=True)
            finally:
                os._exit(status)
        for fd in fds:
            os.close(fd)


# ---- the keeper: root, between the zygote and the kernel ----------------------------------------


def keeper(request: dict, fds: list[int]) -> None:
    report, cgroup_files = fds[0], fds[1:]
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the zygote gone: so is this keeper, and with it the kernel
    for fd in cgroup_files:  # opened by the worker; "0" moves the writer (before the cgroup namespace hides them)
        os.write(fd, b"0")
        os.close(fd)
    own_pids = os.open("/proc/self/ns/pid", os.O_RDONLY)  # to fork in again once the kernel's is gone
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID | CLONE_NEWCGROUP
    _check(libc.unshare(flags), "unshare")
    private_mounts(request)
    alive_read, alive_write = os.pipe()  # init sees end-of-file here once the keeper is gone
    pid = os.fork()  # the first process of the new pid namespace: its pid 1
    if pid == 0:
        try:
            os.close(alive_write)
            os.close(report)
            init(request, alive_read)
        finally:
            os._exit(1)
    os.close(alive_read)
    os.write(report, b"started\n")  # with it the worker learns this keeper's pid (SO_PASSCRED)
    pidfd = os.pidfd_open(pid)
    while True:
        ready, _, _ = select.select([report, pidfd], [], [])
        if pidfd in ready:
            break
        os.read(report, 64)  # "kill", or nothing at all: the worker is gone. Either way the kernel ends
        os.kill(pid, signal.SIGKILL)  # pid 1 of its namespace: every process in it ends too
        break
    _, status = os.waitpid(pid, 0)
    forget_keys(request["uid"], own_pids)
    try:
        os.write(report, f"{os.waitstatus_to_exitcode(status)}\n".encode())
    except OSError:
        pass


def forget_keys(uid: int, own_pids: int) -> None:
    """Empty the keyrings of the kernel's uid: the system keeps a uid's keys after its last process ended
    (until reboot), and the uid comes back for a later kernel (``sandbox.private_uid``)."""
    if SYS_KEYCTL is None:
        return
    _check(libc.setns(own_pids, CLONE_NEWPID), "setns")  # no process can start in the kernel's ended namespace
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            try:  # only the keyrings it had: one made here would stay until reboot
                with open("/proc/keys") as keys:
                    had = keys.read()
            except OSError:
                had = f"_persistent.{uid}: _uid_ses.{uid}: _uid.{uid}:"
            rings = []
            if f"_persistent.{uid}:" in had:
                rings.append(libc.syscall(SYS_KEYCTL, KEYCTL_GET_PERSISTENT, ctypes.c_long(-1), ctypes.c_long(-4)))
            if f"_uid_ses.{uid}:" in had:
                rings.append(KEY_SPEC_USER_SESSION_KEYRING)
            if f"_uid.{uid}:" in had:
                rings.append(KEY_SPEC_USER_KEYRING)
            for ring in rings:
                libc.syscall(SYS_KEYCTL, KEYCTL_CLEAR, ctypes.c_long(ring))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def private_mounts(request: dict) -> None:
    """What this kernel alone sees (in the keeper's new mount namespace): fresh tmpfs mounts, its own
    pseudo-terminals, and of the socket folders only its own."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here reaches any other namespace
    size = request["scratch_mb"] * 2**20
    for folder in ("/tmp", "/dev/shm", request["scratch"]):
        mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
    runtime = request["runtime"]
    base = os.path.dirname(runtime)
    mount(runtime, STAGE, None, MS_BIND)
    mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=65536,mode=0755")
    os.mkdir(runtime, 0o755)
    mount(STAGE, runtime, None, MS_MOVE)


# ---- init: pid 1 of the kernel's namespace, the kernel's uid --------------------------------------


def init(request: dict, keeper_alive: int) -> None:
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # this namespace's processes only
    for part in ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"):
        if os.path.exists(part):
            mount(part, part, None, MS_BIND | MS_REC)
            mount(None, part, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.setsid()
    limit(resource.RLIMIT_CPU, request["cpu_seconds"])
    limit(resource.RLIMIT_FSIZE, request["max_file_mb"] * 2**20)
    limit(resource.RLIMIT_CORE, 0)
    if request["max_processes"]:
        limit(resource.RLIMIT_NPROC, request["max_processes"])
    drop_privileges(request["uid"])
    confine.join_new_session_keyring()  # the grader's (its login's: Kerberos tickets...) is out of reach
    confine.forbid_new_user_namespaces()  # for init and every process of the kernel
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid changed: a change of uid clears it
    if select.select([keeper_alive], [], [], 0)[0]:
        return  # the keeper ended before the line above: end too
    os.chdir(request["scratch"])
    pid = os.fork()
    if pid == 0:
        try:
            os.close(keeper_alive)
            kernel(request)
        finally:
            os._exit(1)
    while True:  # reap every process of the namespace; end with the kernel (which ends all of them)
        try:
            child, status = os.wait()
        except InterruptedError:
            continue
        except ChildProcessError:
            return
        if child == pid:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


def limit(which: int, value: int) -> None:
    resource.setrlimit(which, (value, value))


def drop_privileges(uid: int) -> None:
    """Become ``uid`` with no capability and no way back (the bounding set emptied first, then every id)."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    for capability in range(64):
        prctl(PR_CAPBSET_DROP, capability)  # past the last capability this fails harmlessly
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # from root to another uid: the permitted and effective sets empty
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid) or os.getgroups():
        raise RuntimeError("the kernel's uid could not be set")


# ---- the kernel ----------------------------------------------------------------------------------


def kernel(request: dict) -> None:
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 1 << 16)  # nothing the zygote had open stays open
    os.environ.clear()
    os.environ.update(request["env"])
    limit(resource.RLIMIT_DATA, request["memory_mb"] * 2**20)
    if request.get("address_space_mb"):  # every mapping, shared memory and mapped files too (kernel_launch.py)
        limit(resource.RLIMIT_AS, request["address_space_mb"] * 2**20)
    if not request.get("new_processes", True):  # no memory cgroup counts a child: the kernel may start none
        confine.forbid_new_user_namespaces(new_processes=False)  # a second filter: the stricter answer holds
    confine.fixed_mmap_threshold()  # a call's memory, measured from outside, sees its large arrays
    confine.one_malloc_arena()  # threads reserve no memory of their own (limits measure what the kernel uses)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()  # a fork copies numpy's global generator: each kernel draws its own numbers
    sys.path[0] = os.getcwd()  # what `python -m` puts first
    sys.argv = [sys.executable, *request["args"]]
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
