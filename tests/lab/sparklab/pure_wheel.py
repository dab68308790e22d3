"""Write a pure-Python wheel with the standard library only: the lab's small wheels (a Ray release
that does not start, the CPU platform with Ray for the real engine). Nodes install them with ``pip install --no-index``,
so no build backend is needed anywhere.

The output is deterministic: the entries in the order given, a fixed timestamp and mode, stored uncompressed (deflate
output may differ between zlib builds): the same entries give the same bytes.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import tempfile
import typing as t
import zipfile
from pathlib import Path

ZIP_TIME = (1980, 1, 1, 0, 0, 0)
TAG = "py3-none-any"


def record_hash(data: bytes) -> str:
    """A RECORD hash: ``sha256=`` and the urlsafe base64 digest without padding."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def dist_info_entries(dist: str, version: str, metadata: str, generator: str, entry_points: str, top_level: str) -> list[tuple[str, bytes]]:
    """The ``.dist-info`` files before RECORD: METADATA (``metadata``: the lines after Name and Version), WHEEL,
    entry_points.txt (where ``entry_points`` is not empty) and top_level.txt."""
    info = f"{dist.replace('-', '_')}-{version}.dist-info"
    wheel = f"Wheel-Version: 1.0\nGenerator: {generator}\nRoot-Is-Purelib: true\nTag: {TAG}\n"
    entries = [
        (f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n{metadata}".encode()),
        (f"{info}/WHEEL", wheel.encode()),
    ]
    if entry_points:
        entries.append((f"{info}/entry_points.txt", entry_points.encode()))
    entries.append((f"{info}/top_level.txt", f"{top_level}\n".encode()))
    return entries


def with_record(dist: str, version: str, entries: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """``entries`` and RECORD last, as the wheel spec orders it."""
    info = f"{dist.replace('-', '_')}-{version}.dist-info"
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in entries) + f"{info}/RECORD,,\n"
    return [*entries, (f"{info}/RECORD", record.encode())]


def wheel_name(dist: str, version: str) -> str:
    return f"{dist.replace('-', '_')}-{version}-{TAG}.whl"


@contextlib.contextmanager
def staged(target: Path) -> t.Iterator[str]:
    """A temporary file beside ``target`` to write, renamed to ``target`` (mode 0644) when the block ends, removed when
    it fails: a reader never sees half a file."""
    handle, staging = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(handle)
    try:
        yield staging
        os.chmod(staging, 0o644)
        os.replace(staging, target)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


def write(dest: Path, dist: str, version: str, entries: list[tuple[str, bytes]]) -> Path:
    """Write ``entries`` (RECORD included: :func:`with_record`) as the wheel of ``dist`` ``version`` into the folder
    ``dest`` (created if needed) and return its path; under a temporary name renamed when complete, so that a reader
    never sees half a wheel."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / wheel_name(dist, version)
    with staged(target) as staging, zipfile.ZipFile(staging, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.external_attr = 0o100644 << 16
            info.create_system = 3  # unix, whatever the builder runs on
            info.compress_type = zipfile.ZIP_STORED
            archive.writestr(info, data)
    return target
