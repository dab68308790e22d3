"""Build the wheel of the lab's vLLM platform plugin (tests/lab/cpu_ray_platform: vLLM's CPU platform with the Ray
executor allowed) with the standard library only, for the lab's engine wheelhouse (engine_wheelhouse.py), where the
relabelled ``vllm`` wheels require it: a node that installs the lab's vLLM gets the plugin with it, and the real
engine runs in Ray mode too. Nothing the collection ships names it.

The wheel is ``sparklab_cpu_ray-<version>-py3-none-any.whl``: the package ``sparklab_cpu_ray`` and its entry point
``cpu_ray = sparklab_cpu_ray:register`` in the group ``vllm.platform_plugins``. Deterministic (sparklab.pure_wheel).
"""

from __future__ import annotations

import re
from pathlib import Path

from . import pure_wheel

SOURCE_DIR = Path(__file__).resolve().parent.parent / "cpu_ray_platform"
PACKAGE = "sparklab_cpu_ray"
DIST = "sparklab-cpu-ray"
ENTRY_POINTS = f"[vllm.platform_plugins]\ncpu_ray = {PACKAGE}:register\n"
SUMMARY = "sparkops lab: vLLM's CPU platform with the Ray executor allowed (tests only)"


def version() -> str:
    """The package's ``__version__``."""
    match = re.search(r'^__version__ = "([^"]+)"$', (SOURCE_DIR / PACKAGE / "__init__.py").read_text(), re.MULTILINE)
    if not match:
        raise ValueError(f"{SOURCE_DIR / PACKAGE / '__init__.py'} has no __version__")
    return match.group(1)


def requirement() -> str:
    """The requirement the relabelled ``vllm`` wheels carry (a METADATA line's value)."""
    return f"{DIST}=={version()}"


def entries() -> list[tuple[str, bytes]]:
    files = sorted(path for path in (SOURCE_DIR / PACKAGE).glob("*.py"))
    found = [(f"{PACKAGE}/{path.name}", path.read_bytes()) for path in files]
    metadata = f"Summary: {SUMMARY}\nLicense: GPL-3.0-or-later\nRequires-Python: >=3.10\n"
    found += pure_wheel.dist_info_entries(DIST, version(), metadata, "sparklab.cpu_ray_wheel", ENTRY_POINTS, PACKAGE)
    return pure_wheel.with_record(DIST, version(), found)


def build(dest: Path) -> Path:
    """Write the wheel into the folder ``dest`` (created if needed) and return its path."""
    return pure_wheel.write(dest, DIST, version(), entries())
