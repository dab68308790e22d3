"""The Molecule scenarios' view of the head's API (sparklab.scenario.Api): serves_within() asks until vLLM serves, and
gives up saying so after its time."""

from __future__ import annotations

import pytest
from sparklab import scenario

API = scenario.Api("10.89.200.51", "sk-test", "tiny-moe")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A clock that moves only when the code under test sleeps; the sleeps it took."""
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(scenario.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(scenario.time, "sleep", sleep)
    return slept


def test_serves_within_is_true_once_a_completion_comes_back(monkeypatch: pytest.MonkeyPatch, clock: list[float]) -> None:
    answers = iter([False, False, True])
    asked: list[float] = []

    def serves(self: scenario.Api, timeout: float = 5) -> bool:
        asked.append(timeout)
        return next(answers)

    monkeypatch.setattr(scenario.Api, "serves", serves)
    assert API.serves_within(180, timeout=30)
    assert asked == [30, 30, 30] and clock == [2, 2]


def test_serves_within_is_false_when_nothing_serves_in_time(monkeypatch: pytest.MonkeyPatch, clock: list[float]) -> None:
    asked: list[float] = []

    def serves(self: scenario.Api, timeout: float = 5) -> bool:
        asked.append(timeout)
        return False

    monkeypatch.setattr(scenario.Api, "serves", serves)
    assert not API.serves_within(10)
    assert asked == [10] * 6 and sum(clock) == 10  # every 2 s for 10 s, and one last try


def test_role_var_reads_the_roles_own_files() -> None:
    assert scenario.role_var("vllm_serve", "__vllm_serve_liveness_state") == "/var/lib/sparkops/vllm-liveness.json"  # vars/main.yml
    assert scenario.role_var("vllm_serve", "vllm_serve_port") == "{{ __vllm_serve_deployment.port }}"  # defaults/main.yml
    with pytest.raises(KeyError, match="roles/vllm_serve: no variable vllm_serve_nothing"):
        scenario.role_var("vllm_serve", "vllm_serve_nothing")
