"""A local Pyodide for the JupyterLite site: ``tools/fetch_pyodide.py`` and ``run.py lite --pyodide`` (issue 23).

No network: the downloads are checked with ``file://`` addresses and a synthetic npm package (a tarball with
``package/pyodide.mjs`` and a small ``pyodide-lock.json``); the real core (``.cache/pyodide``) is used where
``run.py fetch-pyodide`` has put it.  The browser side is ``tests/browser/test_lite_pyodide.py``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LITE_PY = ROOT / ".venv-lite" / "bin" / "python"
_SPEC = importlib.util.spec_from_file_location("fetch_pyodide", ROOT / "tools" / "fetch_pyodide.py")
fetch_pyodide = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fetch_pyodide)


def _need_lite_tools() -> None:
    if LITE_PY.exists():
        return
    reason = "the JupyterLite tools are not installed (.venv-lite; `python3 run.py lite` or `run.py test` sets them up)"
    if os.environ.get("DP_COURSE_CI") == "1":
        pytest.fail(reason + " (required in CI: DP_COURSE_CI=1)")
    pytest.skip(reason)


def _wheel(folder: Path, name: str) -> Path:
    path = folder / name
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name.split('-')[0]}/__init__.py", "")
    return path


def _npm_package(path: Path, version: str = fetch_pyodide.PYODIDE_VERSION) -> Path:
    """A synthetic npm package of Pyodide: the core files (dummies) and a lock file listing micropip and numpy."""
    lock = {"info": {"python": "3.14.2"}, "packages": {
        "micropip": {"name": "micropip", "version": "0.11.1", "file_name": "micropip-0.11.1-py3-none-any.whl",
                     "sha256": "0" * 64, "depends": [], "imports": ["micropip"], "install_dir": "site",
                     "package_type": "package"},
        "numpy": {"name": "numpy", "version": "2.4.6", "file_name": "numpy-2.4.6-cp314-cp314-pyemscripten.whl",
                  "sha256": "1" * 64, "depends": [], "imports": ["numpy"], "install_dir": "site",
                  "package_type": "package"}}}
    members = {name: b"core" for name in fetch_pyodide.CORE_FILES}
    members["pyodide-lock.json"] = json.dumps(lock).encode()
    members["package.json"] = json.dumps({"name": "pyodide", "version": version}).encode()
    members["pyodide.d.ts"] = b"types"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_the_pinned_pyodide_is_the_one_the_kernel_is_built_for():
    _need_lite_tools()
    out = subprocess.run([str(LITE_PY), "-c", "from jupyterlite_pyodide_kernel.constants import PYODIDE_VERSION; "
                          "print(PYODIDE_VERSION)"], capture_output=True, text=True, check=True).stdout.strip()
    assert out == fetch_pyodide.PYODIDE_VERSION
    assert fetch_pyodide.NPM_URL.endswith(f"/pyodide-{out}.tgz")


def test_a_download_that_does_not_match_its_hash_is_refused(tmp_path):
    source = tmp_path / "source.tgz"
    source.write_bytes(b"a tarball")
    dest = tmp_path / "cache" / "pyodide.tgz"
    with pytest.raises(ValueError, match="does not match its pinned hash"):
        fetch_pyodide.fetch_checked(source.as_uri(), dest, "npm", fetch_pyodide.NPM_INTEGRITY)
    assert not dest.exists() and not dest.with_name(dest.name + ".part").exists()
    good = fetch_pyodide.npm_integrity(b"a tarball")
    assert fetch_pyodide.fetch_checked(source.as_uri(), dest, "npm", good).read_bytes() == b"a tarball"
    source.write_bytes(b"changed")            # a cached file with the right hash is not downloaded again
    assert fetch_pyodide.fetch_checked(source.as_uri(), dest, "npm", good).read_bytes() == b"a tarball"
    digest = hashlib.sha256(b"changed").hexdigest()
    assert fetch_pyodide.fetch_checked(source.as_uri(), dest, "sha256", digest).read_bytes() == b"changed"


def test_assemble_points_the_lock_file_at_the_bundled_wheels(tmp_path):
    tarball = _npm_package(tmp_path / "pyodide.tgz")
    wheels = [_wheel(tmp_path, "micropip-0.11.1-py3-none-any.whl"), _wheel(tmp_path, "comm-0.2.3-py3-none-any.whl")]
    folder = fetch_pyodide.assemble(tarball, wheels, tmp_path / "dist")
    assert sorted(p.name for p in folder.iterdir()) == sorted([*fetch_pyodide.CORE_FILES, *(w.name for w in wheels)])
    lock = json.loads((folder / "pyodide-lock.json").read_text())["packages"]
    assert lock["micropip"]["sha256"] == hashlib.sha256(wheels[0].read_bytes()).hexdigest()
    assert lock["comm"]["file_name"] == "comm-0.2.3-py3-none-any.whl" and lock["comm"]["imports"] == ["comm"]
    assert lock["numpy"]["sha256"] == "1" * 64     # not bundled: untouched


def test_lite_build_refuses_what_is_not_a_pyodide(tmp_path):
    _need_lite_tools()
    empty = tmp_path / "empty"
    empty.mkdir()
    other = _npm_package(tmp_path / "pyodide-0.1.tgz", version="0.1.0")
    for given, said in ((tmp_path / "missing.tgz", "is neither a Pyodide release tarball"),
                        (empty, "holds no Pyodide distribution"), (other, "is Pyodide 0.1.0; this build needs")):
        proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "lite", "-o", str(tmp_path / "site"),
                               "--pyodide", str(given)], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert "--pyodide" in proc.stderr and said in proc.stderr and str(given) in proc.stderr, proc.stderr


def test_lite_build_bundles_the_npm_core_and_sends_the_rest_to_the_pinned_cdn(tmp_path):
    _need_lite_tools()
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "lite", "-o", str(site), "--pyodide",
                           str(_npm_package(tmp_path / "pyodide.tgz"))], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    config = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == "./static/pyodide/pyodide.mjs"
    static = site / "static" / "pyodide"
    assert (static / "pyodide.mjs").is_file() and not (static / "pyodide.d.ts").exists()
    lock = json.loads((static / "pyodide-lock.json").read_text())["packages"]
    cdn = f"https://cdn.jsdelivr.net/pyodide/v{fetch_pyodide.PYODIDE_VERSION}/full/"
    assert lock["numpy"]["file_name"] == cdn + "numpy-2.4.6-cp314-cp314-pyemscripten.whl"
    assert lock["micropip"]["file_name"] == cdn + "micropip-0.11.1-py3-none-any.whl"   # the npm core has no wheels


def test_the_fetched_distribution_starts_the_kernel_from_the_site():
    """With ``run.py fetch-pyodide``'s folder (the real core), the kernel's own packages are in the site."""
    _need_lite_tools()
    folder = fetch_pyodide.distribution()
    if folder is None:
        reason = "Pyodide's core is not in .cache/pyodide (`python3 run.py fetch-pyodide` downloads it)"
        if os.environ.get("DP_COURSE_CI") == "1":
            pytest.fail(reason + " (required in CI: DP_COURSE_CI=1)")
        pytest.skip(reason)
    lock = json.loads((folder / "pyodide-lock.json").read_text())["packages"]
    with tarfile.open(fetch_pyodide.CACHE / f"pyodide-{fetch_pyodide.PYODIDE_VERSION}.tgz") as tar:
        member = tar.extractfile("package/pyodide-lock.json")
        assert member is not None
        original = json.loads(member.read())["packages"]
    for path, digest in fetch_pyodide.KERNEL_WHEELS.items():
        name = path.rsplit("/", 1)[1]
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest
        key = name.split("-")[0].lower().replace("_", "-")
        assert lock[key]["file_name"] == name and lock[key]["sha256"] == digest
        if key in original:   # the same version as Pyodide's own build (an upgrade must update the pins)
            assert original[key]["version"] == name.split("-")[1], (key, original[key]["version"], name)
    # everything the kernel loads while it starts is bundled: micropip, and ipython, jedi with their dependencies
    needed, todo = set(), ["micropip", "ipython", "jedi"]
    while todo:
        key = todo.pop().lower().replace("_", "-")
        if key not in needed:
            needed.add(key)
            todo += original[key]["depends"]
    bundled = {p.rsplit("/", 1)[1].split("-")[0].lower().replace("_", "-") for p in fetch_pyodide.KERNEL_WHEELS}
    assert needed <= bundled, sorted(needed - bundled)
    assert json.loads((folder / "package.json").read_text())["version"] == fetch_pyodide.PYODIDE_VERSION
