# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One vLLM rank of an mp-mode group under systemd, restarted as one group with the other ranks.

vLLM's own multi-node mode (``--nnodes/--node-rank/--master-addr``, ``--headless`` on ranks > 0) has no liveness
link between rank 0 and the headless ranks (vLLM 0.30 ``entrypoints/cli/serve.py:215-232``: a headless rank waits
only for its local workers; ``v1/executor/multiproc_executor.py:298-332``). Measured with the real engine: a headless
rank that dies leaves rank 0's ``/health`` at 200 until the next request gets HTTP 500; a restarted rank 0 waits in
the rendezvous for a peer that never rejoins, its port closed, ignoring SIGTERM for over 40 s. So a per-node
``Restart=`` alone never brings the group back.

This supervisor is each rank unit's main process (``ExecStart=sparkops-vllm-rank SETTINGS -- vllm serve ...``). It
publishes on the fabric a small JSON document (``GET /`` on ``listen_ip:port``): its rank, a fresh **id** per start,
the rank-0 id it **joined** and its state. The rules:

* rank 0 waits until every headless rank's supervisor answers, then starts vLLM (state ``running``); a headless
  rank waits until rank 0 is ``running``, joins that id, then starts vLLM;
* rank 0 counts a headless rank as a member once it reports having joined rank 0's id, or from the start when it
  answered the meeting as ``waiting`` (a fresh supervisor: the only rank 0 it can join is this one, and it may die
  before rank 0 sees it join); when a member goes away (no answer for ``lost_after`` seconds) or comes back with
  another id, rank 0 ends its vLLM and exits;
* a headless rank ends its vLLM and exits when rank 0 goes away or comes back with another id;
* whenever vLLM exits (whatever its status: vLLM exits 0 when its engine dies), the supervisor ends what is left of
  it and exits.

systemd (``Restart=always``, within the unit's start limit) then starts the rank again, and the group meets anew:
any rank dying or restarting brings every rank back, with no Ansible run and no rank left in a rendezvous. Ending
vLLM is SIGTERM to its process group, then SIGKILL after ``stop_grace`` seconds. A stop by the operator
(``systemctl stop``) ends the rank and it stays stopped; the other ranks restart and wait for it.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import typing as t
import uuid
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPException
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class GroupConfigError(ValueError):
    """The settings file is unreadable or wrong."""


@dataclass(frozen=True)
class Peer:
    rank: int
    name: str  # inventory host, for messages
    ip: str


@dataclass(frozen=True)
class GroupSettings:
    rank: int
    peers: tuple[Peer, ...]  # every rank, rank 0 first
    port: int
    poll: float = 1.0
    lost_after: float = 5.0
    stop_grace: float = 10.0
    report_every: float = 30.0

    @property
    def me(self) -> Peer:
        return self.peers[self.rank]

    @property
    def leader(self) -> Peer:
        return self.peers[0]

    @property
    def followers(self) -> tuple[Peer, ...]:
        return self.peers[1:]


def load_settings(text: str) -> GroupSettings:
    """Parse the JSON the role writes: ``{"rank", "port", "peers": [{"name", "ip"}, ...], "poll", ...}``."""
    try:
        raw = json.loads(text)
        peers = tuple(Peer(rank=i, name=str(p["name"]), ip=str(p["ip"])) for i, p in enumerate(raw["peers"]))
        settings = GroupSettings(
            rank=int(raw["rank"]),
            peers=peers,
            port=int(raw["port"]),
            poll=float(raw.get("poll", 1.0)),
            lost_after=float(raw.get("lost_after", 5.0)),
            stop_grace=float(raw.get("stop_grace", 10.0)),
            report_every=float(raw.get("report_every", 30.0)),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise GroupConfigError(f"group settings: {exc!r}") from exc
    if not 0 <= settings.rank < len(peers) or len(peers) < 2:
        raise GroupConfigError(f"group settings: rank {settings.rank} of {len(peers)} peers (need 2 or more ranks)")
    if not 0 < settings.port < 65536:
        raise GroupConfigError(f"group settings: port {settings.port}")
    return settings


@dataclass
class Status:
    """What this supervisor publishes."""

    rank: int
    id: str
    joined: str = ""
    state: str = "waiting"  # waiting | running | stopping

    def document(self) -> dict[str, t.Any]:
        return {"rank": self.rank, "id": self.id, "joined": self.joined, "state": self.state}


Fetch = t.Callable[[Peer], t.Optional[t.Dict[str, t.Any]]]  # noqa: UP006, UP045 (evaluated at run time on the nodes)


def http_fetch(port: int, timeout: float = 1.0) -> Fetch:
    """A fetcher of a peer's status document (None when it does not answer)."""

    def fetch(peer: Peer) -> dict[str, t.Any] | None:
        connection = HTTPConnection(peer.ip, port, timeout=timeout)
        try:
            connection.request("GET", "/")
            response = connection.getresponse()
            if response.status != 200:
                return None
            document = json.loads(response.read().decode())
        except (HTTPException, OSError, ValueError):
            return None
        finally:
            connection.close()
        return document if isinstance(document, dict) else None

    return fetch


class Watch:
    """One peer's answers over time: the id it was first seen with, and since when it has not answered."""

    def __init__(self, peer: Peer, clock: t.Callable[[], float]) -> None:
        self.peer = peer
        self.clock = clock
        self.id = ""
        self.silent_since: float | None = None

    def update(self, document: dict[str, t.Any] | None) -> str | None:
        """Feed one answer; return why the peer counts as gone or restarted (None while it is the same)."""
        now = self.clock()
        if document is None:
            if self.silent_since is None:
                self.silent_since = now
            return None
        self.silent_since = None
        seen = str(document.get("id", ""))
        if self.id and seen != self.id:
            return f"rank {self.peer.rank} ({self.peer.name}, {self.peer.ip}) restarted (id {self.id[:8]} -> {seen[:8]})"
        self.id = seen
        return None

    def lost(self, lost_after: float) -> str | None:
        if self.silent_since is not None and self.clock() - self.silent_since >= lost_after:
            return f"rank {self.peer.rank} ({self.peer.name}, {self.peer.ip}) has not answered for {self.clock() - self.silent_since:.0f} s"
        return None


def _say(line: str) -> None:
    sys.stdout.write(f"sparkops-vllm-rank: {line}\n")
    sys.stdout.flush()


class Supervisor:
    """Runs one rank: publish, meet the group, run vLLM, watch the group (see the module docstring)."""

    def __init__(
        self,
        settings: GroupSettings,
        argv: t.Sequence[str],
        *,
        fetch: Fetch,
        clock: t.Callable[[], float] = time.monotonic,
        sleep: t.Callable[[float], None] = time.sleep,
        spawn: t.Callable[[t.Sequence[str]], subprocess.Popen[bytes]] | None = None,
        say: t.Callable[[str], None] | None = None,
    ) -> None:
        self.settings = settings
        self.argv = list(argv)
        self.fetch = fetch
        self.clock = clock
        self.sleep = sleep
        self.spawn = spawn or (lambda argv: subprocess.Popen(list(argv), start_new_session=True))
        self.say = say or _say
        self.status = Status(rank=settings.rank, id=uuid.uuid4().hex)
        self.child: subprocess.Popen[bytes] | None = None
        self.stopping = threading.Event()
        self.met: dict[int, str] = {}  # rank 0: the ids of headless ranks that answered the meeting as waiting

    # -- meeting the group -------------------------------------------------------------------------------------
    def wait_for(self, what: str, ready: t.Callable[[], list[str]]) -> bool:
        """Poll until ``ready()`` returns no missing item; report every ``report_every`` s. False when stopped."""
        started = last_report = self.clock()
        while not self.stopping.is_set():
            missing = ready()
            if not missing:
                return True
            if self.clock() - last_report >= self.settings.report_every:
                last_report = self.clock()
                self.say(f"waiting {self.clock() - started:.0f} s for {what}: {', '.join(missing)}")
            self.sleep(self.settings.poll)
        return False

    def followers_answering(self) -> list[str]:
        missing = []
        for peer in self.settings.followers:
            document = self.fetch(peer)
            if document is None:
                missing.append(f"rank {peer.rank} ({peer.name}, {peer.ip})")
            elif document.get("state") == "waiting" and document.get("id"):
                self.met[peer.rank] = str(document["id"])
            else:
                self.met.pop(peer.rank, None)  # an older generation's rank: a member once it joins
        return missing

    def leader_running(self) -> list[str]:
        document = self.fetch(self.settings.leader)
        if document is not None and document.get("state") == "running" and document.get("id"):
            self.status.joined = str(document["id"])
            return []
        leader = self.settings.leader
        return [f"rank 0 ({leader.name}, {leader.ip}) " + ("not answering" if document is None else f"{document.get('state', '?')}")]

    def meet(self) -> bool:
        if self.settings.rank == 0:
            self.status.joined = self.status.id
            return self.wait_for("the headless ranks' supervisors", self.followers_answering)
        return self.wait_for("rank 0 to run vLLM", self.leader_running)

    # -- watching it -------------------------------------------------------------------------------------------
    def group_change(self, watches: dict[int, Watch]) -> str | None:
        """One round of polls: why the group changed, or None."""
        if self.settings.rank == 0:
            for peer in self.settings.followers:
                document = self.fetch(peer)
                watch = watches[peer.rank]
                if not watch.id and (document is None or document.get("joined") != self.status.id):
                    continue  # not a member of this generation yet (an old one restarting, or a late one)
                reason = watch.update(document) or watch.lost(self.settings.lost_after)
                if reason:
                    return reason
            return None
        watch = watches[0]
        document = self.fetch(self.settings.leader)
        if not watch.id:
            watch.id = self.status.joined
        return watch.update(document) or watch.lost(self.settings.lost_after)

    def end_child(self) -> None:
        """SIGTERM vLLM's process group, SIGKILL it after ``stop_grace`` seconds; then SIGKILL what is left of the
        group (the engine and worker processes of an API server that is gone)."""
        child = self.child
        if child is None:
            return
        for sig, wait in ((signal.SIGTERM, self.settings.stop_grace), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, sig)
            try:
                child.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)

    def run(self) -> int:
        """The rank's life; the exit status for systemd (Restart=always starts it again)."""
        me = self.settings.me
        self.say(f"rank {me.rank} of {len(self.settings.peers)} on {me.name} ({me.ip}), id {self.status.id[:8]}")
        if not self.meet():
            return 0
        self.status.state = "running"
        if self.settings.rank > 0:
            self.say(f"joined rank 0's id {self.status.joined[:8]}; starting vLLM")
        else:
            self.say("every headless rank answers; starting vLLM")
        self.child = self.spawn(self.argv)
        watches = {p.rank: Watch(p, self.clock) for p in self.settings.peers if p.rank != self.settings.rank}
        for rank, seen in self.met.items():
            watches[rank].id = seen
        while True:
            code = self.child.poll()
            if code is not None:
                self.say(f"vLLM exited with status {code}; ending the rank so that the group restarts")
                self.status.state = "stopping"
                self.end_child()
                return code if code > 0 else 1
            if self.stopping.is_set():
                self.status.state = "stopping"
                self.say("stopping: ending vLLM")
                self.end_child()
                return 0
            reason = self.group_change(watches)
            if reason:
                self.status.state = "stopping"
                self.say(f"{reason}: ending vLLM so that the group restarts as one")
                self.end_child()
                return 1
            self.sleep(self.settings.poll)


def serve_status(settings: GroupSettings, status: Status) -> ThreadingHTTPServer:
    """Publish ``status`` on the fabric address (a daemon thread)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = json.dumps(status.document()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: t.Any) -> None:  # noqa: A002 (http.server's signature)
            return

    server = ThreadingHTTPServer((settings.me.ip, settings.port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="sparkops-vllm-rank-status", daemon=True).start()
    return server


def main(argv: list[str]) -> int:
    """``sparkops-vllm-rank SETTINGS.json -- VLLM ARGV...``"""
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: sparkops-vllm-rank SETTINGS.json -- VLLM ARGV...\n")
        return 2
    try:
        with open(argv[0], encoding="utf-8") as handle:
            settings = load_settings(handle.read())
    except (OSError, GroupConfigError) as exc:
        sys.stderr.write(f"sparkops-vllm-rank: {exc}\n")
        return 2
    supervisor = Supervisor(settings, argv[2:], fetch=http_fetch(settings.port))
    try:
        server = serve_status(settings, supervisor.status)
    except OSError as exc:
        sys.stderr.write(f"sparkops-vllm-rank: cannot listen on {settings.me.ip}:{settings.port}: {exc}\n")
        return 1

    def on_signal(signum: int, frame: t.Any) -> None:
        supervisor.stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        return supervisor.run()
    finally:
        server.shutdown()
