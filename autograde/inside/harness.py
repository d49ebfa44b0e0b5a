"""The judge's harness: what answers the judge's requests inside a student's grading kernel.

The judge defines it in the kernel after the student's cells ran (``kernel_client.HARNESS``): this file runs there
in a namespace of its own, and the notebook gets one name, ``__hm_rpc``, bound to :func:`answerer` of the
notebook's names. Each request names a name of the notebook: ``describe`` it (missing, a module, a callable,
or a value, sent as plain data) or ``call`` it on plain data; the reply is one printed line, ``REPLY_MARK``
and JSON. Tampering with it only breaks the student's own answers: whatever it sends back is checked in the
grader as plain data (``wire.decode``), never trusted.

It imports the standard library, what every grading kernel imported before it listened (numpy, and the
course package's stub: ``kernel_client.PRELOAD``) and IPython, whose kernel it runs in; never anything of the grader's
(tests/test_inside.py). The grader imports :func:`encode` and the limits from here too: one definition of what
crosses the boundary, on both sides of it.
"""

import base64
import io
import json

import numpy as np

REPLY_MARK = "__HM_REPLY__"  # the start of the printed line that holds a reply
# Where a judge's request travels: a field of its own in the execute_request's content, beside the code
# (``__hm_rpc()``, the same few characters for every call). In the code itself, every request (arrays
# as base64, tens of kilobytes) would be tokenized, parsed and hashed by IPython and ipykernel before it
# ran: measured here, 20 ms of the kernel's CPU for a call on 8,000 numbers, 2.3 ms with no argument.
REQUEST_KEY = "heads_and_masks_request"
MAX_DEPTH = 20  # levels of nested lists, tuples and dicts a value may have on the wire
MAX_ERROR = 2000  # characters of an exception's message a reply carries
MAX_WARNINGS = 20  # warnings a reply carries
MAX_WARNING = 500  # characters of each warning's message


def encode(value, depth: int = 0):
    """Plain data only: numbers, strings, None, numpy arrays of numbers/bools, lists, tuples, dicts.
    Anything else travels as ``{"__unsupported__": what it is}``, which the other side cannot mistake for data."""
    if depth > MAX_DEPTH:
        return {"__unsupported__": "deeply nested data"}
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, np.generic) and type(value).__module__ == "numpy":
        return {"__scalar__": value.dtype.str, "v": value.item()}
    if type(value) is np.ndarray:
        if value.dtype.kind not in "biufc":
            return {"__unsupported__": f"numpy array of dtype {value.dtype}"}
        buffer = io.BytesIO()
        np.save(buffer, value, allow_pickle=False)
        return {"__nd__": base64.b64encode(buffer.getvalue()).decode("ascii")}
    if type(value) in (list, tuple):
        return {"__seq__": type(value).__name__, "items": [encode(v, depth + 1) for v in value]}
    if type(value) is dict and all(type(k) is str for k in value):
        return {"__dict__": {k: encode(v, depth + 1) for k, v in value.items()}}
    return {"__unsupported__": type(value).__name__}


def decode_from_grader(value):
    """A value the grader's :func:`encode` made (the arguments of a call); what it could not send is None.
    (The grader's own ``decode`` checks every field: it reads what a student's kernel sent.)"""
    if not isinstance(value, dict):
        return value
    if "__nd__" in value:
        return np.load(io.BytesIO(base64.b64decode(value["__nd__"])), allow_pickle=False)
    if "__scalar__" in value:
        return np.dtype(value["__scalar__"]).type(value["v"])
    if "__seq__" in value:
        items = [decode_from_grader(v) for v in value["items"]]
        return tuple(items) if value["__seq__"] == "tuple" else items
    if "__dict__" in value:
        return {k: decode_from_grader(v) for k, v in value["__dict__"].items()}
    return None


def describe(namespace: dict, name: str) -> dict:
    """What ``name`` is in the notebook: missing, a module, a callable, or a value (sent as plain data)."""
    if name not in namespace:
        return {"kind": "missing"}
    obj = namespace[name]
    if type(obj).__name__ == "module":
        return {"kind": "module"}
    if callable(obj):
        return {"kind": "callable"}
    return {"kind": "value", "value": encode(obj)}


def call(namespace: dict, request: dict) -> dict:
    """Call the notebook's function ``request["name"]``: its result or its error, the warnings that are the
    answer's own, and the arrays among its arguments it changed in place (the grader mirrors them)."""
    args = [decode_from_grader(a) for a in request["args"]]
    kwargs = {k: decode_from_grader(v) for k, v in request["kwargs"].items()}
    before = [a.copy() if type(a) is np.ndarray else None for a in args]
    # which warnings are the answer's own: the checks' policy (the stub package keeps this module)
    from heads_and_masks._answer_warnings import answer_warnings

    reply = {}
    with answer_warnings() as caught:
        try:
            reply["result"] = encode(namespace[request["name"]](*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - the student's error is the reply, whatever it is
            reply["error"] = [type(error).__name__, str(error)[:MAX_ERROR]]
    reply["warnings"] = [[w.category.__name__, str(w.message)[:MAX_WARNING]] for w in caught[:MAX_WARNINGS]]
    reply["mutated"] = {
        str(i): encode(a)
        for i, (a, b) in enumerate(zip(args, before))
        if b is not None and not np.array_equal(a, b, equal_nan=True)
    }
    return reply


def answerer(namespace: dict):
    """The function the judge calls in the kernel (``__hm_rpc``): it answers one request about the names of
    ``namespace`` (the notebook's), given as JSON or, by default, beside the code (``REQUEST_KEY``)."""

    def answer(request_json=None):
        if request_json is None:  # the request came in the execute_request's content, beside the code
            from IPython import get_ipython

            request_json = get_ipython().kernel.get_parent("shell")["content"][REQUEST_KEY]
        request = json.loads(request_json)
        reply = {}
        if request["op"] == "describe":
            reply = describe(namespace, request["name"])
        elif request["op"] == "call":
            reply = call(namespace, request)
        print(REPLY_MARK + json.dumps(reply), flush=True)

    return answer
