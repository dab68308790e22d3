"""The mp-mode rank supervisor: the ranks of a vLLM group restart as one (plugins/module_utils/_vllm_group.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils import _vllm_group as g

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def settings(rank: int, port: int = 29560, **extra: t.Any) -> g.GroupSettings:
    raw = {"rank": rank, "port": port, "peers": [{"name": "spark-head", "ip": "127.0.0.1"}, {"name": "spark-worker1", "ip": "127.0.0.2"}], **extra}
    return g.load_settings(json.dumps(raw))


class Peers:
    """What each peer answers, settable by the test; None: no answer."""

    def __init__(self) -> None:
        self.answers: dict[int, dict[str, t.Any] | None] = {}
        self.asked: list[int] = []

    def fetch(self, peer: g.Peer) -> dict[str, t.Any] | None:
        self.asked.append(peer.rank)
        return self.answers.get(peer.rank)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.on_sleep: t.Callable[[float], None] | None = None

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(self.now)


def supervisor(rank: int, peers: Peers, clock: Clock, said: list[str], **extra: t.Any) -> g.Supervisor:
    spawned: list[subprocess.Popen[bytes]] = []

    def spawn(argv: t.Sequence[str]) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(list(argv), start_new_session=True)
        spawned.append(child)
        return child

    sup = g.Supervisor(settings(rank, **extra), SLEEPER, fetch=peers.fetch, clock=clock, sleep=clock.sleep, spawn=spawn, say=said.append)
    return sup


def test_settings_are_checked() -> None:
    s = settings(1, lost_after=3)
    assert s.me.name == "spark-worker1" and s.leader.ip == "127.0.0.1" and s.lost_after == 3.0
    with pytest.raises(g.GroupConfigError, match="rank 2 of 2"):
        settings(2)
    with pytest.raises(g.GroupConfigError, match="port"):
        settings(0, port=0)
    with pytest.raises(g.GroupConfigError):
        g.load_settings('{"rank": 0, "peers": []}')
    with pytest.raises(g.GroupConfigError, match="need 2 or more"):
        g.load_settings('{"rank": 0, "port": 1, "peers": [{"name": "a", "ip": "1.2.3.4"}]}')


def test_a_watch_tells_a_restart_and_a_silence() -> None:
    clock = Clock()
    watch = g.Watch(g.Peer(1, "w", "10.0.0.2"), clock)
    assert watch.update({"id": "aaaa"}) is None and watch.update({"id": "aaaa"}) is None
    assert watch.update(None) is None and watch.lost(5) is None
    clock.now = 4.9
    assert watch.lost(5) is None
    clock.now = 5.0
    assert "has not answered for 5 s" in str(watch.lost(5))
    assert watch.update({"id": "aaaa"}) is None and watch.lost(5) is None  # back, the same: silence forgotten
    assert "restarted (id aaaa -> bbbb)" in str(watch.update({"id": "bbbb"}))


def test_rank_0_waits_for_the_headless_ranks_then_ends_vllm_when_a_member_goes() -> None:
    peers, clock, said = Peers(), Clock(), []
    sup = supervisor(0, peers, clock, said, report_every=5)

    def world(now: float) -> None:
        if now >= 10:  # the headless rank's supervisor answers, then joins this generation
            peers.answers[1] = {"id": "w1", "joined": sup.status.id, "state": "running"}
        if now >= 30:  # and dies
            peers.answers[1] = None

    clock.on_sleep = world
    assert sup.run() == 1
    assert sup.child is not None and sup.child.poll() is not None  # vLLM was ended
    assert any("waiting 5 s for the headless ranks' supervisors: rank 1 (spark-worker1, 127.0.0.2)" in line for line in said), said
    assert any("every headless rank answers; starting vLLM" in line for line in said)
    assert any("rank 1 (spark-worker1, 127.0.0.2) has not answered for 5 s: ending vLLM so that the group restarts as one" in line for line in said), said
    assert 35 <= clock.now < 37


def test_rank_0_ignores_a_headless_rank_of_an_older_generation_until_it_joins() -> None:
    peers, clock, said = Peers(), Clock(), []
    sup = supervisor(0, peers, clock, said)
    peers.answers[1] = {"id": "old", "joined": "previous-rank-0", "state": "running"}

    def world(now: float) -> None:
        if now >= 8:
            peers.answers[1] = None  # the old headless rank ends (it saw rank 0 change)
        if now >= 10:
            peers.answers[1] = {"id": "new", "joined": sup.status.id, "state": "running"}
        if now >= 20:
            peers.answers[1] = {"id": "newer", "joined": sup.status.id, "state": "running"}

    clock.on_sleep = world
    assert sup.run() == 1
    assert any("rank 1 (spark-worker1, 127.0.0.2) restarted (id new -> newer)" in line for line in said), said
    assert 20 <= clock.now < 22  # the old rank's silence and its new id (8-10 s) did not count


@pytest.mark.parametrize(
    ("after_death", "reason"), [(None, "has not answered for 5 s"), ({"id": "w2", "joined": "", "state": "waiting"}, "restarted (id w1 -> w2)")]
)
def test_a_headless_rank_met_waiting_is_a_member_even_if_it_dies_before_rank_0_sees_it_join(after_death: dict[str, t.Any] | None, reason: str) -> None:
    """Seen as ``waiting`` at the meeting, it can join only this rank 0: its silence or a new id ends the group, even
    when rank 0 never polled it between its joining and its death (the race a busy machine showed)."""
    peers, clock, said = Peers(), Clock(), []
    sup = supervisor(0, peers, clock, said)
    peers.answers[1] = {"id": "w1", "joined": "", "state": "waiting"}
    clock.on_sleep = lambda now: peers.answers.__setitem__(1, after_death) if now >= 3 else None
    assert sup.run() == 1
    assert any(f"rank 1 (spark-worker1, 127.0.0.2) {reason}" in line for line in said), said
    assert clock.now < 10


def test_a_headless_rank_joins_a_running_rank_0_and_ends_vllm_when_it_restarts() -> None:
    peers, clock, said = Peers(), Clock(), []
    sup = supervisor(1, peers, clock, said)
    peers.answers[0] = {"id": "leader-1", "joined": "leader-1", "state": "waiting"}

    def world(now: float) -> None:
        if now >= 3:
            peers.answers[0] = {"id": "leader-1", "joined": "leader-1", "state": "running"}
        if now >= 12:
            peers.answers[0] = {"id": "leader-2", "joined": "leader-2", "state": "waiting"}

    clock.on_sleep = world
    assert sup.run() == 1
    assert sup.status.joined == "leader-1"
    assert any("joined rank 0's id leader-1; starting vLLM" in line for line in said), said
    assert any("rank 0 (spark-head, 127.0.0.1) restarted (id leader-1 -> leader-2)" in line for line in said), said


def test_vllm_exiting_0_ends_the_rank_with_a_failure_for_systemd() -> None:
    """vLLM exits 0 when its engine dies (vllm#48966): the rank still ends, and systemd sees a failure."""
    peers, said = Peers(), []
    peers.answers[1] = {"id": "w1", "joined": "", "state": "waiting"}
    sup = g.Supervisor(settings(0), [sys.executable, "-c", "pass"], fetch=peers.fetch, clock=time.monotonic, sleep=time.sleep, say=said.append)
    assert sup.run() == 1
    assert "vLLM exited with status 0; ending the rank so that the group restarts" in said[-1]


def test_a_stop_ends_vllm_and_exits_0() -> None:
    peers, clock, said = Peers(), Clock(), []
    sup = supervisor(0, peers, clock, said)
    peers.answers[1] = {"id": "w1", "joined": sup.status.id, "state": "running"}
    clock.on_sleep = lambda now: sup.stopping.set() if now >= 5 else None
    assert sup.run() == 0
    assert sup.child is not None and sup.child.poll() is not None
    assert said[-1] == "stopping: ending vLLM"


def test_a_stop_while_meeting_starts_nothing() -> None:
    peers, clock, said = Peers(), Clock(), []
    sup = supervisor(1, peers, clock, said)
    clock.on_sleep = lambda now: sup.stopping.set() if now >= 3 else None
    assert sup.run() == 0 and sup.child is None


def test_a_vllm_that_ignores_sigterm_is_killed() -> None:
    """A rank 0 waiting in the rendezvous ignores SIGTERM for over 40 s (measured): SIGKILL after stop_grace."""
    stubborn = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(120)"]
    sup = g.Supervisor(settings(0, stop_grace=0.5), stubborn, fetch=lambda p: None, say=lambda line: None)
    sup.child = subprocess.Popen(stubborn, start_new_session=True, stdout=subprocess.PIPE)
    assert sup.child.stdout is not None and sup.child.stdout.readline() == b"ready\n"
    start = time.monotonic()
    sup.end_child()
    assert sup.child.poll() == -9 and 0.4 < time.monotonic() - start < 5


def test_two_real_supervisors_restart_as_one_group(tmp_path: Path) -> None:
    """Over HTTP on two loopback addresses: the headless rank's vLLM dies, both ranks end."""
    port = 29000 + (int(time.time() * 1000) % 900)
    base = {"port": port, "poll": 0.1, "lost_after": 1, "stop_grace": 2, "peers": [{"name": "head", "ip": "127.0.0.1"}, {"name": "worker", "ip": "127.0.0.2"}]}
    marker = tmp_path / "worker-vllm.pid"
    worker_vllm = [sys.executable, "-c", f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(120)"]
    results: dict[int, int] = {}
    said: dict[int, list[str]] = {0: [], 1: []}
    sups = {
        0: g.Supervisor(g.load_settings(json.dumps({**base, "rank": 0})), SLEEPER, fetch=g.http_fetch(port, 0.5), say=said[0].append),
        1: g.Supervisor(g.load_settings(json.dumps({**base, "rank": 1})), worker_vllm, fetch=g.http_fetch(port, 0.5), say=said[1].append),
    }
    servers = [g.serve_status(sup.settings, sup.status) for sup in sups.values()]
    threads = [threading.Thread(target=lambda r=r: results.__setitem__(r, sups[r].run())) for r in sups]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 20
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), said
        # Rank 0 starts its own vLLM as the worker starts its one: wait for it (a busy machine is slow), within bounds.
        while not (sups[0].status.state == "running" and sups[1].status.joined == sups[0].status.id) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sups[0].status.state == "running" and sups[1].status.joined == sups[0].status.id, said
        subprocess.run(["kill", "-KILL", marker.read_text()], check=True)  # the headless rank's vLLM dies
        threads[1].join(15)
        # The dead rank's supervisor is gone with it (systemd would restart it): rank 0 hears nothing any more.
        servers[1].shutdown()
        servers[1].server_close()
        threads[0].join(15)
        assert results == {0: 1, 1: 1}, (results, said)
        assert any("rank 1 (worker, 127.0.0.2) has not answered" in line for line in said[0]), said[0]
    finally:
        for sup in sups.values():
            sup.stopping.set()
        for server in servers:
            server.shutdown()
