# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vLLM liveness probe: its decisions run by run, and whole runs against a local OpenAI-compatible server with a
fake systemctl (what it restarts, when it stops acting), the key read from its file and never shown."""

from __future__ import annotations

import json
import subprocess
import sys
import typing as t
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._serve_liveness import (
    Decision,
    EngineCounters,
    LivenessError,
    ProbeResult,
    Settings,
    State,
    UnitStatus,
    decide,
    load_state,
    run_once,
)
from fake_openai import MODEL, FakeProxy, FakeVllm, Reply, point_proxies_at
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

pytestmark = pytest.mark.usefixtures("no_proxy")
REPO = Path(__file__).resolve().parents[4]
KEY = "sk-liveness-0123456789abcdef"


def settings(**extra: t.Any) -> Settings:
    raw = {
        "url": "http://127.0.0.1:8000",
        "model": MODEL,
        "unit": "sparkops-vllm.service",
        "interval_s": 5,
        "failures": 3,
        "max_restarts_per_hour": 2,
        "timeout_s": 2,
        "startup_grace_s": 600,
    }
    raw.update(extra)
    return Settings.from_dict(raw)


ACTIVE = UnitStatus("active", "inv-1", 100.0)
OK = ProbeResult(True, "ready", "health: HTTP 200; models: lists tiny-moe; completion: HTTP 200: 4 tokens")
HUNG = ProbeResult(False, "timeout", "health: HTTP 200; models: lists tiny-moe; completion: timed out after 2 s", timed_out=True)


def step(state: State, probe: ProbeResult | None, status: UnitStatus = ACTIVE, now: float = 1000.0, mono: float = 10_000.0, **kwargs: t.Any) -> Decision:
    return decide(state, status, probe, kwargs.pop("conf", None) or settings(), now, mono, **kwargs)


# -- Decisions ----------------------------------------------------------------------------------------------------------
def test_a_unit_that_is_not_active_is_not_probed_and_nothing_is_counted() -> None:
    state = State(failures=2)
    decision = step(state, None, UnitStatus("activating", "inv-2", None))
    assert decision == Decision("none", "sparkops-vllm.service is activating: not probed")
    assert state.failures == 0


def test_k_failures_in_a_row_restart_the_group_once_and_an_answer_resets_the_count() -> None:
    state = State(ready_invocation="inv-1")
    assert [step(state, HUNG).action for _probe in range(2)] == ["none", "none"]
    assert state.failures == 2
    assert step(state, OK).message.endswith("(after 2 failed probe(s))") and state.failures == 0
    actions = [step(state, HUNG, now=2000.0 + i) for i in range(3)]
    assert [d.action for d in actions] == ["none", "none", "restart"]
    assert actions[1].message.startswith("probe failed (2 of 3 in a row): health: HTTP 200")
    assert actions[2].message.endswith("restarting sparkops-vllm.service")
    assert (state.failures, state.restarts, state.ready_invocation) == (0, [2002.0], "")


def test_a_loading_engine_is_not_counted_within_the_grace_and_counted_after_it() -> None:
    state = State()  # never answered in this invocation: the engine loads
    loading = step(state, HUNG, mono=100.0 + 599)
    assert loading.action == "none" and "not answering yet, 599 s after sparkops-vllm.service started" in loading.message
    assert state.failures == 0
    past = [step(state, HUNG, mono=100.0 + 601 + i).action for i in range(3)]
    assert past == ["none", "none", "restart"]  # a load that never ends is a wedge too


def test_a_timed_out_probe_while_the_engine_still_generates_is_busy_not_dead() -> None:
    state = State(ready_invocation="inv-1")
    busy = [ProbeResult(False, "timeout", "completion: timed out after 2 s", True, tokens) for tokens in (100.0, 250.0, 400.0, 600.0)]
    assert [step(state, probe).action for probe in busy] == ["none"] * 4
    assert state.failures == 1  # the first had nothing to compare with; then each grew
    stuck = ProbeResult(False, "timeout", "completion: timed out after 2 s", True, 600.0)
    assert [step(state, stuck).action for _probe in range(2)] == ["none", "restart"]


def test_at_most_m_restarts_an_hour_then_it_stops_acting_and_says_so_until_someone_restarts_vllm() -> None:
    conf = settings(failures=1, max_restarts_per_hour=2)
    state = State(ready_invocation="inv-1")
    assert step(state, HUNG, conf=conf, now=0.0).action == "restart"
    state.ready_invocation = "inv-2"
    assert step(state, HUNG, UnitStatus("active", "inv-2", 1.0), conf=conf, now=600.0).action == "restart"
    state.ready_invocation = "inv-3"
    wedged = UnitStatus("active", "inv-3", 2.0)
    gave_up = step(state, HUNG, wedged, conf=conf, now=1200.0)
    assert gave_up.action == "give_up"
    assert "2 restart(s) in the last hour reached vllm_serve_liveness_max_restarts_per_hour (2): stopped acting" in gave_up.message
    later = step(state, HUNG, wedged, conf=conf, now=1300.0)
    assert later.action == "none" and later.message.startswith("stopped acting: 2 restart(s) in the last hour")
    # Started again by someone else (a new invocation): it acts again.
    state.ready_invocation = "inv-4"
    assert step(state, OK, UnitStatus("active", "inv-4", 3.0), conf=conf, now=1400.0).message.startswith("serving")
    assert state.gave_up_invocation == ""


def test_restarts_older_than_an_hour_no_longer_count() -> None:
    conf = settings(failures=1, max_restarts_per_hour=1)
    state = State(ready_invocation="inv-1", restarts=[0.0])
    assert step(state, HUNG, conf=conf, now=3599.0).action == "give_up"
    state = State(ready_invocation="inv-1", restarts=[0.0])
    assert step(state, HUNG, conf=conf, now=3601.0).action == "restart"


def test_ray_mode_restarts_the_ray_head_when_the_cluster_lost_a_node() -> None:
    conf = settings(failures=1, ray_head_unit="sparkops-ray-head.service", gate_settings="/etc/sparkops/vllm-gate.json")
    lost = step(State(ready_invocation="inv-1"), HUNG, conf=conf, cluster_complete=lambda: False)
    assert lost.action == "restart_ray" and "the Ray cluster lost a node: restarting sparkops-ray-head.service" in lost.message
    assert step(State(ready_invocation="inv-1"), HUNG, conf=conf, cluster_complete=lambda: True).action == "restart"


def test_the_ray_cluster_is_asked_only_when_a_restart_is_due() -> None:
    """Asking Ray (a `ray` CLI call) is for the restart's choice only: not on a probe that passes, fails short of the
    limit, or finds the hour's restarts used up."""
    conf = settings(failures=2, max_restarts_per_hour=1, ray_head_unit="sparkops-ray-head.service")
    asked: list[bool] = []

    def cluster() -> bool:
        asked.append(True)
        return True

    state = State(ready_invocation="inv-1")
    assert step(state, OK, conf=conf, cluster_complete=cluster).action == "none"
    assert step(state, HUNG, conf=conf, cluster_complete=cluster).action == "none" and asked == []
    assert step(state, HUNG, conf=conf, cluster_complete=cluster).action == "restart" and asked == [True]
    state = State(ready_invocation="inv-1", restarts=[999.0], failures=1)
    assert step(state, HUNG, conf=conf, cluster_complete=cluster).action == "give_up" and asked == [True]


def test_requests_running_with_tokens_moving_serve_with_no_completion_of_its_own() -> None:
    state = State(ready_invocation="inv-1", failures=2)
    first = step(state, None, engine=EngineCounters(running=2, tokens=100), now=1000.0)
    assert first.action == "none" and first.message == "serving: 2 request(s) running, tokens moving (vLLM's counters)"
    assert step(state, None, engine=EngineCounters(running=2, tokens=180), now=1005.0).action == "none"
    assert (state.failures, state.progress_tokens, state.progress_at) == (0, 180, 1005.0)
    assert state.last_probe["state"] == "generating" and state.last_probe["ok"] is True


def test_requests_running_with_no_token_for_the_wedge_time_restart_the_group_at_once() -> None:
    """vllm#37729: a wedged engine keeps its requests "running" while its counters stand still. Not a wedge before
    wedge_after_s (a long step); at it, the restart comes at once, not after `failures` probes."""
    conf = settings(wedge_after_s=20)
    state = State(ready_invocation="inv-1")
    stuck = EngineCounters(running=1, tokens=500)
    assert step(state, None, engine=stuck, now=1000.0, conf=conf).message.startswith("serving: 1 request(s) running, tokens moving")
    waiting = step(state, None, engine=stuck, now=1010.0, conf=conf)
    assert waiting.action == "none" and "no token generated or prompt processed for 10 s" in waiting.message
    assert waiting.message.endswith("vllm_serve_liveness_wedge_after_s 20 s): not yet a wedge")
    assert state.last_probe["state"] == "stalled" and state.failures == 0
    wedged = step(state, None, engine=stuck, now=1020.0, conf=conf)
    assert wedged.action == "restart" and wedged.message.startswith("wedged: 1 request(s) running and no token generated")
    assert wedged.message.endswith("restarting sparkops-vllm.service") and state.restarts == [1020.0]
    assert state.last_probe["state"] == "wedged" and state.progress_tokens is None


def test_the_wedge_counts_from_the_last_progress_and_an_idle_engine_is_probed_with_a_completion() -> None:
    conf = settings(wedge_after_s=20)
    state = State(ready_invocation="inv-1")
    assert step(state, OK, engine=EngineCounters(running=0, tokens=40), now=1000.0, conf=conf).message.startswith("serving: health")
    assert (state.progress_tokens, state.progress_at) == (40, 1000.0)  # idle: the clock runs from now
    step(state, None, engine=EngineCounters(running=1, tokens=40), now=1015.0, conf=conf)  # a request came, nothing yet
    assert step(state, None, engine=EngineCounters(running=1, tokens=41), now=1030.0, conf=conf).action == "none"  # moved
    assert step(state, None, engine=EngineCounters(running=1, tokens=41), now=1045.0, conf=conf).action == "none"  # 15 s
    assert step(state, None, engine=EngineCounters(running=1, tokens=41), now=1050.0, conf=conf).action == "restart"  # 20 s


def test_a_wedge_within_the_hour_s_restarts_gives_up_as_failed_probes_do() -> None:
    conf = settings(wedge_after_s=5, max_restarts_per_hour=1)
    state = State(ready_invocation="inv-1", restarts=[900.0])
    step(state, None, engine=EngineCounters(running=3, tokens=7), now=1000.0, conf=conf)
    decision = step(state, None, engine=EngineCounters(running=3, tokens=7), now=1006.0, conf=conf)
    assert decision.action == "give_up" and "1 restart(s) in the last hour reached vllm_serve_liveness_max_restarts_per_hour" in decision.message
    assert state.gave_up_invocation == "inv-1"


def test_a_wedged_ray_cluster_that_lost_a_node_restarts_ray_s_head() -> None:
    conf = settings(wedge_after_s=5, ray_head_unit="sparkops-ray-head.service")
    state = State(ready_invocation="inv-1")
    step(state, None, engine=EngineCounters(running=1, tokens=7), now=1000.0, conf=conf)
    decision = step(state, None, engine=EngineCounters(running=1, tokens=7), now=1006.0, conf=conf, cluster_complete=lambda: False)
    assert decision.action == "restart_ray" and "the Ray cluster lost a node" in decision.message


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"interval_s": 0}, "vllm_serve_liveness_interval_s must be a number of seconds above 0, got 0"),
        ({"failures": 0}, "vllm_serve_liveness_failures must be a whole number of at least 1, got 0"),
        ({"failures": 1.5}, "vllm_serve_liveness_failures must be a whole number of at least 1, got 1.5"),
        ({"max_restarts_per_hour": True}, "vllm_serve_liveness_max_restarts_per_hour must be a whole number"),
        ({"timeout_s": float("nan")}, "vllm_serve_liveness_timeout_s must be a number of seconds above 0"),
        ({"startup_grace_s": "600"}, "vllm_serve_liveness_startup_grace_s must be a number of seconds above 0"),
        ({"wedge_after_s": -1}, "vllm_serve_liveness_wedge_after_s must be a number of seconds above 0, got -1"),
        ({"url": "ftp://x"}, "is not an http:// or https:// URL"),
    ],
)
def test_settings_that_make_no_sense_are_refused_naming_the_variable(extra: dict[str, t.Any], message: str) -> None:
    with pytest.raises(LivenessError) as caught:
        settings(**extra)
    assert message in str(caught.value)


def test_a_damaged_state_file_starts_afresh(tmp_path: Path) -> None:
    (tmp_path / "state.json").write_text('{"failures": "many", "restarts": [1e400]}')
    assert load_state(str(tmp_path / "state.json")) == State()
    (tmp_path / "state.json").write_text("[not json")
    assert load_state(str(tmp_path / "state.json")) == State()


# -- Whole runs: a local server, a fake systemctl -------------------------------------------------------------------
class FakeSystemd:
    """systemctl show/restart for one unit: a restart starts a new invocation."""

    def __init__(self, state: str = "active") -> None:
        self.state = state
        self.invocation = 1
        self.calls: list[list[str]] = []

    def __call__(self, argv: t.Sequence[str]) -> tuple[int, str]:
        self.calls.append(list(argv))
        if argv[0] == "show":
            return 0, f"ActiveState={self.state}\nInvocationID=inv-{self.invocation}\nActiveEnterTimestampMonotonic=1000000\n"
        if argv[0] == "restart":
            self.invocation += 1
            return 0, ""
        return 1, f"unexpected {argv}"

    def restarts(self) -> list[list[str]]:
        return [call for call in self.calls if call[0] == "restart"]


@pytest.fixture
def server() -> Iterator[FakeVllm]:
    fake = FakeVllm()
    fake.api_key = KEY
    fake.listen()
    try:
        yield fake
    finally:
        fake.close()


def run_settings(tmp_path: Path, server: FakeVllm, **extra: t.Any) -> Settings:
    (tmp_path / "key").write_text(KEY + "\n")
    return settings(url=server.url, api_key_file=str(tmp_path / "key"), state_file=str(tmp_path / "state" / "liveness.json"), timeout_s=0.5, **extra)


def runs(conf: Settings, systemd: FakeSystemd, said: list[str], step: int) -> t.Callable[[], Decision]:
    """One run of the probe a call, the wall clock ``step`` seconds on from 1000 each time, its lines into ``said``."""
    clock = iter(range(1000, 2000, step))
    return lambda: run_once(conf, run=systemd, clock=lambda: float(next(clock)), monotonic=lambda: 5000.0, log=said.append)


def test_a_hung_completion_gets_the_unit_restarted_after_k_runs_and_the_key_is_never_shown(tmp_path: Path, server: FakeVllm) -> None:
    conf = run_settings(tmp_path, server, failures=2)
    systemd = FakeSystemd()
    said: list[str] = []
    once = runs(conf, systemd, said, step=10)

    assert once().message.startswith("serving: ")  # the key from its file: /v1/ answered (the fake refuses without it)
    server.set("POST", "/v1/chat/completions", Reply(200, b"{}", delay=3))  # the engine hangs; /health still 200
    assert [once().action for _probe in range(2)] == ["none", "restart"]
    assert systemd.restarts() == [["restart", "--no-block", "sparkops-vllm.service"]]
    assert "completion: timed out after 0.5 s" in said[-1]
    saved = json.loads(Path(conf.state_file).read_text())
    assert saved["restarts"] == [1020.0] and saved["failures"] == 0 and saved["last_probe"]["ok"] is False
    assert oct(Path(conf.state_file).stat().st_mode & 0o777) == "0o644"
    assert KEY not in "\n".join(said) + Path(conf.state_file).read_text()


def test_an_echoed_key_is_masked_in_the_journal_line(tmp_path: Path, server: FakeVllm) -> None:
    conf = run_settings(tmp_path, server)
    server.set("POST", "/v1/chat/completions", Reply(500, {"error": f"bad key {KEY}"}))
    said: list[str] = []
    run_once(conf, run=FakeSystemd(), log=said.append)
    assert "completion: HTTP 500" in said[0] and KEY not in said[0] and "********" in said[0]


def test_the_probe_never_goes_through_a_proxy_of_the_environment(tmp_path: Path, server: FakeVllm, monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = FakeProxy()
    try:
        point_proxies_at(monkeypatch, proxy.url)
        said: list[str] = []
        run_once(run_settings(tmp_path, server), run=FakeSystemd(), log=said.append)
        assert said[0].startswith("serving: ") and proxy.seen() == []
    finally:
        proxy.close()


def test_a_stopped_unit_is_left_alone(tmp_path: Path, server: FakeVllm) -> None:
    systemd = FakeSystemd("inactive")
    said: list[str] = []
    run_once(run_settings(tmp_path, server, failures=1), run=systemd, log=said.append)
    assert said == ["sparkops-vllm.service is inactive: not probed"] and systemd.restarts() == [] and server.paths() == []


def test_the_probe_runs_on_a_node_without_ansible(tmp_path: Path, server: FakeVllm) -> None:
    """On a node the liveness runs the collection's module utils with the system's Python, no Ansible installed."""
    lib = REPO / ".collections"
    script = f"""
import sys
class NoAnsible:
    def find_spec(self, name, path=None, target=None):
        if name == "ansible" or name.startswith("ansible."):
            raise ImportError("no Ansible on this node")
sys.meta_path.insert(0, NoAnsible())
sys.path.insert(0, {str(lib)!r})
from ansible_collections.sparkops.inference.plugins.module_utils import _serve_liveness
sys.exit(_serve_liveness.main([sys.argv[1]]))
"""
    conf = {"url": server.url, "model": MODEL, "unit": "sparkops-vllm.service", "interval_s": 5, "failures": 1, "max_restarts_per_hour": 1,
            "timeout_s": 2, "startup_grace_s": 60, "api_key_file": str(tmp_path / "key"), "state_file": str(tmp_path / "state.json")}  # fmt: skip
    (tmp_path / "key").write_text(KEY)
    (tmp_path / "settings.json").write_text(json.dumps(conf))
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "systemctl").write_text("#!/bin/sh\nprintf 'ActiveState=active\\nInvocationID=abc\\nActiveEnterTimestampMonotonic=1\\n'\n")
    (fake_bin / "systemctl").chmod(0o755)
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "settings.json")], capture_output=True, text=True, check=False,
                          env={"PATH": f"{fake_bin}:/usr/bin:/bin"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("serving: health: HTTP 200"), proc.stdout + proc.stderr
    assert json.loads((tmp_path / "state.json").read_text())["ready_invocation"] == "abc"


def test_a_wedge_seen_in_vllm_s_counters_restarts_the_unit_with_no_completion_sent(tmp_path: Path, server: FakeVllm) -> None:
    """The server's /metrics as prometheus_client writes vLLM's (0.32 names and labels): a request running and the
    token counters frozen for the wedge time; the probe restarts the unit without sending a completion of its own."""
    registry = CollectorRegistry()
    labels = ["model_name", "engine"]
    running = Gauge("vllm:num_requests_running", "doc", labels, registry=registry).labels(MODEL, "0")
    generated = Counter("vllm:generation_tokens", "doc", labels, registry=registry).labels(MODEL, "0")
    Counter("vllm:prompt_tokens", "doc", labels, registry=registry).labels(MODEL, "0").inc(32)
    server.set("GET", "/metrics", lambda _seen: Reply(200, generate_latest(registry)))
    conf = run_settings(tmp_path, server, wedge_after_s=10)
    systemd = FakeSystemd()
    said: list[str] = []
    once = runs(conf, systemd, said, step=5)

    running.set(1)
    generated.inc(16)
    completions = server.paths().count("POST /v1/chat/completions")
    assert [once().action for _run in range(3)] == ["none", "none", "restart"]  # at 1000, 1005, 1010: frozen 10 s
    assert said[-1].startswith("wedged: 1 request(s) running and no token generated or prompt processed for 10 s")
    assert systemd.restarts() == [["restart", "--no-block", "sparkops-vllm.service"]]
    assert server.paths().count("POST /v1/chat/completions") == completions  # none of its own
    running.set(0)
    assert once().message.startswith("serving: health")  # idle again: the completion decides
