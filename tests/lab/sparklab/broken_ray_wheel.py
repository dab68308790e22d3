"""Build a wheel of a Ray release that installs but does not start: the lab's way to try a Ray upgrade whose cluster
does not form (ray_cluster's rollback), with the standard library only.

The wheel is ``ray-<version>-py3-none-any.whl``: a package ``ray`` whose ``__version__`` is the version (so the role's
version check passes, as it would for a real release) and the console script Ray 2.60.0 declares
(``ray = ray.scripts.scripts:main``, its wheel's ``entry_points.txt``) exiting 1 with a message naming the lab. It
imitates no other behaviour of Ray: ``import ray`` works, anything else (``ray.init``, ``ray.nodes``) raises
AttributeError. Tests only; nothing the collection ships uses it.
"""

from __future__ import annotations

from pathlib import Path

from . import pure_wheel

MESSAGE = "lab stand-in: a Ray release that does not start"


def entries(version: str) -> list[tuple[str, bytes]]:
    files = [
        ("ray/__init__.py", f'"""{MESSAGE} (tests/lab/sparklab/broken_ray_wheel.py)."""\n\n__version__ = "{version}"\n'.encode()),
        ("ray/scripts/__init__.py", b""),
        ("ray/scripts/scripts.py", f'import sys\n\n\ndef main():\n    sys.exit("{MESSAGE}")\n'.encode()),
    ]
    points = "[console_scripts]\nray = ray.scripts.scripts:main\n"
    files += pure_wheel.dist_info_entries("ray", version, f"Summary: {MESSAGE}\n", "sparklab.broken_ray_wheel", points, "ray")
    return pure_wheel.with_record("ray", version, files)


def build(dest: Path, version: str) -> Path:
    """Write the wheel into the folder ``dest`` (created if needed) and return its path."""
    return pure_wheel.write(dest, "ray", version, entries(version))
