"""The seccomp filter every grading kernel installs (autograde/inside/confine.py), read instruction by instruction.

The kernel tests (test_zygote_boundary.py) show that a kernel makes no user namespace and still starts threads and
processes; this one runs the filter's program on every kind of call it must decide, including the ones a Python
kernel cannot easily make: another ABI's calls (32-bit ``int 0x80``, x32) and ``clone3``.
"""

from __future__ import annotations

import errno

import pytest

from autograde.inside import confine

CLONE_NEWUSER, CLONE_NEWNS, CLONE_THREAD, CLONE_VM = 0x10000000, 0x00020000, 0x00010000, 0x00000100
SIGCHLD = 17


def decide(program, arch: int, number: int, first_argument: int = 0) -> int:
    """What the kernel's seccomp would return for this call: the filter's classic BPF, interpreted."""
    data = {confine.ARCH: arch, confine.NUMBER: number, confine.FIRST_ARGUMENT: first_argument & 0xFFFFFFFF}
    accumulator, at = 0, 0
    while True:
        code, if_true, if_false, constant = program[at]
        if code == confine.LOAD_WORD:
            accumulator, at = data[constant], at + 1
        elif code == confine.RETURN:
            return constant
        else:
            taken = {
                confine.JUMP_EQUAL: accumulator == constant,
                confine.JUMP_GREATER_OR_EQUAL: accumulator >= constant,
                confine.JUMP_ANY_BIT: bool(accumulator & constant),
            }[code]
            at += 1 + (if_true if taken else if_false)


@pytest.mark.parametrize("machine", sorted(confine.SYSCALLS))
def test_the_filter_refuses_user_namespaces_and_nothing_a_kernel_needs(machine):
    arch, keyctl, unshare, clone, clone3, setns = confine.SYSCALLS[machine]
    program = confine.user_namespace_filter(machine)
    allow, refused, absent = confine.ALLOW, confine.refuse(errno.EPERM), confine.refuse(errno.ENOSYS)
    cases = {
        "unshare(CLONE_NEWUSER)": (arch, unshare, CLONE_NEWUSER, refused),
        "unshare(CLONE_NEWUSER | CLONE_NEWNS)": (arch, unshare, CLONE_NEWUSER | CLONE_NEWNS, refused),
        "unshare(CLONE_NEWNS) (refused by Linux itself without privileges)": (arch, unshare, CLONE_NEWNS, allow),
        "clone(CLONE_NEWUSER | SIGCHLD)": (arch, clone, CLONE_NEWUSER | SIGCHLD, refused),
        "clone of a thread": (arch, clone, CLONE_VM | CLONE_THREAD, allow),
        "fork (clone with SIGCHLD)": (arch, clone, SIGCHLD, allow),
        "clone3, whose flags a filter cannot read": (arch, clone3, 0, absent),
        "setns": (arch, setns, 0, refused),
        "keyctl": (arch, keyctl, 1, allow),
        "read": (arch, 0 if machine == "x86_64" else 63, 0, allow),
        "a call of another ABI (32-bit)": (0x40000003, unshare, CLONE_NEWUSER, refused),
        "another ABI's harmless call": (0x40000003, 3, 0, refused),
    }
    if machine == "x86_64":
        cases["x32 unshare(CLONE_NEWUSER)"] = (arch, confine.X32_BIT | unshare, CLONE_NEWUSER, refused)
        cases["x32 read"] = (arch, confine.X32_BIT | 0, 0, refused)
    wrong = {
        name: hex(decide(program, call_arch, number, argument))
        for name, (call_arch, number, argument, expected) in cases.items()
        if decide(program, call_arch, number, argument) != expected
    }
    assert not wrong, f"decided otherwise than expected: {wrong}"


@pytest.mark.parametrize("machine", sorted(confine.SYSCALLS))
def test_the_filter_without_new_processes_lets_threads_start_and_nothing_else(machine):
    """A kernel no memory cgroup counts (a grader without root) starts threads, never a process: glibc's fork()
    and posix_spawn go through clone without CLONE_THREAD, the raw fork and vfork calls exist on x86_64."""
    arch, keyctl, unshare, clone, clone3, setns = confine.SYSCALLS[machine]
    program = confine.kernel_filter(machine, new_processes=False)
    allow, refused, absent = confine.ALLOW, confine.refuse(errno.EPERM), confine.refuse(errno.ENOSYS)
    CLONE_VFORK = 0x00004000
    thread = CLONE_VM | 0x00000200 | 0x00000400 | 0x00000800 | CLONE_THREAD  # | FS | FILES | SIGHAND (pthreads)
    cases = {
        "clone of a thread (pthread_create)": (arch, clone, thread, allow),
        "fork (clone with SIGCHLD)": (arch, clone, SIGCHLD, refused),
        "posix_spawn (clone with CLONE_VM | CLONE_VFORK)": (arch, clone, CLONE_VM | CLONE_VFORK | SIGCHLD, refused),
        "clone of a thread into a user namespace": (arch, clone, thread | CLONE_NEWUSER, refused),
        "clone3, whose flags a filter cannot read": (arch, clone3, 0, absent),
        "unshare(CLONE_NEWUSER)": (arch, unshare, CLONE_NEWUSER, refused),
        "unshare(CLONE_NEWNS) (refused by Linux itself without privileges)": (arch, unshare, CLONE_NEWNS, allow),
        "setns": (arch, setns, 0, refused),
        "keyctl": (arch, keyctl, 1, allow),
        "read": (arch, 0 if machine == "x86_64" else 63, 0, allow),
        "another ABI's fork (32-bit)": (0x40000003, 2, 0, refused),
    }
    for number in confine.PROCESS_SYSCALLS[machine]:
        cases[f"system call {number} (fork or vfork)"] = (arch, number, 0, refused)
    wrong = {
        name: hex(decide(program, call_arch, number, argument))
        for name, (call_arch, number, argument, expected) in cases.items()
        if decide(program, call_arch, number, argument) != expected
    }
    assert not wrong, f"decided otherwise than expected: {wrong}"


@pytest.mark.parametrize("new_processes", [True, False])
def test_every_jump_lands_inside_the_program(new_processes):
    for machine in confine.SYSCALLS:
        program = confine.kernel_filter(machine, new_processes)
        assert program[-1] == (confine.RETURN, 0, 0, confine.ALLOW)
        for at, (code, if_true, if_false, _) in enumerate(program):
            if code not in (confine.LOAD_WORD, confine.RETURN):
                assert at + 1 + max(if_true, if_false) < len(program), (machine, at)
