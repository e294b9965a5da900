"""Server settings of every course session (``run.py lab`` puts this folder on ``JUPYTER_CONFIG_PATH``).

Terminals: when the server is not started from a terminal (a desktop launcher, a service, a test harness),
jupyter-server-terminals opens *login* shells, and a system profile that sets ``PATH`` afresh (Debian's
``/etc/profile`` does) drops the environment's ``bin/`` -- so ``dp-course`` would be "command not found".
Here every terminal is an interactive, non-login shell that inherits the server's environment, with the
``bin/`` folder of the Python running the server first on ``PATH``.
"""

import os
import shutil
import sys

c = get_config()  # noqa: F821 - provided by traitlets when the server loads this file

_BIN = os.path.dirname(sys.executable)  # the environment's bin/ (not resolved: a venv's python is a symlink)
_PATH = os.environ.get("PATH", "")
if _BIN not in _PATH.split(os.pathsep):
    os.environ["PATH"] = _BIN + os.pathsep + _PATH  # inherited by terminals and kernels
_SHELL = os.environ.get("SHELL") or shutil.which("bash") or shutil.which("sh") or "/bin/sh"
c.ServerApp.terminado_settings = {"shell_command": [_SHELL, "-i"]}

# Nothing leaves this machine: no "check for updates", no news feed.
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
c.LabApp.news_url = None
