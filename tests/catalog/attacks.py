"""Attack submissions: tricks that try to earn points without a correct answer.

Each attack fills the answer cell of one exercise with a wrong (or no) answer plus a trick, and must
earn, on that exercise, no more than the untouched student notebook does (0) once graded through
the pipeline (nbgrader, the student's code in a sandboxed kernel, the tests judged in the grader). Probes look for the
network, the solutions and the gradebook from inside the grading kernel.
"""

from __future__ import annotations

import dataclasses

WRONG_ATTENTION = """
def attention(q, k, v, mask=None):
    return np.zeros(q.shape[:-1] + (v.shape[-1],))
"""


@dataclasses.dataclass(frozen=True)
class Attack:
    name: str
    assignment: str
    exercise: str  # the graded answer cell whose test cells must earn nothing
    source: str
    why: str
    # the test cells that must earn nothing, when not all of the exercise's: an attack on how one test measures
    tests: tuple[str, ...] = ()

    def submission(self):
        from submissions import submission

        return submission(self.assignment, {self.exercise: self.source.strip("\n")})


ATTACKS = [
    Attack(
        "always_equal_array",
        "00_start_here",
        "attention",
        """
class Anything(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(other), bool)
    def __array_ufunc__(self, *args, **kwargs):
        return np.zeros(())
np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *x, **k: np.ones(np.broadcast_shapes(np.shape(a), np.shape(b)), bool)
np.testing.assert_allclose = lambda *a, **k: None
def attention(q, k, v, mask=None):
    return np.zeros(q.shape[:-1] + (v.shape[-1],)).view(Anything)
""",
        "an ndarray subclass that equals anything, and numpy's comparisons patched",
    ),
    Attack(
        "input_transformer_blanks_tests",
        "00_start_here",
        "attention",
        WRONG_ATTENTION
        + """
def _blank_tests(lines):
    return ["pass\\n"] if any("check_" in line for line in lines) else lines
get_ipython().input_transformers_cleanup.append(_blank_tests)
""",
        "an IPython input transformer that empties every later test cell",
    ),
    Attack(
        "ast_transformer_removes_calls",
        "00_start_here",
        "attention",
        WRONG_ATTENTION
        + """
import ast as _ast
class _DropChecks(_ast.NodeTransformer):
    def visit_Expr(self, node):
        return None if "check_" in _ast.unparse(node) else node
get_ipython().ast_transformers.append(_DropChecks())
""",
        "an AST transformer that deletes the check calls",
    ),
    Attack(
        "forged_check_output",
        "00_start_here",
        "attention",
        WRONG_ATTENTION
        + """
def _forge(lines):
    if any("check_" in line for line in lines):
        return ["print('✓ attention without a mask matches the reference')\\n"]
    return lines
get_ipython().input_transformers_post.append(_forge)
""",
        "later test cells replaced by prints of the success lines",
    ),
    Attack(
        "rewritten_judge_requests",
        "00_start_here",
        "attention",
        WRONG_ATTENTION
        + """
import json as _json
_kernel = get_ipython().kernel
_real_parent = _kernel.get_parent
def _rewritten(channel="shell"):
    # the judge's request rides in the execute_request's content (autograde/inside/harness.py, REQUEST_KEY): each call
    # on the hidden inputs becomes a call on one small input, where a uniform average may pass for attention
    parent = _real_parent(channel)
    content = dict(parent.get("content", {}))
    for key, text in list(content.items()):
        if key.endswith("_request"):
            request = _json.loads(text)
            if request.get("op") == "call" and request.get("args"):
                request["args"] = [[[1.0]], [[1.0]], [[2.0]]]
                request.pop("staged", None)
            content[key] = _json.dumps(request)
    return dict(parent, content=content)
_kernel.get_parent = _rewritten
""",
        "the judge's requests rewritten in the kernel before the harness reads them",
    ),
    Attack(
        "drop_hidden_tests",
        "00_start_here",
        "attention",
        """
def attention(q, k, v, mask=None):  # right only on the visible inputs: 2-D and no leading axes
    d = q.shape[-1]
    s = q @ k.T / np.sqrt(d)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.where(np.isfinite(s), np.exp(s - m), 0)
    t = e.sum(-1, keepdims=True)
    return np.divide(e, t, out=np.zeros_like(e), where=t > 0) @ v
def _only_visible(lines):
    return [l for l in lines if "thorough=True" not in l]
get_ipython().input_transformers_cleanup.append(_only_visible)
""",
        "a transformer that reads the restored hidden tests and deletes them",
    ),
    Attack(
        "patched_checks",
        "00_start_here",
        "attention",
        WRONG_ATTENTION
        + """
import heads_and_masks.checks.core as _core
_core.is_close = lambda *a, **k: True
_core.fail = lambda *a, **k: None
_core.expect_close = lambda *a, **k: None
_core.expect_shape = lambda *a, **k: None
import heads_and_masks.checks.start_here as _start
_start.expect_close = lambda *a, **k: None
_start.expect_shape = lambda *a, **k: None
""",
        "the checks' own comparison functions replaced",
    ),
    Attack(
        "event_callback_patches_checks",
        "00_start_here",
        "attention",
        WRONG_ATTENTION
        + """
def _before(info):
    import sys
    for name, module in list(sys.modules.items()):
        if name.startswith("heads_and_masks.checks."):
            for attribute in ("expect_close", "expect_shape", "fail"):
                if hasattr(module, attribute):
                    setattr(module, attribute, lambda *a, **k: None)
get_ipython().events.register("pre_run_cell", _before)
""",
        "an event callback that disables the checks right before each cell",
    ),
    Attack(
        "trace_function_swallows_failures",
        "00_start_here",
        "attention",
        WRONG_ATTENTION
        + """
import sys
def _tracer(frame, event, arg):
    if frame.f_code.co_name == "fail":
        frame.f_globals["CheckFailed"] = type("Nothing", (Exception,), {})
    return _tracer
sys.settrace(_tracer)
""",
        "a trace function that tampers with the checks while they run",
    ),
    Attack(
        "calls_the_reference",
        "00_start_here",
        "attention",
        """
import heads_and_masks.attention as _ref_module
def attention(q, k, v, mask=None):
    return _ref_module.attention(q, k, v, mask)
""",
        "the course's reference implementation called",
    ),
    Attack(
        "unwraps_the_reference",
        "00_start_here",
        "attention",
        """
import heads_and_masks.attention as _ref_module
_inner = _ref_module.attention.__closure__[0].cell_contents
def attention(q, k, v, mask=None):
    return _inner(q, k, v, mask)
""",
        "the unguarded reference dug out of its wrapper",
    ),
    Attack(
        "stub_with_stderr_swallowed",
        "00_start_here",
        "attention",
        """
import io, sys
sys.stderr = io.StringIO()  # the checks' "not written yet" line (a failure) would vanish in plain nbgrader
def attention(q, k, v, mask=None):
    raise NotImplementedError()
""",
        "the answer left as the stub, with stderr replaced so that 'not written yet' is never seen",
    ),
    # the other kinds of result: an int, a boolean mask, a tuple, a number
    Attack(
        "always_equal_int",
        "01_heads",
        "mha_cost",
        """
class _Equal(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__
def mha_cost(n, D, h):
    return _Equal(0)
""",
        "an int subclass that equals any count",
    ),
    Attack(
        "always_equal_mask",
        "03_causal_mask",
        "causal_mask",
        """
class _Mask(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(other), bool)
    def __array_ufunc__(self, *args, **kwargs):
        return True
def causal_mask(n):
    return np.zeros((abs(n), abs(n)), bool).view(_Mask)  # no ValueError either: only the trick
""",
        "a boolean ndarray subclass that equals any mask",
    ),
    Attack(
        "fake_tuple",
        "04_work_fraction",
        "blocked_causal_attention",
        """
class _Anything:
    def __eq__(self, other):
        return True
    def __le__(self, other):
        return True
    def __ge__(self, other):
        return True
    def __lt__(self, other):
        return True
    def __array__(self, *args, **kwargs):
        return np.zeros(1)
def blocked_causal_attention(q, k, v, block):
    return _Anything(), _Anything()
""",
        "objects that compare equal (and smaller, and larger) to anything in the returned tuple",
    ),
    Attack(
        "patched_numpy_count",
        "06_kv_heads",
        "kv_cache_bytes",
        """
np.array_equal = lambda *a, **k: True
np.isclose = lambda *a, **k: True
np.allclose = lambda *a, **k: True
class _Bytes(float):
    def __eq__(self, other):
        return True
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
    return _Bytes(1.0)
""",
        "a float subclass that equals any size, and numpy's comparisons patched",
    ),
    # Plain data only, but its precision chosen by the student: float16 answers were compared "at their own
    # precision" (64 eps of float16: 6 % of the largest value), so answers a few % off passed.
    Attack(
        "float16_loosens_the_tolerance",
        "07_generation",
        "decode_step",
        """
def decode_step(q_new, k_new, v_new, k_cache, v_cache):
    k_all = np.concatenate([k_cache, k_new], axis=2)
    v_all = np.concatenate([v_cache, v_new], axis=2)
    out = attention(q_new, k_all, v_all) * 1.04  # 4 % off
    return out.astype(np.float16), k_all.astype(np.float16), v_all.astype(np.float16)
""",
        "an output 4 % off, returned as float16 to be compared at float16's precision",
    ),
    # In a learner's notebook a failing check reports on stderr instead of raising (checks.core.reports_failures), so
    # that Run All goes on. A submission that switches that on, every way the package's source shows, still fails.
    Attack(
        "switches_on_the_labs_report",
        "07_generation",
        "decode_step",
        """
import os, sys
os.environ.pop("HEADS_AND_MASKS_GRADING", None)
try:
    import heads_and_masks.checks.core as _core
    _core.reports_failures = lambda: True
    _core._raising = -1
except Exception:
    pass
sys.modules.setdefault("IPython", __import__("IPython"))
def decode_step(q_new, k_new, v_new, k_cache, v_cache):
    return attention(q_new, k_cache, v_cache), k_cache, v_cache  # the new token forgotten
""",
        "a cache that forgets the new token, with every switch between the lab's report and the grader's failure "
        "set to report",
    ),
    Attack(
        "float16_loosens_the_tolerance",
        "08_learned_heads",
        "rule_weights",
        """
def rule_weights(weights):
    t = np.arange(2, weights.shape[-1])
    right = np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], -1)
    return (right * 1.05).astype(np.float16)  # 5 % off
""",
        "rule weights 5 % off, returned as float16 to be compared at float16's precision",
    ),
]

# A kernel that builds the whole n × n score matrix (no tiling at all) and tells a measured call from the others:
# it hides the matrix only then. Where the tiling is graded (the count, from a measured call on, and the memory),
# it must earn nothing: a call whose memory is graded is made and measured like every other call.
FULL_MATRIX_KERNEL = """
import mmap as _mmap
def _full_matrix(q, k, v, block, hidden):
    if block < 1 or not (len(q) == len(k) == len(v)):
        raise ValueError("block must be at least 1 and q, k, v of one length")
    n, d = q.shape
    if hidden:  # in a mapping tracemalloc does not see, and no temporary of n x n
        scores = np.frombuffer(_mmap.mmap(-1, max(8, n * n * 8)), np.float64)[: n * n].reshape(n, n)
        np.matmul(q, k.T, out=scores)
    else:
        scores = q @ k.T
    scores /= np.sqrt(d)
    for i in range(n):
        scores[i, i + 1 :] = -np.inf
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    counted = sum((min(s + block, n) - s) * min(s + block, n) for s in range(0, n, block))  # what tiles would do
    return scores @ v, counted
"""

ATTACKS += [
    Attack(
        name,
        "04_work_fraction",
        "blocked_causal_attention",
        FULL_MATRIX_KERNEL + source,
        why,
        tests=("test_blocked_causal_attention_count", "test_blocked_causal_attention_memory"),
    )
    for name, why, source in [
        (
            "full_matrix_unless_traced",
            "the whole score matrix, hidden when a tracer runs (tracemalloc, sys.settrace, sys.setprofile); "
            "the untraced call after a traced one answered from a cache",
            """
import sys as _sys, tracemalloc as _tracemalloc
_cached = []
def blocked_causal_attention(q, k, v, block):
    if _cached:
        return _cached.pop()
    if _tracemalloc.is_tracing() or _sys.gettrace() is not None or _sys.getprofile() is not None:
        _cached.append(_full_matrix(q, k, v, block, hidden=True))
        return _cached[0]
    return _full_matrix(q, k, v, block, hidden=False)
""",
        ),
        (
            "full_matrix_unless_the_print_channel_warns",
            "the whole score matrix, hidden after the judge's replies (seen through print) announced a "
            "measured call; the call after it answered from a cache",
            """
import builtins as _builtins
_print, _seen, _cached = _builtins.print, [], []
def _watching_print(*args, **kwargs):
    _seen.append(" ".join(map(str, args))[:200])
    return _print(*args, **kwargs)
_builtins.print = _watching_print
def blocked_causal_attention(q, k, v, block):
    if _cached:
        return _cached.pop()
    if _seen and _seen[-1].endswith("{}"):  # an empty reply: arguments were staged for a measured call
        _seen.clear()
        _cached.append(_full_matrix(q, k, v, block, hidden=True))
        return _cached[0]
    return _full_matrix(q, k, v, block, hidden=False)
""",
        ),
        (
            "full_matrix_answers_a_repeat_from_a_cache",
            "the whole score matrix, hidden at large n; a call on the same arguments as the one before "
            "(a measured call repeated) answered from a cache",
            """
import hashlib as _hashlib
_last = {}
def blocked_causal_attention(q, k, v, block):
    key = _hashlib.sha256(q.tobytes() + k.tobytes() + v.tobytes() + str(block).encode()).hexdigest()
    if key in _last:
        return _last[key]
    _last.clear()
    _last[key] = _full_matrix(q, k, v, block, hidden=len(q) >= 1000)
    return _last[key]
""",
        ),
        (
            "full_matrix_counts_the_calls",
            "the whole score matrix, hidden at large n; every second call at large n (the measured call's "
            "repeat) answered from a cache",
            """
_large_calls = []
def blocked_causal_attention(q, k, v, block):
    if len(q) < 1000:
        return _full_matrix(q, k, v, block, hidden=False)
    if len(_large_calls) % 2:
        return _large_calls.pop()
    _large_calls.append(_full_matrix(q, k, v, block, hidden=True))
    return _large_calls[0]
""",
        ),
    ]
]

# A *ballast* (red team, issue 36): memory the answer cell holds and the function gives back as it starts, so that
# the whole n x n score matrix it then builds adds nothing to what the kernel held when the call began, which is
# all a measurement of the call's growth sees (it earned 04's count and memory tests, 3 points, as root and
# without, with plain numpy). What closes it is the limit of 04's kernels (kernel_client.KERNEL_MEMORY): at the n of the
# graded calls (16384) the matrix does not fit in the kernel, whatever it held before. Graded in 04's class run and
# read by tests/test_boundary.py: each must earn nothing on the count and memory tests.
BALLAST_ATTACKS = [
    Attack(
        name,
        "04_work_fraction",
        "blocked_causal_attention",
        source,
        why,
        tests=("test_blocked_causal_attention_count", "test_blocked_causal_attention_memory"),
    )
    for name, why, source in [
        (
            "ballast_given_back_as_the_call_starts",
            "four 40 MiB arrays held by the answer cell (the red team's six do not fit in 04's kernels), freed as "
            "the call starts, the whole float64 score matrix (np.triu, a full softmax), the arrays made again "
            "before returning",
            """
_ballast = [np.ones(5 * 2**20) for _ in range(4)]  # 4 x 40 MiB, every page written
def blocked_causal_attention(q, k, v, block):
    if block < 1 or not (len(q) == len(k) == len(v)):
        raise ValueError("block must be at least 1 and q, k, v of one length")
    _ballast.clear()  # pages of their own (each above the mmap threshold): given back to the system at once
    n, d = q.shape
    scores = q @ k.T / np.sqrt(d)
    scores[np.triu(np.ones((n, n), bool), 1)] = -np.inf
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    out = weights / weights.sum(axis=1, keepdims=True) @ v
    del scores, weights
    _ballast.extend(np.ones(5 * 2**20) for _ in range(4))
    counted = sum((min(s + block, n) - s) * min(s + block, n) for s in range(0, n, block))
    return out, counted
""",
        ),
        (
            "ballast_as_large_as_the_kernel_allows",
            "as much memory as the kernel may hold, private and shared (an anonymous shared mapping, which "
            "RLIMIT_DATA does not count), given back as the call starts; the whole score matrix in float32, the "
            "cheapest type the checks accept, softmax in place (private memory, else a shared mapping)",
            """
import mmap as _mmap
_CHUNK = 32 * 2**20
_ballast = []
def _fill():
    for make in (lambda: np.ones(_CHUNK // 8), lambda: _mmap.mmap(-1, _CHUNK)):
        for _ in range(128):  # at most 4 GiB of each
            try:
                chunk = make()
                if isinstance(chunk, _mmap.mmap):
                    chunk.write(b"x" * _CHUNK)  # every page written
                _ballast.append(chunk)
            except (MemoryError, OSError):
                break
    for chunk in _ballast[-2:]:  # room for the request (the arguments) and the reply
        if isinstance(chunk, _mmap.mmap):
            chunk.close()
    del _ballast[-2:]
_fill()
def blocked_causal_attention(q, k, v, block):
    if block < 1 or not (len(q) == len(k) == len(v)):
        raise ValueError("block must be at least 1 and q, k, v of one length")
    for chunk in _ballast:
        if isinstance(chunk, _mmap.mmap):
            chunk.close()
    _ballast.clear()
    n, d = q.shape
    try:
        scores = np.empty((n, n), np.float32)
    except MemoryError:
        scores = np.frombuffer(_mmap.mmap(-1, n * n * 4), np.float32).reshape(n, n)
    np.matmul(q.astype(np.float32), k.T.astype(np.float32), out=scores)
    scores *= np.float32(1 / np.sqrt(d))
    for i in range(n):
        scores[i, i + 1 :] = -np.inf
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    out = scores @ v.astype(np.float32)
    del scores
    _fill()
    counted = sum((min(s + block, n) - s) * min(s + block, n) for s in range(0, n, block))
    return out, counted
""",
        ),
        (
            "ballast_and_a_packed_triangle",
            "the residual docs/security.md named (red team, second round): the causal triangle of scores packed "
            "row after row in float32 (n(n+1)/2 x 4 bytes: 128 MiB at n = 8192, which fits in 04's kernels, "
            "512 MiB at n = 16384, the graded n since, which does not), "
            "hidden behind four 40 MiB arrays held by the answer cell and given back as the call starts",
            """
_ballast = [np.ones(5 * 2**20) for _ in range(4)]  # 4 x 40 MiB, every page written
def blocked_causal_attention(q, k, v, block):
    if block < 1 or not (len(q) == len(k) == len(v)):
        raise ValueError("block must be at least 1 and q, k, v of one length")
    _ballast.clear()
    n, d = q.shape
    starts = np.concatenate([[0], np.cumsum(np.arange(1, n + 1))]).astype(np.int64)
    packed = np.empty(starts[-1], np.float32)  # row i holds its i + 1 causal scores
    q32, k32 = q.astype(np.float32), k.astype(np.float32)
    for i in range(n):
        packed[starts[i] : starts[i + 1]] = k32[: i + 1] @ q32[i]
    packed *= np.float32(1 / np.sqrt(d))
    out = np.empty((n, v.shape[1]))
    for i in range(n):
        row = packed[starts[i] : starts[i + 1]].astype(np.float64)
        weights = np.exp(row - row.max())
        out[i] = weights @ v[: i + 1] / weights.sum()
    del packed
    _ballast.extend(np.ones(5 * 2**20) for _ in range(4))
    counted = sum((min(s + block, n) - s) * min(s + block, n) for s in range(0, n, block))
    return out, counted
""",
        ),
    ]
]

# What a grading kernel can see: each probe writes what it found into a cell output.
PROBE = r"""
import os, socket, glob, pathlib
found = {}
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3)
    found["internet"] = True
except OSError:
    found["internet"] = False
repo = pathlib.Path(__import__("heads_and_masks").__file__).resolve().parents[1]
found["solutions"] = sorted(str(p) for p in (repo / "solutions").rglob("*.ipynb")) if (repo / "solutions").exists() else []
found["authoring"] = sorted(str(p) for p in (repo / "authoring").glob("*.py")) if (repo / "authoring").exists() else []
here = pathlib.Path.cwd()
found["gradebooks"] = sorted(str(p) for parent in [here, *here.parents] for p in parent.glob("gradebook.db*"))
found["other_submissions"] = sorted(str(p) for p in here.parent.parent.glob("*/*/*.ipynb") if here not in p.parents)
found["root_home"] = sorted(set(os.listdir("/root")) - {".pyenv"}) if os.path.isdir("/root") else []  # the interpreter only
found["course_root"] = sorted(glob.glob("/tmp/hm-*") + glob.glob("/work/*/autograde") + glob.glob("/work/*/class") + glob.glob("/work/*/solutions")
                              + glob.glob("/srv/*") + glob.glob("/home/*"))
found["environment"] = sorted(k for k in os.environ if "CANARY" in k or "KEY" in k or "TOKEN" in k)
print("PROBE", found)
"""
