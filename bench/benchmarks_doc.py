"""docs/benchmarks.md: replace one bench's section (from its heading to the next `## `), or append it."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def replace_section(heading: str, text: str, doc: Path = DOC) -> None:
    """Put ``text`` (which starts with ``heading``) in place of the section ``heading`` of ``doc``, at its end."""
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    current = pattern.sub("", doc.read_text()).rstrip("\n") + "\n\n"
    doc.write_text(current + text.rstrip("\n") + "\n")


def publish(heading: str, text: str, write: bool, doc: Path = DOC) -> None:
    """Print a bench's section and, with ``write``, put it in ``doc`` (see :func:`replace_section`)."""
    print(text)
    if write:
        replace_section(heading, text, doc)
