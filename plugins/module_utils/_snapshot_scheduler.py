# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model distribution's scheduler: the jobs that bring every blob to every target, and the pipeline that runs
them, at most ``streams`` on each link at once.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

:func:`make_jobs` turns the plan into jobs, largest blob first: in a ``chain`` (``head -> targets[0] -> targets[1] ->
...``) a blob goes in one **cut-through** job along each run of targets that need it, from the node before the run
(:mod:`._blob_relay`: every node writes the stream while it passes it on, so a worker never waits for a whole blob and
the total time hardly grows with the number of workers); a target that keeps a partial gets the blob by rsync, which
resumes it. In a ``star`` the head sends each blob to each target. The :class:`Pipeline` runs the jobs. Every copy is
written under ``blobs/.sparkops-partial/`` and renamed into place once whole (by the relay, or by rsync with
``--partial-dir``), so no file under its final name is ever half written. A failed cut-through job is replaced by
rsync jobs, link by link, which resume what it left. Without ``cut_through`` every blob goes link by link with rsync
(store and forward: a worker passes a blob on once it holds it whole).
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
import time
import typing as t
from dataclasses import dataclass

from ansible_collections.sparkops.inference.plugins.module_utils import _blob_relay
from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import command as relay_command
from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import encode
from ansible_collections.sparkops.inference.plugins.module_utils._run_command import Runner, run_command
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import DistributeError, Node, attempts_label, node_name, stderr_tail
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_plan import Blob, Link, Plan
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_result import Transfer
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_transport import BLOB_OPTIONS, Transport


def with_retries(argv: list[str], runner: Runner, retries: int, retry_delay: float, sleep: t.Callable[[float], None]) -> tuple[int, str, str, int]:
    """Run ``argv`` until it succeeds, at most ``retries`` + 1 times; the last rc, stdout, stderr and the attempts."""
    attempt = 0
    while True:
        attempt += 1
        rc, out, err = runner(argv)
        if rc == 0 or attempt > retries:
            return rc, out, err, attempt
        sleep(retry_delay)


@dataclass(frozen=True)
class Job:
    """A blob along a path of nodes: ``path[0]`` holds it (or will) and sends it to the others.

    ``cut_through``: the relay passes it along the whole path at once; otherwise the path is one link and rsync sends
    it."""

    blob: Blob
    path: tuple[Node, ...]
    cut_through: bool
    replaces: str = ""  # the failure of the cut-through job this rsync job stands in for

    @property
    def links(self) -> tuple[Link, ...]:
        return tuple(Link(self.path[index - 1], t.cast(str, self.path[index])) for index in range(1, len(self.path)))


def make_jobs(plan: Plan, cut_through: bool) -> list[Job]:
    """The jobs that bring every blob to every target that needs it, largest blob first.

    In a chain, each run of consecutive targets that need a blob gets it in one cut-through job from the node before
    the run (the head, or a target that holds it or gets it first), so a target that holds it passes it on. A target
    that keeps a partial of it from an interrupted run (or every target, without ``cut_through``) gets it by rsync
    from the node before it, which resumes the partial. In a star, each target gets each blob from the head."""
    jobs: list[Job] = []
    for blob in plan.blobs:
        if plan.topology == "star":
            jobs += [Job(blob, (None, target), cut_through and not plan.has_partial(target, blob)) for target in plan.targets if not plan.holds(target, blob)]
            continue
        path: list[Node] = []  # the cut-through job being built: its source, then the targets of the run
        previous: Node = None
        for target in plan.targets:
            if cut_through and not plan.holds(target, blob) and not plan.has_partial(target, blob):
                path = path or [previous]
                path.append(target)
            else:
                if path:
                    jobs.append(Job(blob, tuple(path), True))
                    path = []
                if not plan.holds(target, blob):
                    jobs.append(Job(blob, (previous, target), False))
            previous = target
        if path:
            jobs.append(Job(blob, tuple(path), True))
    return jobs


class Pipeline:
    """Runs the jobs of :func:`make_jobs`: each link carries at most ``streams`` at once, and a job uses the same
    stream number on every link of its path (so each hop reuses the stream's ssh connection). A job starts once its
    source holds the blob (from the start, or from a finished job), largest blob first. A cut-through job that fails
    is replaced by rsync jobs, one per link of its path, which resume the partial files it left (and find up to date
    the copies it completed). After any other failure no job starts; those running finish."""

    def __init__(
        self,
        plan: Plan,
        transport: Transport,
        *,
        streams: int,
        retries: int,
        bwlimit_kbps: int = 0,
        cut_through: bool = True,
        runner: Runner = run_command,
        retry_delay: float = 2.0,
        clock: t.Callable[[], float] = time.monotonic,
        sleep: t.Callable[[float], None] = time.sleep,
    ) -> None:
        self.options = BLOB_OPTIONS + ((f"--bwlimit={bwlimit_kbps}",) if bwlimit_kbps > 0 else ())
        self.bwlimit = bwlimit_kbps * 1024
        self.plan = plan
        self.transport = transport
        self.streams = streams
        self.retries = retries
        self.runner = runner
        self.retry_delay = retry_delay
        self.clock = clock
        self.sleep = sleep
        self.start = clock()
        self.transfers: list[Transfer] = []
        self.relay_failures: list[str] = []  # cut-through jobs that failed and were replaced by rsync
        self.error: str | None = None
        self._cond = threading.Condition()
        self._pending = make_jobs(plan, cut_through)
        self._holders = {blob.name: {node for node in (None, *plan.targets) if plan.holds(node, blob)} for blob in plan.blobs}
        self._free: dict[Link, set[int]] = {}
        self._set_up: set[tuple[Link, int]] = set()
        self._running = 0
        # The relay's source, sent with each cut-through job's command (base64).
        self._code = encode(inspect.getsource(_blob_relay).encode()) if cut_through else ""

    def run(self) -> None:
        """Send everything; afterwards :attr:`transfers` holds what was sent and :attr:`error` the first failure."""
        threads: list[threading.Thread] = []
        with self._cond:
            while True:
                if self.error is None:
                    threads += self._start_ready()
                if self._running == 0 and (self.error is not None or not self._pending):
                    break
                self._cond.wait()
        for thread in threads:
            thread.join()

    def _free_stream(self, job: Job) -> int | None:
        """A stream number free on every link of the job's path (the lowest), or None."""
        free = set(range(self.streams))
        for link in job.links:
            free &= self._free.setdefault(link, set(range(self.streams)))
        return min(free) if free else None

    def _start_ready(self) -> list[threading.Thread]:
        """Start every pending job whose source holds its blob and whose links have a common free stream (lock held)."""
        started = []
        for job in list(self._pending):
            if job.path[0] not in self._holders[job.blob.name]:
                continue
            stream = self._free_stream(job)
            if stream is None:
                continue
            self._pending.remove(job)
            for link in job.links:
                self._free[link].discard(stream)
            self._running += 1
            label = " -> ".join(node_name(node) for node in job.path)
            thread = threading.Thread(target=self._work, args=(job, stream), name=f"{label} #{stream}", daemon=True)
            thread.start()
            started.append(thread)
        return started

    def _work(self, job: Job, stream: int) -> None:
        transfers: list[Transfer] = []
        replacements: list[Job] = []
        error = None
        try:
            for link in job.links:  # once the stream has something to send (a relay's source may not be reachable before)
                with self._cond:
                    new = (link, stream) not in self._set_up
                    self._set_up.add((link, stream))
                if new:
                    for argv in self.transport.stream_setup(link.source, link.target, stream):
                        self.runner(argv)
            if job.cut_through:
                transfers, failure = self._relay(job, stream)
                if failure:
                    replacements = [Job(job.blob, (link.source, link.target), False, failure) for link in job.links]
            else:
                transfers = [self._send(job, stream)]
        except Exception as exc:  # any failure must end the run, not leave the other threads waiting
            error = str(exc) if isinstance(exc, DistributeError) else f"cannot send {job.blob.name} on {job.links[0].label}: {exc!r}"
        with self._cond:
            self._running -= 1
            for link in job.links:
                self._free[link].add(stream)
            self.transfers += transfers
            for transfer in transfers:
                self._holders[job.blob.name].add(transfer.link.target)
            self._pending[0:0] = replacements
            if error is not None:
                self.error = self.error or error
            self._cond.notify_all()

    def _relay_spec(self, job: Job, stream: int) -> dict[str, t.Any]:
        """The spec of the job's source for the relay (:mod:`._blob_relay`), holding the specs of the hops after it."""
        blob, blobs_dir = job.blob, self.plan.blobs_dir
        info = os.stat(self.transport.path(None, f"{blobs_dir}/{blob.name}"))
        nxt: dict[str, t.Any] | None = None
        for node in reversed(job.path[1:]):
            target = t.cast(str, node)
            output = {"dir": self.transport.path(target, blobs_dir), "name": blob.name, "mtime_ns": info.st_mtime_ns, "mode": info.st_mode & 0o777}
            spec = {"node": target, "size": blob.size, "output": output, "next": nxt}
            nxt = {"via": self.transport.relay_via(target, stream), "python": self.transport.python, "spec": spec}
        source = job.path[0]
        return {
            "node": node_name(source),
            "size": blob.size,
            "input": self.transport.path(source, f"{blobs_dir}/{blob.name}"),
            "bwlimit": self.bwlimit,
            "next": nxt,
        }

    def _relay(self, job: Job, stream: int) -> tuple[list[Transfer], str | None]:
        """Run a cut-through job; its transfers, or none and the relay's error."""
        spec, source = self._relay_spec(job, stream), job.path[0]
        if source is None:  # the head reads its file with this interpreter
            argv = relay_command(sys.executable, self._code, spec)
        else:
            argv = self.transport.run_argv(source, relay_command(self.transport.python, self._code, spec), stream)
        started = self.clock() - self.start
        rc, _out, err = self.runner(argv)
        if rc != 0:
            route = " -> ".join(node_name(node) for node in job.path)
            message = f"{job.blob.name} on {route}: the relay failed, rc {rc}: {stderr_tail(err)}"
            if rc == 127 or "not found" in err:  # a shell's "command not found", on the first node or one further on
                message += f" (is {self.transport.python!r}, the option python, a Python 3 on every target?)"
            with self._cond:
                self.relay_failures.append(message)
            return [], message
        finished = self.clock() - self.start
        return [Transfer(job.blob, link, started, finished, 1) for link in job.links], None

    def _send(self, job: Job, stream: int) -> Transfer:
        """Run an rsync job (one link) with its retries."""
        link, blob, blobs_dir = job.links[0], job.blob, self.plan.blobs_dir
        path = self.transport.path(link.source, f"{blobs_dir}/{blob.name}")
        dest = self.transport.path(link.target, f"{blobs_dir}/")
        started = self.clock() - self.start
        argv = self.transport.rsync_argv(link.source, link.target, self.options, [path], dest, stream)
        rc, _out, err, attempts = with_retries(argv, self.runner, self.retries, self.retry_delay, self.sleep)
        if rc != 0:
            note = f" (before it, {job.replaces})" if job.replaces else ""
            raise DistributeError(
                f"cannot send {blob.name} ({blob.size} bytes) on {link.label}: rsync failed ({attempts_label(attempts)}), rc {rc}: {stderr_tail(err)}{note}"
            )
        return Transfer(blob, link, started, self.clock() - self.start, attempts)
