"""The engine scenario's verifier in parts (tools/molecule_split.sh, make test's stages): SPARKOPS_VERIFY_FILES names
the test files a part runs (space-separated file names); unset or empty, every test file runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = os.environ.get("SPARKOPS_VERIFY_FILES", "").split()
    if not wanted:
        return
    unknown = set(wanted) - {path.name for path in Path(__file__).parent.glob("test_*.py")}
    if unknown:
        raise pytest.UsageError(f"SPARKOPS_VERIFY_FILES names no test file of {Path(__file__).parent}: {', '.join(sorted(unknown))}")
    kept = [item for item in items if item.path.name in wanted]
    config.hook.pytest_deselected(items=[item for item in items if item.path.name not in wanted])
    items[:] = kept
