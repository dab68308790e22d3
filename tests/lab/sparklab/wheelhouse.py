"""Build the wheelhouse the lab nodes install from (cached by a hash of its requirements), with the lab's vLLM
stand-in (tests/lab/standins/vllm) as the wheel `vllm` (rebuilt when its sources change)."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

from .run import log, run
from .vllm_wheel import build_wheel, source_digest, wheel_name

REQUIREMENTS = Path(__file__).resolve().parent.parent / "node-requirements.txt"


def ensure_vllm_standin(dest: Path) -> Path:
    """The stand-in's wheel in ``dest``, built again when its sources changed (a stamp holds their digest)."""
    stamp = dest / ".vllm-standin.sha256"
    wanted = source_digest()
    wheel = dest / wheel_name()
    if wheel.is_file() and stamp.is_file() and stamp.read_text().strip() == wanted:
        return wheel
    wheel.unlink(missing_ok=True)
    built = build_wheel(dest)
    stamp.write_text(wanted + "\n")
    log(f"built the vLLM stand-in {built.name} into {dest}")
    return built


def ensure_wheelhouse(dest: Path) -> Path:
    stamp = dest / ".requirements.sha256"
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if stamp.is_file() and stamp.read_text().strip() == wanted:
        log(f"wheelhouse {dest} is up to date")
        ensure_vllm_standin(dest)
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    log(f"downloading node wheels into {dest}")
    # Nodes run Debian bookworm's Python 3.11 on this host's architecture: the host's own platform.
    run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "-d", str(dest), "-r", str(REQUIREMENTS)], capture=True)
    shutil.copy(REQUIREMENTS, dest / "requirements.txt")
    stamp.write_text(wanted + "\n")
    ensure_vllm_standin(dest)
    return dest
