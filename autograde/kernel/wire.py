"""The wire format, the grader's side: what a student's kernel sent, read as plain data and checked.

What crosses the boundary is made by one ``encode``, the harness's (``inside/harness.py``): the kernel replies
with it and the grader sends its requests with it. :func:`decode` reads a reply: numbers, strings, None,
numeric arrays, lists, tuples and dicts, checked field by field and never trusted; anything else stands as an
:class:`Unsupported` value.
"""

from __future__ import annotations

import base64
import io

import numpy as np

from ..inside.harness import MAX_DEPTH


class Unsupported:
    """Stands for a value that cannot travel as plain data (an object of the student's own class...)."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<a {self.type_name} object>"


def decode(value, depth: int = 0):
    """The inverse of :func:`encode`, for data that came from the student's kernel: checked, never trusted."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deep")
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, list):
        raise ValueError("malformed value")
    if not isinstance(value, dict):
        raise ValueError("malformed value")
    if "__nd__" in value:
        array = np.load(io.BytesIO(base64.b64decode(str(value["__nd__"]))), allow_pickle=False)
        if array.dtype.kind not in "biufc":
            return Unsupported(f"numpy array of dtype {array.dtype}")
        return np.array(array, copy=True)
    if "__scalar__" in value:
        dtype = np.dtype(str(value["__scalar__"]))
        if dtype.kind not in "biufc":
            return Unsupported(f"numpy scalar of dtype {dtype}")
        return dtype.type(value["v"])
    if "__seq__" in value:
        items = [decode(v, depth + 1) for v in value["items"]]
        return tuple(items) if value["__seq__"] == "tuple" else items
    if "__dict__" in value:
        return {str(k): decode(v, depth + 1) for k, v in value["__dict__"].items()}
    if "__unsupported__" in value:
        return Unsupported(str(value["__unsupported__"])[:100])
    raise ValueError("malformed value")
