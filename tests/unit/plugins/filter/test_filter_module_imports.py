"""Every filter file imports the collection's module utils inside its filter, not at the top: ansible-core 2.19 loads
every filter file of the collection in each task's worker to find one filter (docs/architecture.md), so an import at
the top would put that module's compiling back into every worker."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FILTERS = sorted((Path(__file__).resolve().parents[4] / "plugins" / "filter").glob("*.py"))


def top_level_collection_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ansible_collections.sparkops.inference.")
    ]


def test_the_check_sees_a_top_level_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from ansible_collections.sparkops.inference.plugins.plugin_utils._fabric_env import fabric_env\n")
    assert top_level_collection_imports(sample) == ["ansible_collections.sparkops.inference.plugins.plugin_utils._fabric_env"]


@pytest.mark.parametrize("path", FILTERS, ids=[p.name for p in FILTERS])
def test_no_filter_file_imports_the_collections_code_at_the_top(path: Path) -> None:
    assert top_level_collection_imports(path) == [], f"{path.name}: import these inside the filter function"
