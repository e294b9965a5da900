"""Fetch Pyodide's core (its npm package) and the kernel's own pure-Python packages, checked against pinned hashes.

    python3 run.py fetch-pyodide [--cache DIR]     (default DIR: .cache/pyodide, git-ignored)

Standard library only (``urllib``): it runs on a bare machine before anything is installed, and ``run.py test``
calls it before pytest so that the JupyterLite browser test can start Python with no CDN.  It downloads

1. ``pyodide-<version>.tgz`` from the npm registry (``registry.npmjs.org``): Pyodide's *core* -- the interpreter
   (``pyodide.asm.wasm``), its standard library and ``pyodide-lock.json`` -- but none of the packages that lock
   file lists (numpy, micropip, ...).  Checked against the npm ``sha512`` integrity pinned in :data:`NPM_INTEGRITY`;
2. the pure-Python wheels the JupyterLite kernel installs while it starts (micropip, IPython and what it needs,
   comm), from PyPI (``files.pythonhosted.org``), each checked against its pinned ``sha256`` (:data:`KERNEL_WHEELS`).
   Pyodide builds its own copies of these, which live on its CDN only; the PyPI wheels are the same code.

and assembles ``<cache>/pyodide-<version>/``: a Pyodide distribution folder that ``run.py lite --pyodide`` accepts.
Its ``pyodide-lock.json`` is the core's, with the entries of the bundled wheels pointing at them (file name and
``sha256``; ``comm``, which Pyodide does not list, added).  Everything else in the lock file (numpy, scipy, ...)
stays where Pyodide keeps it: the JupyterLite build points those entries at Pyodide's CDN.  So a site built with
this folder starts its Python kernel with no network at all; a package beyond the kernel still needs the CDN.

:data:`PYODIDE_VERSION` must equal the version ``jupyterlite-pyodide-kernel`` is built for (a test checks it):
when the kernel is upgraded, update the version, :data:`NPM_INTEGRITY` (``npm view pyodide@<version>
dist.integrity``) and the wheels (the versions in the new ``pyodide-lock.json``).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "pyodide"
PYODIDE_VERSION = "314.0.6"
"""The Pyodide the kit is tested with: ``jupyterlite_pyodide_kernel.constants.PYODIDE_VERSION``."""
NPM_URL = f"https://registry.npmjs.org/pyodide/-/pyodide-{PYODIDE_VERSION}.tgz"
NPM_INTEGRITY = "sha512-BKDTJyIqFxC4BExLqeRS3f5xvXZIjOt8C3zGLN/Cc7tFxSwvKVhVkchQQ2AGLOtR4YrVOIFxbV8poyDOOmWwxQ=="
"""``npm view pyodide@314.0.6 dist.integrity``."""
CORE_FILES = ("pyodide.mjs", "pyodide.js", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
              "pyodide-lock.json", "package.json")
"""The members of the npm package a browser needs (the rest: type declarations, source maps, demo consoles)."""
KERNEL_WHEELS = {
    "d2/39/e7eaf1799466a4aef85b6a4fe7bd175ad2b1c6345066aa33f1f58d4b18d0/asttokens-3.0.1-py3-none-any.whl":
        "15a3ebc0f43c2d0a50eeafea25e19046c68398e487b9f1f5b517f7c0f40f976a",
    "60/97/891a0971e1e4a8c5d2b20bbe0e524dc04548d2307fee33cdeba148fd4fc7/comm-0.2.3-py3-none-any.whl":
        "c615d91d75f7f04f095b30d1c1711babd43bdc6419c1be9886a85f2f4e489417",
    "4e/8c/f3147f5c4b73e7550fe5f9352eaa956ae838d5c51eb58e7a25b9f3e2643b/decorator-5.2.1-py3-none-any.whl":
        "d316bb415a2d9e2d2b3abcc4084c6502fc09240e292cd76a76afc106a1c8e04a",
    "c1/ea/53f2148663b321f21b5a606bd5f191517cf40b7072c0497d3c92c4a13b1e/executing-2.2.1-py2.py3-none-any.whl":
        "760643d3452b4d777d295bb167ccc74c64a81df23fb5e08eff250c425a4b2017",
    "59/22/906c8108974c673ebef6356c506cebb6870d48cedea3c41e949e2dd556bb/ipython-9.12.0-py3-none-any.whl":
        "0f2701e8ee86e117e37f50563205d36feaa259d2e08d4a6bc6b6d74b18ce128d",
    "c0/5a/9cac0c82afec3d09ccd97c8b6502d48f165f9124db81b4bcb90b4af974ee/jedi-0.19.2-py2.py3-none-any.whl":
        "a8ef22bde8490f57fe5c7681a3c83cb58874daf72b4784de3cce5b6ef6edb5b9",
    "af/33/ee4519fa02ed11a94aef9559552f3b17bb863f2ecfe1a35dc7f548cde231/matplotlib_inline-0.2.1-py3-none-any.whl":
        "d56ce5156ba6085e00a9d54fead6ed29a9c47e215cd1bba2e976ef39f5710a76",
    "17/54/d737f98fe5da2fd3375de34e9231c56550eefdd33ae9b671a25070792430/micropip-0.11.1-py3-none-any.whl":
        "768de165adb8e66906039d8fec4127a57f522dfdf8e6fbff877a4616941ecfd3",
    "7a/c2/920ef838e2f0028c8262f16101ec09ebd5969864e5a64c4c05fad0617c56/packaging-26.1-py3-none-any.whl":
        "5d9c0669c6285e491e0ced2eee587eaf67b670d94a19e94e3984a481aba6802f",
    "b6/61/fae042894f4296ec49e3f193aff5d7c18440da9e48102c3315e1bc4519a7/parso-0.8.6-py2.py3-none-any.whl":
        "2c549f800b70a5c4952197248825584cb00f033b29c692671d3bf08bf380baff",
    "84/03/0d3ce49e2505ae70cf43bc5bb3033955d2fc9f932163e84dc0779cc47f48/prompt_toolkit-3.0.52-py3-none-any.whl":
        "9aac639a3bbd33284347de5ad8d68ecc044b91a762dc39b7c21095fcd6a19955",
    "8e/37/efad0257dc6e593a18957422533ff0f87ede7c9c6ea010a2177d738fb82f/pure_eval-0.2.3-py3-none-any.whl":
        "1db8e35b67b3d218d818ae653e27f06c3aa420901fa7b081ca98cbedc874e0d0",
    "f4/7e/a72dd26f3b0f4f2bf1dd8923c85f7ceb43172af56d63c7383eb62b332364/pygments-2.20.0-py3-none-any.whl":
        "81a9e26dd42fd28a23a2d169d86d7ac03b46e2f8b59ed4698fb4785f946d0176",
    "b7/ce/149a00dd41f10bc29e5921b496af8b574d8413afcd5e30dfa0ed46c2cc5e/six-1.17.0-py2.py3-none-any.whl":
        "4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274",
    "f1/7b/ce1eafaf1a76852e2ec9b22edecf1daa58175c090266e9f6c64afcd81d91/stack_data-0.6.3-py3-none-any.whl":
        "d5558e0c25a4cb0853cddad3d77da9891a08cb85dd9f9f91b9f8cd66e511e695",
    "00/c0/8f5d070730d7836adc9c9b6408dec68c6ced86b304a9b26a14df072a6e8c/traitlets-5.14.3-py3-none-any.whl":
        "b74e89e397b1ed28cc831db7aea759ba6640cb3de13090ca145426688ff1ac4f",
    "68/5a/199c59e0a824a3db2b89c5d2dade7ab5f9624dbf6448dc291b46d5ec94d3/wcwidth-0.6.0-py3-none-any.whl":
        "1a3a1e510b553315f8e146c54764f4fb6264ffad731b3d78088cdb1478ffbdad",
}
"""The pure-Python wheels the Pyodide kernel loads while it starts (``micropip``, then ``ipython``, ``jedi`` and
``comm`` with their dependencies in ``pyodide-lock.json``), as published on PyPI: their path under
:data:`PYPI_FILES` and their ``sha256`` (both from PyPI's simple index, ``https://pypi.org/simple/<project>/``)."""
TIMEOUT = 60
PYPI_FILES = "https://files.pythonhosted.org/packages/"




def _normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def npm_integrity(data: bytes) -> str:
    """npm's ``dist.integrity`` of a tarball: ``sha512-`` and the base64 of its SHA-512."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=TIMEOUT) as reply:  # noqa: S310 - fixed https addresses above
        data: bytes = reply.read()
    return data


def fetch_checked(url: str, dest: Path, check: str, digest: str) -> Path:
    """``dest`` if it is already there with the right digest, else downloaded from ``url`` and checked.

    ``check``: ``"npm"`` (``digest`` is npm's ``sha512-...`` integrity) or ``"sha256"`` (hex).  A mismatch
    raises ValueError naming the file, the expected and the actual digest; nothing is written then."""
    def actual(data: bytes) -> str:
        return npm_integrity(data) if check == "npm" else hashlib.sha256(data).hexdigest()

    if dest.is_file() and actual(dest.read_bytes()) == digest:
        return dest
    data = _download(url)
    got = actual(data)
    if got != digest:
        raise ValueError(f"{url}: the download does not match its pinned hash (expected {digest}, got {got})")
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    part.write_bytes(data)
    part.replace(dest)
    return dest


def assemble(tarball: Path, wheels: list[Path], dest: Path) -> Path:
    """The distribution folder ``dest`` (replaced): the core's files from the npm ``tarball`` plus ``wheels``,
    with ``pyodide-lock.json``'s entries for those wheels pointing at them."""
    with tempfile.TemporaryDirectory(prefix="dp-course-pyodide-", dir=dest.parent) as tmp:
        folder = Path(tmp) / dest.name
        folder.mkdir()
        with tarfile.open(tarball, "r:gz") as tar:
            for name in CORE_FILES:
                member = tar.extractfile(f"package/{name}")
                if member is None:
                    raise ValueError(f"{tarball}: package/{name} is not a file (is this Pyodide's npm package?)")
                (folder / name).write_bytes(member.read())
        lock = json.loads((folder / "pyodide-lock.json").read_text(encoding="utf-8"))
        for wheel in wheels:
            shutil.copy(wheel, folder / wheel.name)
            project, version = wheel.name.split("-")[:2]
            key = _normalize(project)
            entry = lock["packages"].get(key) or {
                "name": key, "version": version, "depends": [], "imports": [project.lower()],
                "install_dir": "site", "package_type": "package", "unvendored_tests": False}
            entry.update(file_name=wheel.name, version=version,
                         sha256=hashlib.sha256(wheel.read_bytes()).hexdigest())
            lock["packages"][key] = entry
        (folder / "pyodide-lock.json").write_text(json.dumps(lock, indent=1), encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        folder.replace(dest)
    return dest


def fetch(cache: Path = CACHE) -> Path:
    """Download what is missing into ``cache`` (checked) and assemble ``cache/pyodide-<version>/``; returns it."""
    cache.mkdir(parents=True, exist_ok=True)
    tarball = fetch_checked(NPM_URL, cache / f"pyodide-{PYODIDE_VERSION}.tgz", "npm", NPM_INTEGRITY)
    wheels = [fetch_checked(PYPI_FILES + path, cache / "wheels" / path.rsplit("/", 1)[1], "sha256", digest)
              for path, digest in KERNEL_WHEELS.items()]
    return assemble(tarball, wheels, cache / f"pyodide-{PYODIDE_VERSION}")


def distribution(cache: Path = CACHE) -> Path | None:
    """The assembled distribution folder if :func:`fetch` has made it, else None."""
    folder = cache / f"pyodide-{PYODIDE_VERSION}"
    return folder if (folder / "pyodide.mjs").is_file() and (folder / "pyodide-lock.json").is_file() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run.py fetch-pyodide", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=CACHE, help="download folder (default: .cache/pyodide)")
    args = parser.parse_args(argv)
    try:
        folder = fetch(args.cache)
    except (OSError, ValueError) as error:
        print(f"fetch-pyodide: {error}", file=sys.stderr)
        return 1
    size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
    print(f"Pyodide {PYODIDE_VERSION} (core and kernel packages, {size:.1f} MB) in {folder}; build a site that "
          f"starts Python with no CDN: python3 run.py lite --pyodide {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
