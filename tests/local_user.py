"""A hostile local user of the instructor's machine (a student with a shell on a shared JupyterHub host).

Run as another uid by tests/test_cluster_boundary.py while, and after, the instructor grades. It knows
this public repository and what any user can read: ``/proc/net/tcp`` and ``/proc/net/unix`` list every
listening socket of the machine with its owner's uid. It prints a JSON report of what it reached:

    --ports P [P ...]   for each TCP port: where it listens, whether it is in /proc/net/tcp, and what
                        answered: Dask over plain TCP (identity, then a function run as the instructor on a
                        scheduler, a worker or a nanny), Dask over TLS with a certificate of its own, HTTP
    --unix PATH ...     for each unix socket: whether it is in /proc/net/unix and whether it accepts a connection
    --watch S           before the run starts: note the socket folders already there (left by earlier runs), say
                        ``watching`` on stderr, then read the run's PID on stdin; for S seconds (or until PID ends),
                        the kernels PID starts (any user reads every process's parent and command line in /proc,
                        and lists the folder of a root grader's socket folders): can it create a file in a kernel's
                        socket folder, or in the run's folder that holds them, while the kernel boots? (A file
                        where the kernel is about to bind a socket kills it.) The note is taken first so that
                        no kernel of the run, however early it comes, is mistaken for an earlier run's.
    --plant TMP         before the run: make TMP/dask-scratch-space, Dask's scratch folder when TMP is the
                        machine's temporary folder, its own and writable by all, with a module of the name Dask
                        tries to import as it starts (``gilknocker``, an optional package), which notes who ran it
    --read DIR          every file under DIR it can open, every folder it cannot list
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import ipaddress
import json
import os
import re
import socket
import sys
import time
import urllib.request


def listening_tcp() -> dict[int, dict]:
    """Every listening TCP socket of the machine: {port: {"address", "uid"}} (state 0A is LISTEN)."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, uid = fields[1], fields[3], int(fields[7])
            if state != "0A":
                continue
            address, port = local.split(":")
            raw = b"".join(bytes.fromhex(address[i : i + 8])[::-1] for i in range(0, len(address), 8))
            found[int(port, 16)] = {"address": str(ipaddress.ip_address(raw)), "uid": uid}
    return found


def listening_unix() -> set[str]:
    return {line.split()[-1] for line in open("/proc/net/unix").read().splitlines()[1:] if len(line.split()) > 7}


def _name(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error)[:120]}"


async def _identity(address: str, **connection_args) -> str:
    """The type of Dask server (Scheduler, Worker, Nanny) that answers at ``address``."""
    from distributed.comm import connect

    comm = await asyncio.wait_for(connect(address, timeout=3, **connection_args), 6)
    try:
        await comm.write({"op": "identity", "reply": True})
        return (await asyncio.wait_for(comm.read(), 3)).get("type", "?")
    finally:
        await comm.close()


async def _run_code(address: str, kind: str):
    """Run ``os.getuid`` as whoever runs the server (the instructor): what any other function could do."""
    from distributed import Client
    from distributed.core import rpc
    from distributed.protocol.pickle import dumps

    if kind == "Scheduler":
        async with Client(address, asynchronous=True, timeout=6) as client:
            return {"scheduler": await client.run_on_scheduler(os.getuid), "workers": await client.run(os.getuid)}
    async with rpc(address) as server:
        reply = await asyncio.wait_for(server.run(function=dumps(os.getuid)), 6)
    return reply.get("result", reply)


async def attack_port(port: int) -> dict:
    from distributed.security import Security

    outcome: dict = {}
    address = f"127.0.0.1:{port}"
    try:
        kind = await _identity("tcp://" + address)
        outcome["plain_tcp"] = kind
        try:
            outcome["ran_as"] = await _run_code("tcp://" + address, kind)
        except Exception as error:  # noqa: BLE001 - each refusal is a finding
            outcome["run_refused"] = _name(error)
    except Exception as error:  # noqa: BLE001 - each refusal is a finding
        outcome["plain_tcp_refused"] = _name(error)
    try:  # TLS, with a certificate of its own (it has no certificate of the instructor's run)
        own = Security.temporary()
        outcome["own_tls"] = await _identity("tls://" + address, **own.get_connection_args("client"))
    except Exception as error:  # noqa: BLE001 - each refusal is a finding
        outcome["own_tls_refused"] = _name(error)
    try:
        # the dashboard's pages of the workers, and of each worker: the tasks it holds, named after students
        text = _get(f"http://{address}/info/main/workers.html")
        outcome["http"] = "dashboard" if "worker" in text.lower() else "answered"
        for link in sorted(set(re.findall(r'href="\.\./worker/([^"]+)"', text)))[:4]:
            text += _get(f"http://{address}/info/worker/{link}")
        outcome["http_text"] = text
    except Exception as error:  # noqa: BLE001 - each refusal is a finding
        outcome["http_refused"] = _name(error)
    return outcome


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=3) as page:  # noqa: S310 - a server the test started on 127.0.0.1
        return page.read(200_000).decode("utf-8", "replace")


def attack_unix(path: str) -> str:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(path)
        return "connected"
    except OSError as error:
        return _name(error)
    finally:
        client.close()


def _descendants(root: int) -> list[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    found, frontier = [], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


KERNEL_FOLDERS = "/run/heads-and-masks"  # where a grader running as root makes the kernels' socket folders


def watch_kernels(seconds: float) -> dict:
    """Create a harmless file (a name no socket takes) in each socket folder of a kernel the run starts, and in
    the run's own folder that holds them (its PID read on stdin once the folders of earlier runs are noted).
    A folder the attacker cannot list hides the kernels' folders in it: that is noted too."""
    seen, created, refused, unlisted = set(), [], {}, {}
    patterns = (f"{KERNEL_FOLDERS}/kernel-*", f"{KERNEL_FOLDERS}/hm-run-*", f"{KERNEL_FOLDERS}/hm-run-*/kernel-*")
    left_before = {path for pattern in patterns for path in glob.glob(pattern)}  # by earlier runs (killed)
    print("watching", file=sys.stderr, flush=True)
    root = int(sys.stdin.readline())
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and os.path.exists(f"/proc/{root}"):
        folders = {path for pattern in patterns for path in glob.glob(pattern)} - left_before  # a root grader's
        for pid in _descendants(root):  # or named on a kernel's command line (a kernel started on its own)
            try:
                arguments = open(f"/proc/{pid}/cmdline").read().split("\0")
            except OSError:
                continue
            folders |= {a for a in arguments if re.fullmatch(r"/\S*/kernel-[a-z0-9_]{8}", a)}
        for folder in folders - seen:
            seen.add(folder)
            try:
                os.listdir(folder)
            except OSError as error:
                unlisted[folder] = _name(error)
            path = os.path.join(folder, f"planted-{os.getpid()}")
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                os.unlink(path)
                created.append(path)
            except OSError as error:
                refused[folder] = _name(error)
        time.sleep(0.05)
    return {"seen": sorted(seen), "created": created, "refused": refused, "unlisted": unlisted}


PLANTED = """import os
folder = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(folder, f"ran-as-uid-{os.getuid()}-pid-{os.getpid()}"), "w").close()
raise ImportError("not installed")  # as if absent: the process goes on
"""


def plant(tmp: str) -> dict:
    scratch = os.path.join(tmp, "dask-scratch-space")
    os.mkdir(scratch)
    os.chmod(scratch, 0o777)
    with open(os.path.join(scratch, "gilknocker.py"), "w") as module:
        module.write(PLANTED)
    return {"scratch": scratch}


def readable(top: str) -> dict:
    opened, unlisted = [], []
    for folder, _, files in os.walk(top, onerror=lambda error: unlisted.append(error.filename)):
        for name in files:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as handle:
                    handle.read(1)
                opened.append(path)
            except OSError:
                pass
    return {"opened": opened, "unlisted": unlisted}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ports", type=int, nargs="*", default=[])
    parser.add_argument("--unix", nargs="*", default=[])
    parser.add_argument("--watch", type=float, default=None)
    parser.add_argument("--plant", default=None)
    parser.add_argument("--read", default=None)
    args = parser.parse_args()
    report: dict = {"uid": os.getuid(), "tcp": {}, "unix": {}}
    tables = listening_tcp()
    outcomes = await asyncio.gather(*(attack_port(port) for port in args.ports))
    for port, outcome in zip(args.ports, outcomes):
        report["tcp"][port] = {"listed": tables.get(port), **outcome}
    sockets = listening_unix()
    for path in args.unix:
        report["unix"][path] = {"listed": path in sockets, "connect": attack_unix(path)}
    if args.watch:
        report["watch"] = watch_kernels(args.watch)
    if args.plant:
        report["plant"] = plant(args.plant)
    if args.read:
        report["read"] = readable(args.read)
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    asyncio.run(main())
