"""The serve scenario's tests in the order its lab lives. test_deploy_via_awx.py runs first: AWX's Deploy job template
deploys the fresh nodes (the scenario's deploy: it has no converge step). Then every node reboots at once
(side_effect.yml, once, before the first other test), and the other tests check what came back with no Ansible run.
test_engine_ray.py comes after them (it kills the engine's pieces and switches the backend to mp and back), and
test_upgrade_and_teardown.py last: it upgrades, then tears down."""

from __future__ import annotations

import os
import sys
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(os.environ["RAY_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import playbook, tail  # noqa: E402
from sparklab.serving import liveness_probe_held  # noqa: E402

FIRST = "test_deploy_via_awx.py"
ORDER = {FIRST: 0, "test_engine_ray.py": 2, "test_upgrade_and_teardown.py": 3}  # any other file: 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Deploy first, the engine's kills and switches then upgrade and teardown last; the rest in pytest's order (a
    stable sort keeps it)."""
    items.sort(key=lambda item: ORDER.get(item.path.name, 1))


@pytest.fixture(scope="session")
def rebooted() -> None:
    """Every node rebooted at once through podman (side_effect.yml), once."""
    run = playbook("molecule/serve/side_effect.yml")
    assert run.returncode == 0, tail(run)


@pytest.fixture(autouse=True)
def _reboot_after_the_deploy(request: pytest.FixtureRequest) -> None:
    """Every test but the deploy's runs after the reboot."""
    if request.node.path.name != FIRST:
        request.getfixturevalue("rebooted")


@pytest.fixture
def no_liveness_probe() -> t.Iterator[None]:
    """The liveness probe held off while a load generator runs (sparklab.serving.liveness_probe_held)."""
    with liveness_probe_held(os.environ["RAY_LAB_HEAD"]):
        yield
