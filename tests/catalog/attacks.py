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
    # the judge's request rides in the execute_request's content (autograde/judge.py, REQUEST_KEY): each call
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
found["course_root"] = sorted(glob.glob("/tmp/hm-*") + glob.glob("/work/*/autograde") + glob.glob("/work/*/solutions")
                              + glob.glob("/srv/*") + glob.glob("/home/*"))
found["environment"] = sorted(k for k in os.environ if "CANARY" in k or "KEY" in k or "TOKEN" in k)
print("PROBE", found)
"""
