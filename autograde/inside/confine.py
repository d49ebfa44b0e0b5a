"""What every grading kernel does to itself before it runs a student's code, whichever way it starts
(forked from the zygote: ``zygote_server.init``; started on its own: ``kernel_launch.py``).

Standard library only, and no import of the package: it runs inside the sandbox, where it is
``/opt/heads-and-masks/confine.py`` next to the two scripts that import it.

- ``join_new_session_keyring``: leave the session keyring that every process of the grader's login
  holds (Kerberos tickets, ecryptfs keys: whoever holds a keyring may read its keys).
- ``forbid_new_user_namespaces``: a seccomp filter. Linux lets any process make a user namespace
  (``unshare -Ur``), where it is root: it may then mount, make network devices and reach much more of
  the Linux kernel's code, where most of its privilege escalations were found. A grading kernel never
  needs one, so ``unshare`` and ``clone`` with ``CLONE_NEWUSER`` fail with EPERM, ``setns`` always does,
  and ``clone3`` (whose flags a filter cannot read) fails with ENOSYS, after which the C library uses
  ``clone`` (threads and processes start as before). Calls of another ABI (32-bit or x32 on x86_64),
  which a filter on the native numbers would not see, all fail.

  With ``new_processes=False`` the same filter also refuses every new process: ``fork`` and ``vfork``, and
  ``clone`` without ``CLONE_THREAD`` fail with EPERM; threads still start. A grader without root has no
  memory cgroup, and its meter reads each of the kernel's processes from /proc at the end of a call: a child
  started and ended within the call (an n × n matrix built there, the answer sent back through a pipe) was
  never seen. Such a kernel now has no child to hide anything in (``kernel_manager.SandboxedKernelManager``).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import struct

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CLONE_NEWUSER = 0x10000000
KEYCTL_JOIN_SESSION_KEYRING = 1

# machine: (audit arch, keyctl, unshare, clone, clone3, setns)
SYSCALLS = {
    "x86_64": (0xC000003E, 250, 272, 56, 435, 308),
    "aarch64": (0xC00000B7, 219, 97, 220, 435, 268),
}
# machine: the calls that start a process and nothing else (aarch64 has only clone and clone3)
PROCESS_SYSCALLS = {"x86_64": (57, 58), "aarch64": ()}  # fork, vfork
CLONE_THREAD = 0x00010000
SYS_KEYCTL = SYSCALLS[os.uname().machine][1] if os.uname().machine in SYSCALLS else None  # the keeper's too
X32_BIT = 0x40000000  # x86_64's x32 ABI: the same numbers with this bit set

# classic BPF, as seccomp reads it: struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}
LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JUMP_GREATER_OR_EQUAL = 0x35  # BPF_JMP | BPF_JGE | BPF_K
JUMP_ANY_BIT = 0x45  # BPF_JMP | BPF_JSET | BPF_K
RETURN = 0x06  # BPF_RET | BPF_K
ALLOW = 0x7FFF0000
NUMBER, ARCH, FIRST_ARGUMENT = 0, 4, 16  # offsets in seccomp_data (an argument's low 32 bits: little-endian)


def refuse(code: int) -> int:
    return 0x00050000 | code  # SECCOMP_RET_ERRNO


def libc():
    return ctypes.CDLL(None, use_errno=True)


MMAP_THRESHOLD = 128 * 1024  # bytes: glibc's default threshold, kept fixed (see fixed_mmap_threshold)


def fixed_mmap_threshold() -> None:
    """Every allocation of 128 KiB or more gets pages of its own from the system and gives them back when freed.

    glibc raises this threshold by itself once a large block has been freed (up to 32 MiB), and then serves
    later blocks from memory it kept: a kernel's peak memory, measured from outside during one call
    (remote_calls.py), would then not see an n × n matrix made of memory an earlier cell had freed. Fixed, it does.
    The variable covers a kernel started by ``exec``, mallopt the process already running.
    """
    os.environ["MALLOC_MMAP_THRESHOLD_"] = str(MMAP_THRESHOLD)
    M_MMAP_THRESHOLD = -3  # <malloc.h>
    with contextlib.suppress(AttributeError, OSError):  # not glibc: its allocator keeps no such threshold
        libc().mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def one_malloc_arena() -> None:
    """Every thread of the kernel allocates from glibc's main arena: no thread reserves an arena of its own.

    glibc gives each new thread that allocates an arena of its own, a 64 MiB reservation of address space: a
    grading kernel's address space peaked at 722-902 MiB with them and at 206-325 MiB without (its threads are
    ipykernel's; measured by tools/memory_budget.py), which is what an address-space limit must leave room for
    (04's kernels: kernel_client.KERNEL_MEMORY). The variable covers a kernel started by ``exec``, mallopt the process
    already running.
    """
    os.environ["MALLOC_ARENA_MAX"] = "1"
    M_ARENA_MAX = -8  # <malloc.h>
    with contextlib.suppress(AttributeError, OSError):  # not glibc: no arenas to limit
        libc().mallopt(M_ARENA_MAX, 1)


def join_new_session_keyring() -> None:
    """Leave the inherited session keyring for a new, empty one (nothing to do where Linux has no keyrings)."""
    if SYS_KEYCTL is None:
        return
    c = libc()
    if c.syscall(SYS_KEYCTL, KEYCTL_JOIN_SESSION_KEYRING, None) < 0 and ctypes.get_errno() != errno.ENOSYS:
        raise OSError(ctypes.get_errno(), "the kernel's session keyring could not be made")


def kernel_filter(machine: str, new_processes: bool = True) -> list[tuple[int, int, int, int]]:
    """The filter's instructions (code, jump if true, jump if false, constant): jumps count the instructions
    skipped, so each block reads top to bottom. ``new_processes=False``: threads only (see the module's text)."""
    arch, _, unshare, clone, clone3, setns = SYSCALLS[machine]
    program = [
        (LOAD_WORD, 0, 0, ARCH),
        (JUMP_EQUAL, 1, 0, arch),  # another ABI (int 0x80 on x86_64...):
        (RETURN, 0, 0, refuse(errno.EPERM)),  # refused whole
        (LOAD_WORD, 0, 0, NUMBER),
        (JUMP_GREATER_OR_EQUAL, 0, 1, X32_BIT),  # x32 calls:
        (RETURN, 0, 0, refuse(errno.EPERM)),  # refused whole
        (JUMP_EQUAL, 0, 1, clone3),
        (RETURN, 0, 0, refuse(errno.ENOSYS)),  # the C library falls back to clone
        (JUMP_EQUAL, 0, 1, setns),
        (RETURN, 0, 0, refuse(errno.EPERM)),
    ]
    if not new_processes:
        for number in PROCESS_SYSCALLS[machine]:  # fork, vfork
            program += [(JUMP_EQUAL, 0, 1, number), (RETURN, 0, 0, refuse(errno.EPERM))]
    program += [  # unshare(flags): no user namespace
        (JUMP_EQUAL, 0, 4, unshare),
        (LOAD_WORD, 0, 0, FIRST_ARGUMENT),
        (JUMP_ANY_BIT, 0, 1, CLONE_NEWUSER),
        (RETURN, 0, 0, refuse(errno.EPERM)),
        (RETURN, 0, 0, ALLOW),
    ]
    if new_processes:
        program += [  # clone(flags, ...): no user namespace
            (JUMP_EQUAL, 0, 3, clone),
            (LOAD_WORD, 0, 0, FIRST_ARGUMENT),
            (JUMP_ANY_BIT, 0, 1, CLONE_NEWUSER),
            (RETURN, 0, 0, refuse(errno.EPERM)),
        ]
    else:
        program += [  # clone(flags, ...): a thread, and no user namespace
            (JUMP_EQUAL, 0, 4, clone),
            (LOAD_WORD, 0, 0, FIRST_ARGUMENT),
            (JUMP_ANY_BIT, 1, 0, CLONE_NEWUSER),
            (JUMP_ANY_BIT, 1, 0, CLONE_THREAD),
            (RETURN, 0, 0, refuse(errno.EPERM)),  # a user namespace, or a new process
        ]
    return [*program, (RETURN, 0, 0, ALLOW)]


def user_namespace_filter(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter of a kernel that may start processes (a memory cgroup counts them)."""
    return kernel_filter(machine, new_processes=True)


class _Program(ctypes.Structure):  # struct sock_fprog
    _fields_ = [("length", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def forbid_new_user_namespaces(new_processes: bool = True) -> None:
    """Install the filter on this process and everything it starts (it cannot be removed). Sets no_new_privs,
    which an unprivileged process needs for a filter of its own (and which grading kernels have anyway).
    ``new_processes=False`` also refuses every new process (threads still start)."""
    machine = os.uname().machine
    if machine not in SYSCALLS:
        return  # no numbers for this machine: the sandbox's other layers only (docs/security.md)
    instructions = kernel_filter(machine, new_processes)
    code = b"".join(struct.pack("HBBI", *instruction) for instruction in instructions)
    program = _Program(len(instructions), code)
    c = libc()
    if c.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "no_new_privs could not be set")
    if c.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "the kernel's seccomp filter could not be installed")
