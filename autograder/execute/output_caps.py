"""The sizes of a kernel's output messages, and shortening one to a cap (``SafeExecute``'s output caps).

:class:`~autograder.execute.safe_execute.SafeExecute` counts every output message of a cell as it streams
(:func:`output_size`) and drops what comes past the cell's cap; the cell's first error and first result are kept
but cut to the cap (:func:`shorten`).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["output_size", "shorten"]


def output_size(msg: dict[str, Any]) -> int:
    """The characters an IOPub output message adds to a cell: text, every data value, the traceback."""
    content = msg.get("content", {})
    size = len(content.get("text", "") or "")
    for value in (content.get("data") or {}).values():
        size += len(value) if isinstance(value, str) else len(json.dumps(value))
    for line in content.get("traceback") or []:
        size += len(line)
    return size


def shorten(content: dict[str, Any], cap: int) -> None:
    """Shorten an error's traceback and a result's data to about ``cap`` characters, in place (a value that is not
    text is dropped when it is larger: JSON cannot be cut)."""
    if content.get("traceback") and sum(len(str(x)) for x in content["traceback"]) > cap:
        content["traceback"] = [str(x)[:2000] for x in content["traceback"][:20]] + ["... (truncated)"]
    data = content.get("data")
    if not isinstance(data, dict):
        return
    budget = cap
    for k, v in list(data.items()):
        size = len(v) if isinstance(v, str) else len(json.dumps(v))
        if size <= budget:
            budget -= size
        elif isinstance(v, str) and k == "text/plain":
            data[k] = v[:max(budget, 2000)] + "\n... (truncated)"
            budget = 0
        else:
            del data[k]
    if not data:
        data["text/plain"] = "[grader: output truncated]"
