"""The engine scenario's test order and fixtures: the image tests last (they end with the teardown), the liveness probe
held off while a load generator runs."""

from __future__ import annotations

import os
import sys
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(os.environ["ENGINE_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.serving import liveness_probe_held  # noqa: E402

HEAD = os.environ["ENGINE_LAB_HEAD"]
LAST = "test_engine_image.py"  # it ends with the teardown: whatever runs in one verify with it runs before it


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The image tests last, the rest in pytest's order (a stable sort keeps it): `molecule test -s engine` (bench/
    engine_recovery.py, bench/backends.py) runs every file in one verify; make test runs them in parts
    (tools/test_stages.py), the image part last."""
    items.sort(key=lambda item: item.path.name == LAST)


@pytest.fixture
def no_liveness_probe() -> t.Iterator[None]:
    """The liveness probe held off while a load generator runs (sparklab.serving.liveness_probe_held)."""
    with liveness_probe_held(HEAD):
        yield
