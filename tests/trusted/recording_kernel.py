"""An IPython kernel that appends the content of every ``execute_request`` it receives to a JSON-lines file.

Used as the *student's* kernel in the attack tests, to show that no line of a test cell ever reaches it.
Started as ``python recording_kernel.py -f {connection_file}`` with ``DPC_RECORD_LOG`` naming the file.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ipykernel.ipkernel import IPythonKernel
from ipykernel.kernelapp import IPKernelApp


class RecordingKernel(IPythonKernel):
    """Records each execute request's content (code and user expressions) before handling it."""

    async def execute_request(self, stream: Any, ident: Any, parent: dict[str, Any]) -> Any:
        with open(os.environ["DPC_RECORD_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps(parent.get("content", {})) + "\n")
        return await super().execute_request(stream, ident, parent)


if __name__ == "__main__":
    IPKernelApp.launch_instance(kernel_class=RecordingKernel)
