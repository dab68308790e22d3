# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How the model distribution reaches the nodes: the command lines that run a command on a target, rsync a path from
one node to another, and share ssh connections.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

A :class:`Transport` builds the argvs the head starts; :class:`SshTransport` is ssh, rsync and the relay over the
fabric (a worker that sends runs rsync or the relay itself, started over ssh). The rsync options of the blobs
(:data:`BLOB_OPTIONS`) and of the metadata (:data:`METADATA_OPTIONS`) are here too: the model-sync gate
(:mod:`._sync_gate`) builds the same command lines with this file on every worker and runs only those.
"""

from __future__ import annotations

import abc
import ipaddress
import re
import shlex
import threading
import typing as t

from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import PARTIAL_DIR
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import DistributeError, Node

# rsync's --timeout: seconds without I/O before it gives up.
RSYNC_TIMEOUT = 120
# Blobs are plain files, written as root on the workers: -rt (recursion for rsync's file list, mtimes for its quick
# check), not -a: no symlinks (-l), permissions (-p: without it a new file gets the source's mode less the umask, its
# setuid, setgid and sticky bits dropped), owner (-o), group (-g), devices or specials (-D). The model-sync gate
# refuses a blob push that asks for any of them.
BLOB_OPTIONS = ("-rt", f"--partial-dir={PARTIAL_DIR}", f"--timeout={RSYNC_TIMEOUT}")
# The metadata (snapshots/, refs/): symlinks as symlinks, each change itemized for the result.
METADATA_OPTIONS = ("-a", "--itemize-changes", f"--timeout={RSYNC_TIMEOUT}")
# ssh's StrictHostKeyChecking values SshTransport takes: pinned keys only, or trust on first contact.
HOST_KEY_CHECKING = ("yes", "accept-new")
# ssh control sockets: <control_dir>/<MUX_NAME>-<40 hex>-<stream>; a Unix socket path has at most 107 bytes.
MUX_NAME = "mux"
MAX_SOCKET_PATH = 107

# What ssh takes as a user, and as a target host: never a word starting with "-" (ssh would parse
# "-oProxyCommand=...@host" as an option and run the command). POSIX user names; an IP address or a DNS name.
SSH_USER = re.compile(r"[A-Za-z_][A-Za-z0-9._-]{0,31}")
SSH_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?")


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
