# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``--distributed-executor-backend mp`` over ``--nnodes N``: the node group torch.distributed forms.

Rank 0 listens on ``--master-port`` (all addresses, as torch's TCPStore does) and waits, bounded, for the N-1
headless ranks, each of which connects to ``--master-addr:--master-port`` (retrying until its deadline) and says
hello with one JSON line (rank, nnodes, tensor and pipeline parallel sizes, which must agree). Once all are in,
rank 0 says ``ready``; from then on both sides send a heartbeat every second. A connection that closes or goes
silent for peer_timeout_seconds is a failed collective: the engine is dead and the process exits 1. Rank 0
stopping on purpose says ``shutdown`` first, and the headless ranks then exit 0.
"""

from __future__ import annotations

import contextlib
import errno
import json
import socket
import threading
import time
from collections.abc import Iterator

from .config import Behaviour
from .logs import Fatal, log
from .server import State

HEARTBEAT_SECONDS = 1.0


def lines(sock: socket.socket, timeout: float) -> Iterator[str]:
    """The lines ``sock`` receives; ends at EOF; raises OSError (socket.timeout) after ``timeout`` s of silence."""
    sock.settimeout(timeout)
    buffer = b""
    while True:
        data = sock.recv(4096)
        if not data:
            return
        buffer += data
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line.decode(errors="replace").strip()


class Peer:
    """The other end of one connection: rank 0 for a headless rank, a headless rank for rank 0."""

    def __init__(self, sock: socket.socket, rank: int, address: str) -> None:
        self.sock, self.rank, self.address = sock, rank, address
        self.lock = threading.Lock()
        self.incoming: Iterator[str] | None = None

    def send(self, line: str) -> None:
        with self.lock:
            self.sock.sendall(line.encode() + b"\n")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class MpGroup:
    def __init__(self, node_rank: int, nnodes: int, master_addr: str, master_port: int, tp: int, pp: int, behaviour: Behaviour, state: State) -> None:
        self.rank, self.nnodes = node_rank, nnodes
        self.master = (master_addr, master_port)
        self.sizes = {"tensor_parallel_size": tp, "pipeline_parallel_size": pp}
        self.behaviour, self.state = behaviour, state
        self.peers: list[Peer] = []
        self.listener: socket.socket | None = None

    # --- forming the group -------------------------------------------------------------------------------
    def start(self) -> None:
        if self.rank == 0:
            self.gather()
        else:
            self.join()
        for peer in self.peers:
            threading.Thread(target=self.watch, args=(peer,), name=f"peer-{peer.rank}", daemon=True).start()
        threading.Thread(target=self.heartbeat, name="heartbeat", daemon=True).start()

    def gather(self) -> None:
        """Rank 0: accept the other ranks until all are in, or fail as torch's TCPStore times out."""
        port = self.master[1]
        family = socket.AF_INET6 if ":" in self.master[0] else socket.AF_INET
        try:
            self.listener = socket.create_server(("", port), family=family)
        except OSError as exc:
            raise Fatal(
                "torch.distributed.DistNetworkError",
                f"The server socket has failed to listen on any local network address. port: {port}, useIpv6: {str(family == socket.AF_INET6).lower()}, "
                f"code: -{exc.errno}, name: {errno.errorcode.get(exc.errno or 0, '?')}, message: {exc.strerror}",
            ) from None
        log("INFO", "multiproc_executor.py:120", f"Waiting for {self.nnodes - 1} headless node(s) on port {port} (world size {self.nnodes}).")
        self.listener.settimeout(0.2)
        wait = self.behaviour.peer_wait_seconds
        deadline = time.monotonic() + wait
        while len(self.peers) < self.nnodes - 1:
            if time.monotonic() > deadline:
                raise Fatal(
                    "torch.distributed.DistStoreError",
                    f"Timed out after {wait:g} seconds waiting for clients. {len(self.peers) + 1}/{self.nnodes} clients joined.",
                )
            try:
                sock, address = self.listener.accept()
            except socket.timeout:  # noqa: UP041 (not TimeoutError before Python 3.10)
                continue
            self.admit(sock, str(address[0]))
        for peer in self.peers:
            peer.send("ready")
        log("INFO", "multiproc_executor.py:160", f"All {self.nnodes} nodes joined: " + ", ".join(f"rank {p.rank} at {p.address}" for p in self.peers))

    def admit(self, sock: socket.socket, address: str) -> None:
        """Read a rank's hello; keep it, or tell it why not and close."""
        try:
            incoming = lines(sock, 5.0)
            hello = json.loads(next(incoming))
            rank = int(hello["rank"])
        except (OSError, ValueError, KeyError, TypeError, StopIteration):
            sock.close()
            return
        problem = ""
        if hello.get("nnodes") != self.nnodes or any(hello.get(key) != value for key, value in self.sizes.items()):
            mine = {"nnodes": self.nnodes, **self.sizes}
            theirs = {key: hello.get(key) for key in mine}
            problem = f"node rank {rank} at {address} was started with {theirs}, node rank 0 with {mine}"
        elif not 0 < rank < self.nnodes or any(peer.rank == rank for peer in self.peers):
            problem = f"node rank {rank} at {address} is out of range or already taken"
        peer = Peer(sock, rank, address)
        if problem:
            log("ERROR", "multiproc_executor.py:140", f"Refusing {problem}.")
            with contextlib.suppress(OSError):
                peer.send("error " + problem)
            peer.close()
            return
        peer.incoming = incoming
        peer.send("ok")
        self.peers.append(peer)
        log("INFO", "multiproc_executor.py:150", f"Node rank {rank} joined from {address}.")

    def join(self) -> None:
        """A headless rank: reach rank 0 (retrying until the deadline), say hello, wait for ``ready``."""
        wait = self.behaviour.peer_wait_seconds
        deadline = time.monotonic() + wait
        host, port = self.master
        log("INFO", "multiproc_executor.py:200", f"Connecting to the master node at {host}:{port} as node rank {self.rank} of {self.nnodes}.")
        while True:
            try:
                sock = socket.create_connection(self.master, timeout=2.0)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise Fatal(
                        "torch.distributed.DistNetworkError",
                        f"The client socket has timed out after {int(wait * 1000)}ms while trying to connect to ({host}, {port}).",
                    ) from None
                time.sleep(0.5)
        peer = Peer(sock, 0, host)
        peer.send(json.dumps({"rank": self.rank, "nnodes": self.nnodes, **self.sizes}))
        incoming = lines(sock, max(deadline - time.monotonic(), 1.0))
        try:
            for line in incoming:
                if line == "ready":
                    break
                if line.startswith("error "):
                    raise Fatal("RuntimeError", f"The master node refused this node: {line[6:]}")
            else:
                raise Fatal("torch.distributed.DistNetworkError", f"Connection closed by peer [{host}]:{port} before all nodes joined.")
        except OSError as exc:
            raise Fatal("torch.distributed.DistStoreError", f"Timed out waiting for all nodes to join: {exc}") from None
        peer.incoming = incoming
        self.peers.append(peer)
        log("INFO", "multiproc_executor.py:230", f"All {self.nnodes} nodes joined; node rank {self.rank} is ready.")

    # --- while serving -----------------------------------------------------------------------------------
    def heartbeat(self) -> None:
        while not self.state.stopping.wait(HEARTBEAT_SECONDS) and not self.state.dead.is_set():
            for peer in self.peers:
                try:
                    peer.send("ping")
                except OSError as exc:
                    self.lost(peer, f"send failed: {exc}")
                    return

    def watch(self, peer: Peer) -> None:
        assert peer.incoming is not None
        peer.sock.settimeout(self.behaviour.peer_timeout_seconds)
        try:
            for line in peer.incoming:
                if line == "shutdown":
                    log("INFO", "multiproc_executor.py:260", "The master node is shutting down.")
                    self.state.finished.set()
                    return
            reason = "connection closed"
        except OSError as exc:
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        self.lost(peer, reason)

    def lost(self, peer: Peer, reason: str) -> None:
        self.state.engine_dead(f"RuntimeError: collective with node rank {peer.rank} ({peer.address}) failed: {reason}")

    def shutdown(self) -> None:
        """Leave the group: rank 0 tells the others to stop first; a headless rank just goes (rank 0 then fails)."""
        for peer in self.peers:
            if self.rank == 0:
                with contextlib.suppress(OSError):
                    peer.send("shutdown")
            peer.close()
        if self.listener is not None:
            self.listener.close()
