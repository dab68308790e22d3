"""Build the wheel of the lab's vLLM stand-in (tests/lab/standins/vllm) with the standard library only.

The wheel is ``vllm-<version>-py3-none-any.whl``: the package ``sparkops_lab_vllm`` and a ``vllm-<version>.dist-info``
naming the distribution ``vllm`` with the console script ``vllm = sparkops_lab_vllm.cli:main``. Nodes install it
with ``pip install --no-index`` (they have no usable index), so no build backend is needed anywhere.

The output is deterministic: files in sorted order, a fixed timestamp and mode, stored uncompressed (deflate
output may differ between zlib builds). The same sources and version give the same bytes; :func:`source_digest`
is the key to cache a built wheel under.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tempfile
import zipfile
from pathlib import Path

STANDIN_DIR = Path(__file__).resolve().parent.parent / "standins" / "vllm"
PACKAGE = "sparkops_lab_vllm"
PACKAGE_DIR = STANDIN_DIR / PACKAGE
DIST = "vllm"
DEFAULT_VERSION = "0.30.0"  # the stand-in's __version__: the vLLM release it imitates
ENTRY_POINT = f"vllm = {PACKAGE}.cli:main"
SUMMARY = "sparkops lab stand-in for vLLM's OpenAI-compatible server (no GPU, no model: tests only)"
# Bump when the wheel's layout changes (not its sources: source_digest covers them).
BUILDER_VERSION = 1
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
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


def record_hash(data: bytes) -> str:
    """A RECORD hash: ``sha256=`` and the urlsafe base64 digest without padding."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_entries(version: str) -> list[tuple[str, bytes]]:
    """(path in the wheel, content) of every file, RECORD last, as the wheel spec orders it."""
    dist_info = f"{DIST}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {DIST}\nVersion: {version}\nSummary: {SUMMARY}\nLicense: GPL-3.0-or-later\nRequires-Python: >=3.8\n"
    wheel = "Wheel-Version: 1.0\nGenerator: sparklab.vllm_wheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = [(f"{PACKAGE}/{path.relative_to(PACKAGE_DIR).as_posix()}", path.read_bytes()) for path in package_files()]
    entries += [
        (f"{dist_info}/METADATA", metadata.encode()),
        (f"{dist_info}/WHEEL", wheel.encode()),
        (f"{dist_info}/entry_points.txt", f"[console_scripts]\n{ENTRY_POINT}\n".encode()),
        (f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode()),
    ]
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in entries) + f"{dist_info}/RECORD,,\n"
    return [*entries, (f"{dist_info}/RECORD", record.encode())]


def build_wheel(dest: Path, version: str = DEFAULT_VERSION) -> Path:
    """Write the stand-in's wheel into the folder ``dest`` (created if needed) and return its path.

    The file is written under a temporary name and renamed, so a reader never sees half a wheel.
    """
    if not _VERSION.fullmatch(version):
        raise ValueError(f"version {version!r} is not a version such as 0.30.0")
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / wheel_name(version)
    handle, staging = tempfile.mkstemp(prefix=f".{target.name}.", dir=dest)
    os.close(handle)
    try:
        with zipfile.ZipFile(staging, "w", zipfile.ZIP_STORED) as archive:
            for name, data in wheel_entries(version):
                info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
                info.external_attr = 0o100644 << 16
                info.create_system = 3  # unix, whatever the builder runs on
                info.compress_type = zipfile.ZIP_STORED
                archive.writestr(info, data)
        os.chmod(staging, 0o644)
        os.replace(staging, target)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
    return target
