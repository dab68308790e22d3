"""Materialise a sysfs fixture tree of the unit tests (also used by the Molecule 'ray' scenario).

Git trees here hold no directory symlinks and ansible-test forbids ':' in file names, so each fixture under
tests/unit/fixtures/sysfs/<case>/ stores PCI directories with '_' for ':'
(``0000_01_00.1``) and lists its symlinks in symlinks.txt (``LINK TARGET``, targets in the real ':' form).
:func:`materialise` copies a tree, restores the real names and makes the links.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sysfs"
_PCI_NAME = re.compile(r"(pci)?[0-9a-f]{4}_[0-9a-f]{2}(_[0-9a-f]{2}\.[0-7])?", re.IGNORECASE)


def materialise(case: str, dest: Path) -> Path:
    """Copy fixture ``case`` to ``dest/case`` as a real sysfs layout and return that root."""
    root = dest / case
    shutil.copytree(FIXTURES / case, root, ignore=shutil.ignore_patterns("symlinks.txt"))
    for directory in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if _PCI_NAME.fullmatch(directory.name):
            directory.rename(directory.with_name(directory.name.replace("_", ":")))
    for line in (FIXTURES / case / "symlinks.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        link, target = line.split()
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / link)
        if not (root / link).exists():
            raise AssertionError(f"{case}: symlink {link} -> {target} is broken")
    return root
