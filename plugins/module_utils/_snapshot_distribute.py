# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Distribute a model's folder of a Hugging Face hub cache from the head to the workers, in parallel and in a
cut-through chain.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

The repo folder (``<cache>/models--<org>--<name>``) holds ``blobs/<etag>`` (the content), ``snapshots/<commit>/<path>``
(relative symlinks ``../../blobs/<etag>``) and ``refs/<revision>`` (the commit). It is copied to the same path on
every target, in two steps:

1. **Blobs.** :func:`make_plan` lists the head's blobs with their sizes and asks every target for its own and for the
   partial files an interrupted run left (one command a target); a blob is needed on a target when it is missing or
   of another size. :func:`make_jobs` turns that into jobs, largest blob first: in a ``chain``
   (``head -> targets[0] -> targets[1] -> ...``) a blob goes in one **cut-through** job along each run of targets
   that need it, from the node before the run (:mod:`._blob_relay`: every node writes the stream while it passes it
   on, so a worker never waits for a whole blob and the total time hardly grows with the number of workers); a
   target that keeps a partial gets the blob by rsync, which resumes it. In a ``star`` the head sends each blob to
   each target. The :class:`Pipeline` runs the jobs, at most ``streams`` on each link at once. Every copy is written
   under ``blobs/.sparkops-partial/`` and renamed into place once whole (by the relay, or by rsync with
   ``--partial-dir``), so no file under its final name is ever half written. A failed cut-through job is replaced by
   rsync jobs, link by link, which resume what it left. Without ``cut_through`` every blob goes link by link with
   rsync (store and forward: a worker passes a blob on once it holds it whole). Blobs are plain files: rsync sends
   them with ``-rt`` (:data:`BLOB_OPTIONS`: contents and mtimes, no symlinks, devices, specials, owner, group or
   permissions; a new file gets the source's permission bits less the receiver's umask, never setuid, setgid or
   sticky), and the relay gives its copy the source's permission bits only (``mode & 0o777``).
2. **Metadata.** Once every blob is everywhere, ``snapshots/`` then ``refs/`` go from the head to each target with
   ``rsync -a --itemize-changes`` (symlinks as symlinks; refs last, so that a ref never names a snapshot a target
   lacks).

How a node is reached is a :class:`Transport`: :class:`SshTransport` (ssh, rsync and the relay over the fabric; a
worker that sends runs rsync or the relay itself, started over ssh) or :class:`LocalTransport` (every node a folder on this machine, for
tests).
"""

from __future__ import annotations

import abc
import inspect
import ipaddress
import os
import re
import shlex
import sys
import threading
import time
import typing as t
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ansible_collections.sparkops.inference.plugins.module_utils import _blob_relay
from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import command as relay_command
from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import encode
from ansible_collections.sparkops.inference.plugins.module_utils._run_command import Runner, run_command

PARTIAL_DIR = _blob_relay.PARTIAL_DIR
RSYNC_TIMEOUT = 120
# Blobs are plain files, written as root on the workers: -rt (recursion for rsync's file list, mtimes for its quick
# check), not -a: no symlinks (-l), permissions (-p: without it a new file gets the source's mode less the umask, its
# setuid, setgid and sticky bits dropped), owner (-o), group (-g), devices or specials (-D). The model-sync gate
# refuses a blob push that asks for any of them.
BLOB_OPTIONS = ("-rt", f"--partial-dir={PARTIAL_DIR}", f"--timeout={RSYNC_TIMEOUT}")
METADATA_OPTIONS = ("-a", "--itemize-changes", f"--timeout={RSYNC_TIMEOUT}")
# Sent in this order, each by its own rsync: a ref only appears once the snapshot it names is there.
METADATA_DIRS = ("snapshots", "refs")
TOPOLOGIES = ("chain", "star")
# ssh's StrictHostKeyChecking values SshTransport takes: pinned keys only, or trust on first contact.
HOST_KEY_CHECKING = ("yes", "accept-new")
# How the head appears in results and messages.
HEAD = "head"
# ssh control sockets: <control_dir>/<MUX_NAME>-<40 hex>-<stream>; a Unix socket path has at most 107 bytes.
MUX_NAME = "mux"
MAX_SOCKET_PATH = 107
# How much of a failed command's stderr a message quotes (its end).
STDERR_TAIL = 2000

# A node: a target's address, or None for the head (where this code runs).
Node = t.Optional[str]  # noqa: UP045 - an alias is evaluated at import, and `str | None` needs Python 3.10


# What ssh takes as a user, and as a target host: never a word starting with "-" (ssh would parse
# "-oProxyCommand=...@host" as an option and run the command). POSIX user names; an IP address or a DNS name.
SSH_USER = re.compile(r"[A-Za-z_][A-Za-z0-9._-]{0,31}")
SSH_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?")


class DistributeError(Exception):
    """The distribution cannot start or did not finish; the message names the file, link or node.

    ``result`` holds what was done before the failure (None when nothing was planned yet).
    """

    def __init__(self, message: str, result: Result | None = None) -> None:
        super().__init__(message)
        self.result = result


def check_ssh_target(host: str) -> str:
    """``host`` when ssh and rsync can only read it as a host (an IP address or a DNS name), else DistributeError."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if len(host) <= 253 and SSH_HOST_NAME.fullmatch(host):
        return host
    raise DistributeError(f"target {host!r} is not an IP address or a host name (a word ssh could read as an option is refused)")


def node_name(node: Node) -> str:
    """The node as results and messages name it."""
    return HEAD if node is None else node


def _attempts(count: int) -> str:
    return "1 attempt" if count == 1 else f"{count} attempts"


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= STDERR_TAIL else "..." + text[-STDERR_TAIL:]


# --- transports ------------------------------------------------------------------------------------------------


class Transport(abc.ABC):
    """How commands reach the nodes. Node None is the head, where the commands are started.

    Paths are given as they are on every node (the repo is at the same path everywhere); :meth:`path` says where
    such a path is on a given node, and callers pass what it returns to :meth:`run_argv` and :meth:`rsync_argv`.
    """

    def __init__(self, rsync: str = "rsync", python: str = "python3") -> None:
        self.rsync = rsync
        self.python = python

    def path(self, node: Node, path: str) -> str:
        """Where the absolute ``path`` is on ``node``: the path itself, unless the transport maps nodes to folders."""
        return path

    @abc.abstractmethod
    def run_argv(self, node: str, argv: t.Sequence[str], stream: int | None = None) -> list[str]:
        """The argv, started on the head, that runs ``argv`` on the target ``node`` (for ``stream``, see
        :meth:`stream_setup`)."""

    @abc.abstractmethod
    def relay_via(self, target: str, stream: int) -> list[str]:
        """What a node puts before a command line to run it on ``target`` (for ``stream``): the relay of a cut-through
        job starts the next hop with it; empty to run the argv itself, on the same machine."""

    @abc.abstractmethod
    def rsync_argv(self, source: Node, target: str, options: t.Sequence[str], paths: t.Sequence[str], dest: str, stream: int | None = None) -> list[str]:
        """The argv, started on the head, that rsyncs ``paths`` on ``source`` into the folder ``dest`` on ``target``."""

    def stream_setup(self, source: Node, target: str, stream: int) -> list[list[str]]:
        """Commands (run once, in order, failures ignored) that make the commands of ``stream`` on the link
        ``source -> target`` cheaper to start; none by default."""
        return []

    def teardown(self) -> list[list[list[str]]]:
        """Batches of commands (run one batch after the other, the commands of a batch at once, failures ignored) that
        undo what :meth:`stream_setup` set up; none by default."""
        return []


class SshTransport(Transport):
    """ssh and rsync to the targets' addresses, as ``user`` with the private key ``key``.

    The head sends with ``rsync ... -e "<ssh>" <paths> user@target:<dest>``; a worker relays with
    ``ssh ... user@source "rsync ... -e '<ssh>' <paths> user@target:<dest>"``, so ``key`` and ``known_hosts`` must be
    the same paths on every node. ``host_key_checking`` is ssh's ``StrictHostKeyChecking``: ``yes`` (a host whose key
    is not in ``known_hosts`` is refused: the keys are pinned there beforehand) or ``accept-new`` (an unknown key is
    accepted and recorded on first contact, trusting whoever answers first); a changed key fails with both.
    ``ssh`` is the ssh program on every node.

    With ``control_dir`` (a private folder at the same path on every node), each stream of each link keeps one ssh
    connection open for all its files (OpenSSH connection sharing: a master per stream, ``ControlPath``
    ``<control_dir>/mux-%C-<stream>``): a file then costs no ssh handshake, which on a relay is two (head -> source
    for the command, source -> target for the data). Each stream keeps its own connection and ssh process, so the
    streams still encrypt in parallel. A master that cannot start costs nothing but the handshakes (the commands
    connect directly); masters end with :meth:`teardown`, or by themselves after ``control_persist`` idle seconds.
    """

    def __init__(
        self,
        user: str = "root",
        key: str | None = None,
        known_hosts: str | None = None,
        port: int = 22,
        rsync: str = "rsync",
        ssh: str = "ssh",
        connect_timeout: int = 30,
        control_dir: str | None = None,
        control_persist: int = 60,
        python: str = "python3",
        host_key_checking: str = "yes",
    ) -> None:
        super().__init__(rsync, python)
        if host_key_checking not in HOST_KEY_CHECKING:
            raise DistributeError(f"host_key_checking must be one of {', '.join(HOST_KEY_CHECKING)}, not {host_key_checking!r}")
        if not SSH_USER.fullmatch(user):
            raise DistributeError(
                f"ssh_user {user!r} is not a user name (letters, digits, '.', '_', '-', not first, at most 32): "
                "ssh would read a word starting with '-' as an option"
            )
        self.user = user
        self.host_key_checking = host_key_checking
        self.key = key
        self.known_hosts = known_hosts
        self.port = port
        self.ssh = ssh
        self.connect_timeout = connect_timeout
        if control_dir is not None and len(control_dir) + len(MUX_NAME) + 45 > MAX_SOCKET_PATH:
            raise DistributeError(f"control_dir {control_dir!r} is too long for an ssh control socket path ({MAX_SOCKET_PATH} bytes)")
        self.control_dir = control_dir
        self.control_persist = control_persist
        self._masters: list[tuple[Node, str, int]] = []  # in the order they were started
        self._masters_lock = threading.Lock()

    def control_path(self, stream: int) -> str:
        """The control socket of ``stream`` (``%C``: ssh's hash of the local host, remote host, port and user)."""
        return f"{self.control_dir}/{MUX_NAME}-%C-{stream}"

    def ssh_command(self, stream: int | None = None) -> list[str]:
        """ssh and its options, without the host: what rsync's ``-e`` gets, and what :meth:`run_argv` starts with.
        With a ``stream`` (and a ``control_dir``), the stream's master connection is used when there is one."""
        argv = [self.ssh, "-p", str(self.port)]
        if self.key:
            argv += ["-i", self.key, "-o", "IdentitiesOnly=yes"]
        if self.known_hosts:
            argv += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        if self.control_dir is not None and stream is not None:
            argv += ["-o", "ControlMaster=no", "-o", f"ControlPath={self.control_path(stream)}"]
        return argv + ["-o", f"StrictHostKeyChecking={self.host_key_checking}", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout}"]

    def _detached(self, source: Node, argv: list[str], stream: int) -> list[str]:
        """``argv`` run on ``source`` with its stdio closed: a master that goes to the background (``-f``) must not hold
        the pipes its caller reads to the end."""
        command = ["sh", "-c", f"{shlex.join(argv)} </dev/null >/dev/null 2>&1"]
        return command if source is None else self.run_argv(source, command, stream)

    def _master(self, source: Node, target: str, stream: int) -> list[str] | None:
        """The command that starts the master of ``stream`` from ``source`` to ``target``; None when it was started."""
        with self._masters_lock:
            if (source, target, stream) in self._masters:
                return None
            self._masters.append((source, target, stream))
        host = f"{self.user}@{target}"
        path = ["-o", f"ControlPath={self.control_path(stream)}"]
        # A live master (an interrupted run's, within its ControlPersist) is kept. ControlMaster=auto removes a
        # socket no master answers (a killed master's, a reboot's) before listening; -M would fail to listen on it
        # and leave a plain connection in the background.
        check = [*self.ssh_command(), *path, "-O", "check", host]
        alive = ["-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"]
        master = [*self.ssh_command(), *path, "-o", "ControlMaster=auto", "-o", f"ControlPersist={self.control_persist}", *alive, "-N", "-f", host]
        script = f"{shlex.join(check)} || exec {shlex.join(master)}"
        command = ["sh", "-c", f"{{ {script}; }} </dev/null >/dev/null 2>&1"]
        return command if source is None else self.run_argv(source, command, stream)

    def stream_setup(self, source: Node, target: str, stream: int) -> list[list[str]]:
        if self.control_dir is None:
            return []
        # A relay's command goes head -> source: that master first, then the relay's own source -> target.
        hops = [(None, source)] if source is not None else []
        commands = [self._master(hop_source, hop_target, stream) for hop_source, hop_target in [*hops, (source, target)]]
        return [command for command in commands if command is not None]

    def teardown(self) -> list[list[list[str]]]:
        # The relays' masters first: they are reached through the head's.
        with self._masters_lock:
            masters, self._masters = self._masters, []

        def exits(relays: bool) -> list[list[str]]:
            return [
                self._detached(source, [*self.ssh_command(stream), "-O", "exit", f"{self.user}@{target}"], stream)
                for source, target, stream in masters
                if (source is not None) == relays
            ]

        return [batch for batch in (exits(True), exits(False)) if batch]

    def remote(self, host: str, path: str) -> str:
        """rsync's ``user@host:path``, with an IPv6 address in brackets."""
        return f"{self.user}@[{host}]:{path}" if ":" in host else f"{self.user}@{host}:{path}"

    def run_argv(self, node: str, argv: t.Sequence[str], stream: int | None = None) -> list[str]:
        # ssh hands the remote shell one command line: quote each argument for it.
        return [*self.relay_via(node, stream), shlex.join(argv)]

    def relay_via(self, target: str, stream: int | None) -> list[str]:
        return [*self.ssh_command(stream), f"{self.user}@{target}"]

    def rsync_argv(self, source: Node, target: str, options: t.Sequence[str], paths: t.Sequence[str], dest: str, stream: int | None = None) -> list[str]:
        argv = [self.rsync, *options]
        if self.rsync != "rsync":
            argv.append(f"--rsync-path={self.rsync}")
        # rsync splits -e's value itself, honouring the quotes shlex.join puts around a value with spaces.
        argv += ["-e", shlex.join(self.ssh_command(stream)), *paths, self.remote(target, dest)]
        return argv if source is None else self.run_argv(source, argv, stream)


class LocalTransport(Transport):
    """Every node is a folder on this machine (``roots``: node to folder; None is the head); rsync runs locally.

    For tests and rehearsals of the scheduler: the commands, the rsync options, the files and the order are real,
    only the network is missing.
    """

    def __init__(self, roots: t.Mapping[Node, str], rsync: str = "rsync", python: str = sys.executable) -> None:
        super().__init__(rsync, python)
        self.roots = dict(roots)

    def path(self, node: Node, path: str) -> str:
        if node not in self.roots:
            raise DistributeError(f"{node_name(node)} has no folder in the local transport")
        return self.roots[node].rstrip("/") + path

    def run_argv(self, node: str, argv: t.Sequence[str], stream: int | None = None) -> list[str]:
        return list(argv)

    def relay_via(self, target: str, stream: int) -> list[str]:
        return []

    def rsync_argv(self, source: Node, target: str, options: t.Sequence[str], paths: t.Sequence[str], dest: str, stream: int | None = None) -> list[str]:
        return [self.rsync, *options, *paths, dest]


# --- the plan --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Blob:
    """A file in ``blobs/``."""

    name: str
    size: int


@dataclass(frozen=True)
class Link:
    """A hop: ``source`` sends blobs to ``target``."""

    source: Node
    target: str

    @property
    def label(self) -> str:
        return f"{node_name(self.source)} -> {self.target}"


@dataclass(frozen=True)
class Plan:
    """What the head has, what each target held at the start, and the links."""

    repo_dir: str
    topology: str
    targets: tuple[str, ...]
    blobs: tuple[Blob, ...]  # the head's, largest first
    held: dict[str, dict[str, int]]  # per target: blob name to size, as found there
    links: tuple[Link, ...]

    @property
    def blobs_dir(self) -> str:
        return f"{self.repo_dir}/blobs"

    def holds(self, node: Node, blob: Blob) -> bool:
        """Whether ``node`` held ``blob`` (by name and size) at the start; the head holds all."""
        return node is None or self.held[node].get(blob.name) == blob.size

    def has_partial(self, target: str, blob: Blob) -> bool:
        """Whether ``target`` keeps a partial of ``blob`` (in the partial folder) from an interrupted run."""
        return f"{PARTIAL_DIR}/{blob.name}" in self.held[target]

    def needed(self, target: str) -> list[Blob]:
        """The blobs ``target`` lacks (missing or of another size), largest first."""
        return [blob for blob in self.blobs if not self.holds(target, blob)]

    def as_dict(self) -> dict[str, dict[str, t.Any]]:
        """Per target: the blobs it needs and their bytes."""
        result: dict[str, dict[str, t.Any]] = {}
        for target in self.targets:
            needed = self.needed(target)
            result[target] = {"files": [b.name for b in needed], "bytes": sum(b.size for b in needed)}
        return result


def make_links(targets: t.Sequence[str], topology: str) -> tuple[Link, ...]:
    """``chain``: head -> targets[0] -> targets[1] -> ...; ``star``: head -> each target."""
    if topology == "star":
        return tuple(Link(None, target) for target in targets)
    return tuple(Link(None if index == 0 else targets[index - 1], target) for index, target in enumerate(targets))


def head_blobs(blobs_dir: str) -> tuple[Blob, ...]:
    """The regular files in ``blobs_dir``, largest first; unfinished downloads (``*.incomplete``) and hidden files
    (rsync's temporary files, the partial dir) are left out."""
    try:
        entries = list(os.scandir(blobs_dir))
    except OSError as exc:
        raise DistributeError(f"cannot list the blobs on the head: {exc}") from exc
    blobs = [
        Blob(entry.name, entry.stat(follow_symlinks=False).st_size)
        for entry in entries
        if entry.is_file(follow_symlinks=False) and not entry.name.startswith(".") and not entry.name.endswith(".incomplete")
    ]
    return tuple(sorted(blobs, key=lambda b: (-b.size, b.name)))


def listing_argv(blobs_dir: str) -> list[str]:
    """The command that prints ``name size`` for each file in ``blobs_dir`` and ``<PARTIAL_DIR>/name size`` for each
    partial file an interrupted run left; nothing when ``blobs_dir`` does not exist."""
    blobs, partials = shlex.quote(blobs_dir), shlex.quote(f"{blobs_dir}/{PARTIAL_DIR}")
    script = (
        f"if [ -d {blobs} ]; then find {blobs} -maxdepth 1 -type f -printf '%f %s\\n' || exit; "
        f"if [ -d {partials} ]; then exec find {partials} -maxdepth 1 -type f -printf '{PARTIAL_DIR}/%f %s\\n'; fi; fi"
    )
    return ["sh", "-c", script]


def parse_listing(text: str, target: str) -> dict[str, int]:
    """Parse :func:`listing_argv`'s output."""
    held: dict[str, int] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, _sep, size = line.rpartition(" ")
        if not name or not size.isdigit():
            raise DistributeError(f"cannot read the blob listing of {target}: {line!r}")
        held[name] = int(size)
    return held


_R = t.TypeVar("_R")


def _parallel(function: t.Callable[[str], _R], items: t.Sequence[str]) -> dict[str, _R]:
    """``function`` over ``items``, all at once: item to result, in the order of ``items``; the first exception raised."""
    if not items:
        return {}
    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        return dict(pool.map(lambda item: (item, function(item)), items))


def make_plan(repo_dir: str, targets: t.Sequence[str], topology: str, transport: Transport, runner: Runner = run_command) -> Plan:
    """List the head's blobs and ask every target (at once) which it holds."""
    blobs = head_blobs(transport.path(None, f"{repo_dir}/blobs"))
    if not blobs:
        raise DistributeError(f"{repo_dir}/blobs on the head holds no blob: nothing to distribute")

    def listing(target: str) -> dict[str, int]:
        rc, out, err = runner(transport.run_argv(target, listing_argv(transport.path(target, f"{repo_dir}/blobs"))))
        if rc != 0:
            raise DistributeError(f"cannot list {repo_dir}/blobs on {target}: rc {rc}: {_tail(err)}")
        return parse_listing(out, target)

    held = _parallel(listing, targets)
    return Plan(repo_dir, topology, tuple(targets), blobs, held, make_links(targets, topology))


# --- the result ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Transfer:
    """A blob sent over a link; times in seconds since the run started."""

    blob: Blob
    link: Link
    started: float
    finished: float
    attempts: int

    @property
    def seconds(self) -> float:
        return self.finished - self.started

    def as_dict(self) -> dict[str, t.Any]:
        return {
            "file": self.blob.name,
            "source": node_name(self.link.source),
            "target": self.link.target,
            "bytes": self.blob.size,
            "started": round(self.started, 3),
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Result:
    """What a run did (or, in check mode, would do)."""

    plan: Plan
    streams: int
    check_mode: bool
    transfers: list[Transfer] = field(default_factory=list)
    metadata: dict[str, list[str]] = field(default_factory=dict)  # per target: the changes rsync itemized
    relay_failures: list[str] = field(default_factory=list)  # cut-through jobs replaced by rsync, and why
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        if self.check_mode:
            return any(self.plan.needed(target) for target in self.plan.targets) or any(self.metadata.values())
        return bool(self.transfers) or any(self.metadata.values())

    def as_dict(self) -> dict[str, t.Any]:
        per_target: dict[str, dict[str, t.Any]] = {target: {"files": [], "bytes": 0} for target in self.plan.targets}
        for transfer in self.transfers:
            entry = per_target[transfer.link.target]
            entry["files"].append(transfer.blob.name)
            entry["bytes"] += transfer.blob.size
        result: dict[str, t.Any] = {
            "changed": self.changed,
            "transferred": [transfer.as_dict() for transfer in self.transfers],
            "bytes": sum(transfer.blob.size for transfer in self.transfers),
            "seconds": round(self.seconds, 3),
            "per_target": per_target,
            "plan": self.plan.as_dict(),
            "metadata": {target: self.metadata.get(target, []) for target in self.plan.targets},
            "topology": self.plan.topology,
            "streams": self.streams,
            "relay_failures": list(self.relay_failures),
        }
        if self.check_mode:
            result["would_transfer"] = self.plan.as_dict()
        return result


# --- running ---------------------------------------------------------------------------------------------------


def _with_retries(argv: list[str], runner: Runner, retries: int, retry_delay: float, sleep: t.Callable[[float], None]) -> tuple[int, str, str, int]:
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
            message = f"{job.blob.name} on {route}: the relay failed, rc {rc}: {_tail(err)}"
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
        rc, _out, err, attempts = _with_retries(argv, self.runner, self.retries, self.retry_delay, self.sleep)
        if rc != 0:
            note = f" (before it, {job.replaces})" if job.replaces else ""
            raise DistributeError(
                f"cannot send {blob.name} ({blob.size} bytes) on {link.label}: rsync failed ({_attempts(attempts)}), rc {rc}: {_tail(err)}{note}"
            )
        return Transfer(blob, link, started, self.clock() - self.start, attempts)


def sync_metadata(
    plan: Plan,
    transport: Transport,
    targets: t.Sequence[str],
    *,
    dry_run: bool = False,
    retries: int = 3,
    runner: Runner = run_command,
    retry_delay: float = 2.0,
    sleep: t.Callable[[float], None] = time.sleep,
) -> dict[str, list[str]]:
    """rsync ``snapshots/`` then ``refs/`` (those the head has) from the head to each of ``targets`` (all at once);
    per target, the changes rsync itemized (with ``dry_run``, those it would make)."""
    dirs = [name for name in METADATA_DIRS if os.path.isdir(transport.path(None, f"{plan.repo_dir}/{name}"))]
    options = [*METADATA_OPTIONS, "--dry-run"] if dry_run else list(METADATA_OPTIONS)

    def sync(target: str) -> list[str]:
        changes: list[str] = []
        dest = transport.path(target, f"{plan.repo_dir}/")
        for name in dirs:
            path = transport.path(None, f"{plan.repo_dir}/{name}")
            # Over stream 0's connection to the target when the blobs left one open (else ssh connects directly).
            argv = transport.rsync_argv(None, target, options, [path], dest, 0)
            rc, out, err, attempts = _with_retries(argv, runner, retries, retry_delay, sleep)
            if rc != 0:
                raise DistributeError(f"cannot send {name}/ on {node_name(None)} -> {target}: rsync failed ({_attempts(attempts)}), rc {rc}: {_tail(err)}")
            changes += [line for line in out.splitlines() if line.strip()]
        return changes

    return _parallel(sync, targets)


def distribute(
    repo_dir: str,
    targets: t.Sequence[str],
    transport: Transport,
    *,
    topology: str = "chain",
    streams: int = 4,
    retries: int = 3,
    bwlimit_kbps: int = 0,
    cut_through: bool = True,
    check_mode: bool = False,
    runner: Runner = run_command,
    retry_delay: float = 2.0,
    clock: t.Callable[[], float] = time.monotonic,
    sleep: t.Callable[[float], None] = time.sleep,
) -> Result:
    """Bring ``repo_dir`` (blobs, then snapshots and refs) from the head to the same path on every target.

    In check mode only the plan is made, and the metadata of the targets that need no blob is compared with a
    ``--dry-run`` rsync. Raises :class:`DistributeError` (carrying the result so far) on bad arguments or a failure.
    """
    if not os.path.isabs(repo_dir):
        raise DistributeError(f"repo_dir must be an absolute path, not {repo_dir!r}")
    repo_dir = os.path.normpath(repo_dir)
    if not targets:
        raise DistributeError("targets is empty: there is nowhere to send the model")
    duplicates = sorted({target for target in targets if targets.count(target) > 1})
    if duplicates:
        raise DistributeError(f"targets are listed more than once: {', '.join(duplicates)}")
    if topology not in TOPOLOGIES:
        raise DistributeError(f"topology must be one of {', '.join(TOPOLOGIES)}, not {topology!r}")
    if streams < 1:
        raise DistributeError(f"streams must be at least 1, not {streams}")
    if retries < 0:
        raise DistributeError(f"retries must be at least 0, not {retries}")

    start = clock()
    result = Result(make_plan(repo_dir, targets, topology, transport, runner), streams, check_mode)
    plan = result.plan
    try:
        if check_mode:
            # A target that needs blobs changes anyway (and may lack the folder a dry run needs).
            ready = [target for target in targets if not plan.needed(target)]
            result.metadata = sync_metadata(plan, transport, ready, dry_run=True, retries=retries, runner=runner, retry_delay=retry_delay, sleep=sleep)
        else:
            _make_blob_dirs(plan, transport, runner)
            pipeline = Pipeline(
                plan,
                transport,
                streams=streams,
                retries=retries,
                bwlimit_kbps=bwlimit_kbps,
                cut_through=cut_through,
                runner=runner,
                retry_delay=retry_delay,
                clock=clock,
                sleep=sleep,
            )
            try:
                pipeline.run()
                result.transfers = sorted(pipeline.transfers, key=lambda x: (x.started, x.finished))
                result.relay_failures = list(pipeline.relay_failures)
                if pipeline.error is not None:
                    raise DistributeError(pipeline.error)
                result.metadata = sync_metadata(plan, transport, targets, retries=retries, runner=runner, retry_delay=retry_delay, sleep=sleep)
            finally:
                _teardown(transport, runner)
    except DistributeError as exc:
        result.seconds = clock() - start
        raise DistributeError(str(exc), result) from exc
    result.seconds = clock() - start
    return result


def _teardown(transport: Transport, runner: Runner) -> None:
    """Run the transport's teardown: its batches one after the other, each batch's commands at once (failures ignored)."""
    for batch in transport.teardown():
        with ThreadPoolExecutor(max_workers=len(batch)) as pool:
            list(pool.map(runner, batch))


def _make_blob_dirs(plan: Plan, transport: Transport, runner: Runner) -> None:
    """``mkdir -p <repo_dir>/blobs`` on every target that needs a blob (one that needs none has it already)."""

    def mkdir(target: str) -> None:
        rc, _out, err = runner(transport.run_argv(target, ["mkdir", "-p", transport.path(target, plan.blobs_dir)]))
        if rc != 0:
            raise DistributeError(f"cannot create {plan.blobs_dir} on {target}: rc {rc}: {_tail(err)}")

    _parallel(mkdir, [target for target in plan.targets if plan.needed(target)])
