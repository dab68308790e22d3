"""bench/benchmarks_doc.py: replacing one section of docs/benchmarks.md, as every bench does with --write."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.sparkops.inference.bench import benchmarks_doc as bd

HEADING = "## Snapshot verification (hf_snapshot)"
DOC = """# Benchmarks

Intro.

## Ray cluster formation

Ray text.

## Snapshot verification (hf_snapshot)

Old figures.

### A subsection of it

Old detail.

## Later section

Later text.
"""


def test_section_replaced_replaces_only_that_section() -> None:
    out = bd.section_replaced(DOC, HEADING, "New figures.\n")
    assert out == DOC.replace("Old figures.\n\n### A subsection of it\n\nOld detail.\n", "New figures.\n")


def test_section_replaced_is_idempotent() -> None:
    once = bd.section_replaced(DOC, HEADING, "New.")
    assert bd.section_replaced(once, HEADING, "New.") == once


def test_section_replaced_last_section() -> None:
    doc = "# B\n\n## Other\n\nx\n\n" + HEADING + "\n\nold\n"
    assert bd.section_replaced(doc, HEADING, "new") == "# B\n\n## Other\n\nx\n\n" + HEADING + "\n\nnew\n"


def test_section_replaced_appends_when_missing() -> None:
    doc = "# B\n\n## Other\n\nx\n"
    assert bd.section_replaced(doc, HEADING, "new\n") == doc + "\n" + HEADING + "\n\nnew\n"
    assert bd.section_replaced("", HEADING, "new") == HEADING + "\n\nnew\n"


def test_section_replaced_ignores_headings_in_code_fences() -> None:
    doc = HEADING + "\n\n```md\n## not a heading\n```\n\nold\n\n## Next\n\nkept\n"
    assert bd.section_replaced(doc, HEADING, "new") == HEADING + "\n\nnew\n\n## Next\n\nkept\n"


def test_section_replaced_needs_the_exact_heading() -> None:
    doc = "## Snapshot verification (hf_snapshot) old\n\nx\n"
    assert bd.section_replaced(doc, HEADING, "new").startswith(doc)


def test_replace_section_writes_in_place_from_a_text_with_its_heading(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text(DOC)
    bd.replace_section(HEADING, HEADING + "\n\nNew figures.\n", doc)
    assert doc.read_text() == DOC.replace("Old figures.\n\n### A subsection of it\n\nOld detail.\n", "New figures.\n")


def test_ratio_rows_give_each_time_present_and_its_ratio_to_the_base_in_case_order() -> None:
    rows = bd.ratio_rows({"b": 5.0, "a": 2.5, "base": 2.0}, [("base", "the base"), ("missing", "x"), ("a", "A"), ("b", "B")], "base")
    assert rows == ["| the base | 2.0 | 1.00 |", "| A | 2.5 | 1.25 |", "| B | 5.0 | 2.50 |"]
