"""Install the course's student JupyterLab configuration into a Python environment (Binder's ``postBuild``).

    python tools/install_jupyter_config.py [--prefix PREFIX]      (default: this interpreter's sys.prefix)

``run.py lab`` passes ``jupyter_config/`` to JupyterLab itself; on Binder, repo2docker starts JupyterLab, so
the same settings go into the environment, where every server started from it reads them:

* ``PREFIX/etc/jupyter/labconfig/page_config.json``: nbgrader's lab extension disabled (merged with what is
  there);
* ``PREFIX/etc/jupyter/jupyter_server_config.d/zz-dp-course.json``: nbgrader's server extensions off (loaded
  after nbgrader's own file, so it wins);
* ``PREFIX/etc/jupyter/jupyter_server_config.py``: the terminal and no-update-check settings of
  ``jupyter_config/common`` (only if the environment has no such file yet);
* ``PREFIX/share/jupyter/lab/settings/overrides.json``: Markdown opens as a rendered preview, and the widgets'
  state is saved with the notebook (merged).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

CONFIG = Path(__file__).resolve().parent.parent / "jupyter_config"


def _merge_json(target: Path, update: dict) -> None:
    """Write ``update`` into the JSON file ``target``, keeping its other keys (one level of dicts merged)."""
    data = json.loads(target.read_text()) if target.exists() else {}
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=2) + "\n")


def install(prefix: Path) -> list[Path]:
    """Install the student configuration under ``prefix``; returns the files written."""
    etc = prefix / "etc" / "jupyter"
    page = etc / "labconfig" / "page_config.json"
    _merge_json(page, json.loads((CONFIG / "student" / "labconfig" / "page_config.json").read_text()))
    server_d = etc / "jupyter_server_config.d" / "zz-dp-course.json"
    server_d.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CONFIG / "student" / "jupyter_server_config.json", server_d)
    written = [page, server_d]
    server_py = etc / "jupyter_server_config.py"
    if server_py.exists():
        print(f"install_jupyter_config: {server_py} exists, left as it is (terminal settings not installed)")
    else:
        shutil.copyfile(CONFIG / "common" / "jupyter_server_config.py", server_py)
        written.append(server_py)
    overrides = prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    _merge_json(overrides, json.loads((CONFIG / "lab_settings" / "overrides.json").read_text()))
    written.append(overrides)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", type=Path, default=Path(sys.prefix), help="the environment (default: sys.prefix)")
    args = parser.parse_args(argv)
    for path in install(args.prefix):
        print(f"install_jupyter_config: wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
