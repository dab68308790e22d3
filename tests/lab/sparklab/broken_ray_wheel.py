"""Build a wheel of a Ray release that installs but does not start: the lab's way to try a Ray upgrade whose cluster
does not form (ray_cluster's rollback), with the standard library only.

The wheel is ``ray-<version>-py3-none-any.whl``: a package ``ray`` whose ``__version__`` is the version (so the role's
version check passes, as it would for a real release) and the console script Ray 2.60.0 declares
(``ray = ray.scripts.scripts:main``, its wheel's ``entry_points.txt``) exiting 1 with a message naming the lab. It
imitates no other behaviour of Ray: ``import ray`` works, anything else (``ray.init``, ``ray.nodes``) raises
AttributeError. Tests only; nothing the collection ships uses it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from .vllm_wheel import ZIP_TIME, record_hash

MESSAGE = "lab stand-in: a Ray release that does not start"


def entries(version: str) -> list[tuple[str, bytes]]:
    dist_info = f"ray-{version}.dist-info"
    files = [
        ("ray/__init__.py", f'"""{MESSAGE} (tests/lab/sparklab/broken_ray_wheel.py)."""\n\n__version__ = "{version}"\n'.encode()),
        ("ray/scripts/__init__.py", b""),
        ("ray/scripts/scripts.py", f'import sys\n\n\ndef main():\n    sys.exit("{MESSAGE}")\n'.encode()),
        (f"{dist_info}/METADATA", f"Metadata-Version: 2.1\nName: ray\nVersion: {version}\nSummary: {MESSAGE}\n".encode()),
        (f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: sparklab.broken_ray_wheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        (f"{dist_info}/entry_points.txt", b"[console_scripts]\nray = ray.scripts.scripts:main\n"),
        (f"{dist_info}/top_level.txt", b"ray\n"),
    ]
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in files) + f"{dist_info}/RECORD,,\n"
    return [*files, (f"{dist_info}/RECORD", record.encode())]


def build(dest: Path, version: str) -> Path:
    """Write the wheel into the folder ``dest`` (created if needed) and return its path."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / f"ray-{version}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries(version):
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.external_attr = 0o100644 << 16
            archive.writestr(info, data)
    return target
