"""Build the wheelhouse the lab nodes install from (Ray and what the roles' venvs need; cached by a hash of its
requirements). The real engine's wheels are the engine wheelhouse's (sparklab.engine_wheelhouse)."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

from .run import log, run

REQUIREMENTS = Path(__file__).resolve().parent.parent / "node-requirements.txt"


def ensure_wheelhouse(dest: Path) -> Path:
    stamp = dest / ".requirements.sha256"
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if stamp.is_file() and stamp.read_text().strip() == wanted:
        log(f"wheelhouse {dest} is up to date")
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    log(f"downloading node wheels into {dest}")
    # Nodes run Debian bookworm's Python 3.11 on this host's architecture: the host's own platform.
    run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "-d", str(dest), "-r", str(REQUIREMENTS)], capture=True)
    shutil.copy(REQUIREMENTS, dest / "requirements.txt")
    stamp.write_text(wanted + "\n")
    return dest
