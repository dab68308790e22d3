"""Build the wheel of the lab's vLLM stand-in (tests/lab/standins/vllm) with the standard library only.

The wheel is ``vllm-<version>-py3-none-any.whl``: the package ``sparkops_lab_vllm`` and a ``vllm-<version>.dist-info``
naming the distribution ``vllm`` with the console script ``vllm = sparkops_lab_vllm.cli:main``. Nodes install it
with ``pip install --no-index`` (they have no usable index), so no build backend is needed anywhere.

The output is deterministic (files in sorted order, written by :mod:`sparklab.pure_wheel`): the same sources and
version give the same bytes; :func:`source_digest` is the key to cache a built wheel under.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from . import pure_wheel

STANDIN_DIR = Path(__file__).resolve().parent.parent / "standins" / "vllm"
PACKAGE = "sparkops_lab_vllm"
PACKAGE_DIR = STANDIN_DIR / PACKAGE
DIST = "vllm"
DEFAULT_VERSION = "0.30.0"  # the stand-in's __version__: the vLLM release it imitates
ENTRY_POINT = f"vllm = {PACKAGE}.cli:main"
SUMMARY = "sparkops lab stand-in for vLLM's OpenAI-compatible server (no GPU, no model: tests only)"
# Bump when the wheel's layout changes (not its sources: source_digest covers them).
BUILDER_VERSION = 1
_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+)*(?:(?:a|b|rc|\.post|\.dev)[0-9]+)*(?:\+[A-Za-z0-9.]+)?")


def package_files() -> list[Path]:
    """The stand-in's Python files, sorted (no caches)."""
    return sorted(path for path in PACKAGE_DIR.rglob("*.py") if "__pycache__" not in path.parts)


def source_digest() -> str:
    """sha256 (hex) of the package's files (paths and contents) and the builder's layout version."""
    digest = hashlib.sha256(f"sparklab.vllm_wheel {BUILDER_VERSION}\n".encode())
    for path in package_files():
        data = path.read_bytes()
        digest.update(f"{path.relative_to(PACKAGE_DIR).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def wheel_name(version: str = DEFAULT_VERSION) -> str:
    return f"{DIST}-{version}-py3-none-any.whl"


def wheel_entries(version: str) -> list[tuple[str, bytes]]:
    """(path in the wheel, content) of every file, RECORD last, as the wheel spec orders it."""
    metadata = f"Summary: {SUMMARY}\nLicense: GPL-3.0-or-later\nRequires-Python: >=3.8\n"
    entries = [(f"{PACKAGE}/{path.relative_to(PACKAGE_DIR).as_posix()}", path.read_bytes()) for path in package_files()]
    entries += pure_wheel.dist_info_entries(DIST, version, metadata, "sparklab.vllm_wheel", f"[console_scripts]\n{ENTRY_POINT}\n", PACKAGE)
    return pure_wheel.with_record(DIST, version, entries)


def build_wheel(dest: Path, version: str = DEFAULT_VERSION) -> Path:
    """Write the stand-in's wheel into the folder ``dest`` (created if needed) and return its path."""
    if not _VERSION.fullmatch(version):
        raise ValueError(f"version {version!r} is not a version such as 0.30.0")
    return pure_wheel.write(dest, DIST, version, wheel_entries(version))
