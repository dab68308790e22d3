"""docs/benchmarks.md: replace one bench's section (from its heading to the next `## `), or append it."""

from __future__ import annotations

import typing as t
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def section_replaced(document: str, heading: str, body: str) -> str:
    """``document`` with the level-2 section ``heading`` (up to the next ``## `` heading outside a code fence, or
    the end) replaced by ``heading``, a blank line and ``body``; appended at the end when there is no such section."""
    section = f"{heading}\n\n{body.strip(chr(10))}\n"
    lines = document.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip("\r\n") == heading), None)
    if start is None:
        return (document.rstrip("\n") + "\n\n" if document.strip() else "") + section
    end, fenced = len(lines), False
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("```"):
            fenced = not fenced
        elif not fenced and lines[i].startswith("## "):
            end = i
            break
    return "".join(lines[:start]) + section + ("\n" if end < len(lines) else "") + "".join(lines[end:])


def replace_section(heading: str, text: str, doc: Path = DOC) -> None:
    """Put ``text`` (which starts with ``heading``) in place of the section ``heading`` of ``doc`` (see
    :func:`section_replaced`)."""
    body = text[len(heading) :] if text.startswith(heading) else text
    doc.write_text(section_replaced(doc.read_text(), heading, body))


def publish(heading: str, text: str, write: bool, doc: Path = DOC) -> None:
    """Print a bench's section and, with ``write``, put it in ``doc`` (see :func:`replace_section`)."""
    print(text)
    if write:
        replace_section(heading, text, doc)


def ratio_rows(timings: t.Mapping[str, float], cases: t.Iterable[tuple[str, str]], base: str) -> list[str]:
    """Markdown table rows ``| label | seconds | ratio to timings[base] |`` for each (key, label) of ``cases`` that
    ``timings`` holds, in that order."""
    return [f"| {label} | {timings[key]:.1f} | {timings[key] / timings[base]:.2f} |" for key, label in cases if key in timings]
