# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The forced command of the model-sync keys: a key may run exactly the commands the distribution sends, nothing else.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

A worker authorises the head's and the other workers' keys with ``command="<the gate>"``; sshd then runs the gate
instead of what the client asked, with the client's command line in ``SSH_ORIGINAL_COMMAND``. :func:`decide` reads
that line and returns the argv to exec (never through a shell), or raises :class:`GateRefused` with a one-line
reason. The lines :mod:`._snapshot_distribute` (:class:`._snapshot_transport.SshTransport`) sends to a node, and what the gate does with
each:

* the blob listing, ``sh -c '<listing_argv's script>'`` for ``<repo>/blobs``; and ``mkdir -p <repo>/blobs``;
* rsync's server side when a node pushes (``rsync --server -<flags>e.<capabilities> ... . <dest>``): receiving only
  (no ``--sender``), exactly the server options rsync derives from ``BLOB_OPTIONS`` (dest ``<repo>/blobs/``, with the
  ``--bwlimit`` a run may add: ``-tre.<capabilities>``) or ``METADATA_OPTIONS`` (dest ``<repo>/``, with
  ``--dry-run`` in check mode: ``-logDtpre.<capabilities>``), one destination. A blob push that asks for symlinks,
  permissions, owner, group, devices or specials (a flag or a long option) is refused, naming it: blobs are plain
  files, and the receiving rsync runs as root;
* the relay (``<python> -c BOOT sparkops-blob-relay <code> <spec>``): the code must be the relay this collection
  ships, byte for byte, and the spec what the head builds: a hop that writes ``<repo>/blobs/<etag>`` and passes the
  stream on, or a worker that sends its own copy; every ``via`` is ssh to an allowed target;
* a worker's own rsync to the next worker (``rsync -rt ... -e '<ssh>' <repo>/blobs/<etag> user@<target>:<repo>/blobs/``);
* a worker's connection-sharing masters to the next worker, started (``sh -c '{ ssh ... -O check ... || exec ssh
  ... -N -f ...; } ...'``) and ended (``sh -c 'ssh ... -O exit ... </dev/null ...'``).

Each is checked by regeneration: the gate takes the few parameters out of the line (a repo folder, a blob's name, a
target, a stream number, a size...), checks them (a repo is ``<cache_dir>/models--*``, normalised; a blob's name a
hub etag; a target one of ``targets``; a stream a small number), builds the command again with the transport's own
functions and accepts only when it is the received line, character for character. rsync's server line depends on
the client's rsync, so it is parsed and checked against an allow-list instead. Before it accepts, the gate checks
that the folders the command writes in (the repo, ``blobs/``, the partial folder...) are folders, not symlinks.

``peer`` (the key of another worker, ``--peer`` on the authorized_keys line) allows only what a worker sends to the
next one in a chain: rsync's server into ``<repo>/blobs/`` and a relay hop. ``write`` false allows the listing and
the dry-run metadata rsync only (check mode).

:func:`main` is the entry point (``sparkops-model-sync-gate [--peer] [SETTINGS.json]``): it prints a refusal to
stderr and returns 1, or execs the command.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import inspect
import json
import os
import re
import shlex
import stat
import sys
import typing as t
from dataclasses import dataclass

from ansible_collections.sparkops.inference.plugins.module_utils import _blob_relay
from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import BOOT, MARK, PARTIAL_DIR, encode
from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import command as relay_command
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import DistributeError
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_plan import listing_argv
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_transport import (
    BLOB_OPTIONS,
    HOST_KEY_CHECKING,
    METADATA_OPTIONS,
    MUX_NAME,
    SshTransport,
    check_ssh_target,
)

PROG = "sparkops-model-sync-gate"
DEFAULT_SETTINGS = "/etc/sparkops/model-sync/gate.json"
MAX_COMMAND = 256 * 1024  # a relay's line (its code and a long chain's spec) is ~20 KiB
MAX_STREAMS = 256
# A blob's name: the hub's etag, a sha256 (LFS) or a git blob sha1.
ETAG = re.compile(r"[0-9a-f]{64}|[0-9a-f]{40}")
REPO_NAME = re.compile(r"models--[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")
STREAM = re.compile(re.escape(f"{MUX_NAME}-%C-") + r"([0-9]{1,3})(?![0-9])")
BWLIMIT = re.compile(r"--bwlimit=([1-9][0-9]{0,8})")
# What rsync's client sends its server for each client option the distribution uses: short flags (a client's -a is
# the server's -rlptgoD; -rt is -rt; --dry-run is -n), or the option.
RSYNC_SERVER_FORM = {"--dry-run": "-n", "--itemize-changes": "--log-format=%i"}
RSYNC_SHORT_FORM = {"a": "rlptgoD"}
SHORT_OPTIONS = re.compile(r"-([A-Za-z]+)")
# rsync's compact server flags: the short flags, then -e with the capabilities (``-tre.iLsfxCIvu``). popt reads each
# letter as a flag up to the first "e", which takes the rest of the word as its value.
RSYNC_COMPAT = re.compile(r"-([A-Za-df-z]*)e\.[A-Za-z]{0,32}")
# What a blob push may not ask rsync's server for (blobs are plain files; the server writes as root): a flag in the
# compact flags or in a word of its own, and the long options, each with what it would carry.
BLOB_REFUSED_FLAGS = {
    "a": "symlinks, permissions, owner, group, devices and specials (-a)",
    "l": "symlinks (-l)",
    "L": "the files symlinks point to (-L)",
    "K": "symlinked folders followed (-K)",
    "H": "hard links (-H)",
    "p": "permissions (-p)",
    "E": "permissions (-E)",
    "A": "ACLs (-A)",
    "X": "extended attributes (-X)",
    "o": "owner (-o)",
    "g": "group (-g)",
    "D": "devices and specials (-D)",
}
BLOB_REFUSED_OPTIONS = {
    "--archive": "symlinks, permissions, owner, group, devices and specials",
    "--links": "symlinks",
    "--copy-links": "the files symlinks point to",
    "--copy-unsafe-links": "the files symlinks point to",
    "--copy-dirlinks": "the folders symlinks point to",
    "--keep-dirlinks": "symlinked folders followed",
    "--hard-links": "hard links",
    "--perms": "permissions",
    "--executability": "permissions",
    "--chmod": "permissions",
    "--acls": "ACLs",
    "--xattrs": "extended attributes",
    "--fake-super": "permissions, owner and devices (as extended attributes)",
    "--owner": "owner",
    "--group": "group",
    "--chown": "owner and group",
    "--usermap": "owner",
    "--groupmap": "group",
    "--numeric-ids": "owner and group",
    "--super": "owner, group and devices",
    "--devices": "devices",
    "--specials": "specials",
    "--write-devices": "devices",
    "--copy-devices": "devices",
}
SHOWN = 120  # characters of a refused value quoted in a reason


class GateRefused(Exception):
    """The command is not one the distribution sends (or not one this key may run); the message says why, in a line."""


class GateConfigError(ValueError):
    """The gate's settings are unreadable or wrong."""


def _show(value: str) -> str:
    """``value`` quoted on one line, cut to :data:`SHOWN` characters."""
    return repr(value) if len(value) <= SHOWN else repr(value[:SHOWN]) + "..."


@dataclass(frozen=True)
class GateConfig:
    """What the node's transport is (as the head's ``snapshot_distribute`` builds it) and what a key may do here."""

    cache_dir: str  # the hub cache: commands write under <cache_dir>/models--*/ only
    address: str  # this node's fabric address (as the head names it in the relay's spec)
    targets: tuple[str, ...] = ()  # the fabric addresses this node may pass blobs on to
    user: str = "root"
    key: str | None = None
    known_hosts: str | None = None
    port: int = 22
    control_dir: str | None = None  # None: no connection sharing (commands made either way are accepted otherwise)
    python: str = "python3"
    rsync: str = "rsync"
    ssh: str = "ssh"
    host_key_checking: str = "yes"
    connect_timeout: int = 30
    control_persist: int = 60
    write: bool = True  # false: the listing and the dry-run metadata rsync only
    peer: bool = False  # another worker's key: rsync into <repo>/blobs/ and a relay hop only

    def __post_init__(self) -> None:
        if not os.path.isabs(self.cache_dir) or os.path.normpath(self.cache_dir) != self.cache_dir or self.cache_dir == "/":
            raise GateConfigError(f"cache_dir must be a normalised absolute folder other than /, not {self.cache_dir!r}")
        if self.host_key_checking not in HOST_KEY_CHECKING:
            raise GateConfigError(f"host_key_checking must be one of {', '.join(HOST_KEY_CHECKING)}, not {self.host_key_checking!r}")
        if not 1 <= self.port <= 65535:
            raise GateConfigError(f"port must be between 1 and 65535, not {self.port}")
        try:
            for host in (self.address, *self.targets):
                check_ssh_target(host)
            self.transport(multiplex=self.control_dir is not None)
        except DistributeError as exc:
            raise GateConfigError(str(exc)) from exc

    @classmethod
    def from_dict(cls, raw: t.Any) -> GateConfig:
        """The settings from their JSON form (every field by name; unknown names are refused)."""
        if not isinstance(raw, dict):
            raise GateConfigError("the gate settings must be a JSON object")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(raw) - set(fields))
        if unknown:
            raise GateConfigError(f"unknown gate settings: {', '.join(unknown)}")
        values: dict[str, t.Any] = {}
        for name, value in raw.items():
            kind = str(fields[name].type)
            if name == "targets":
                ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
                value = tuple(value) if ok else value
            elif kind == "bool":
                ok = isinstance(value, bool)
            elif kind == "int":
                ok = isinstance(value, int) and not isinstance(value, bool)
            else:
                ok = isinstance(value, str) or (value is None and "None" in kind)
            if not ok:
                raise GateConfigError(f"gate setting {name} has the wrong type: {value!r}")
            values[name] = value
        try:
            return cls(**values)
        except TypeError as exc:  # a field without a default is missing
            raise GateConfigError(f"bad gate settings: {exc}") from exc

    @classmethod
    def load(cls, path: str) -> GateConfig:
        """The settings in the JSON file ``path``."""
        try:
            with open(path, encoding="utf-8") as f:
                return cls.from_dict(json.load(f))
        except (OSError, ValueError, RecursionError) as exc:
            raise GateConfigError(f"gate settings {path}: {exc}") from exc

    def transport(self, multiplex: bool) -> SshTransport:
        """A fresh transport as the head's module builds it (with the control folder when ``multiplex``)."""
        return SshTransport(
            user=self.user,
            key=self.key,
            known_hosts=self.known_hosts,
            port=self.port,
            rsync=self.rsync,
            ssh=self.ssh,
            connect_timeout=self.connect_timeout,
            control_dir=self.control_dir if multiplex else None,
            control_persist=self.control_persist,
            python=self.python,
            host_key_checking=self.host_key_checking,
        )

    def multiplex_modes(self) -> tuple[bool, ...]:
        """With a control folder, commands made with and without connection sharing; else without only."""
        return (True, False) if self.control_dir is not None else (False,)


@functools.lru_cache(maxsize=1)
def relay_code() -> str:
    """The relay's code as the head sends it (``Pipeline``: its source, base64)."""
    return encode(inspect.getsource(_blob_relay).encode())


# --- parameters ------------------------------------------------------------------------------------------------


def _repo(path: str, config: GateConfig) -> str:
    """``path`` when it is a ``models--*`` folder right in the cache, normalised; else GateRefused."""
    if os.path.normpath(path) != path or os.path.dirname(path) != config.cache_dir or not REPO_NAME.fullmatch(os.path.basename(path)):
        raise GateRefused(f"{_show(path)} is not a models--* folder of the cache {config.cache_dir}")
    return path


def _blobs_dir(path: str, config: GateConfig) -> str:
    """The repo of ``<repo>/blobs``; else GateRefused."""
    if not path.endswith("/blobs"):
        raise GateRefused(f"{_show(path)} is not the blobs folder of a models--* folder of the cache {config.cache_dir}")
    return _repo(path[: -len("/blobs")], config)


def _blob(path: str, config: GateConfig) -> tuple[str, str]:
    """The repo and the blob's name of ``<repo>/blobs/<etag>``; else GateRefused."""
    folder, name = os.path.split(path)
    if not ETAG.fullmatch(name):
        raise GateRefused(f"{_show(name)} is not a blob's name (a hub etag: 40 or 64 lowercase hex digits)")
    return _blobs_dir(folder, config), name


def _integer(value: t.Any, what: str, top: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= top:
        raise GateRefused(f"{what} is not a whole number from 0 to {top}: {_show(str(value))}")
    return value


def _streams(command: str, multiplex: bool) -> list[int | None]:
    """The stream numbers the command names in a control socket path (None: no stream)."""
    found = {int(m.group(1)) for m in STREAM.finditer(command)} if multiplex else set()
    return [None, *sorted(stream for stream in found if stream < MAX_STREAMS)]


def _check_kind(path: str, is_kind: t.Callable[[int], bool], kind: str) -> None:
    """``path``, when it exists, is a ``kind`` (``is_kind`` of its own mode, not a symlink's target)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise GateRefused(f"cannot check {_show(path)}: {exc.strerror}") from exc
    if not is_kind(mode):
        raise GateRefused(f"{_show(path)} is a symlink or not {kind}")


def _check_folders(paths: t.Iterable[str]) -> None:
    """Each of ``paths`` that exists is a folder, not a symlink (so that a write there stays in the cache)."""
    for path in paths:
        _check_kind(path, stat.S_ISDIR, "a folder")


def _check_file(path: str) -> None:
    """``path`` is a regular file (not a symlink) when it exists: a node sends its own blobs only."""
    _check_kind(path, stat.S_ISREG, "a regular file")


def _write_folders(repo: str) -> list[str]:
    return [repo, f"{repo}/blobs", f"{repo}/blobs/{PARTIAL_DIR}"]


# --- the commands ----------------------------------------------------------------------------------------------


def _listing(command: str, script: str, config: GateConfig) -> list[str]:
    """``sh -c '<listing script>'`` for ``<repo>/blobs``."""
    try:
        words = shlex.split(script)
    except ValueError as exc:
        raise GateRefused(f"the listing script cannot be split: {exc}") from exc
    folder = words[3] if len(words) > 3 else ""
    _blobs_dir(folder, config)
    argv = listing_argv(folder)
    if shlex.join(argv) != command:
        raise GateRefused(f"the listing script is not the one the gate makes for {_show(folder)}")
    return argv


def _master(command: str, config: GateConfig) -> list[str]:
    """``sh -c`` that starts or ends a connection-sharing master to an allowed target."""
    streams = [stream for stream in _streams(command, config.control_dir is not None) if stream is not None]
    for target in (target for target in config.targets if target != config.address):
        for stream in streams:
            transport = config.transport(multiplex=True)
            start = transport.stream_setup(None, target, stream)
            exits = transport.teardown()
            for argv in [*start, *(argv for batch in exits for argv in batch)]:
                if shlex.join(argv) == command:
                    return argv
    raise GateRefused("a shell script that is neither the blob listing nor an ssh master to a target this node may pass blobs on to")


def _mkdir(command: str, words: list[str], config: GateConfig) -> list[str]:
    """``mkdir -p <repo>/blobs``."""
    if len(words) != 3 or words[1] != "-p":
        raise GateRefused("only mkdir -p <repo>/blobs is allowed")
    repo = _blobs_dir(words[2], config)
    argv = ["mkdir", "-p", f"{repo}/blobs"]
    if shlex.join(argv) != command:
        raise GateRefused("the mkdir command is not the one the gate makes")
    _check_folders(_write_folders(repo)[:2])
    return argv


def _server_form(options: t.Iterable[str]) -> tuple[set[str], list[str]]:
    """The short flags and the long options rsync's client sends its server for the client's ``options``."""
    flags: set[str] = set()
    longs: list[str] = []
    for option in options:
        form = RSYNC_SERVER_FORM.get(option, option)
        short = SHORT_OPTIONS.fullmatch(form)
        if short:
            flags.update("".join(RSYNC_SHORT_FORM.get(letter, letter) for letter in short.group(1)))
        else:
            longs.append(form)
    return flags, longs


def _refuse_blob_metadata(flags: str, options: t.Sequence[str]) -> None:
    """GateRefused when a blob push's server ``flags`` (the compact ones) or ``options`` ask for symlinks, permissions,
    owner, group, devices or specials (:data:`BLOB_REFUSED_FLAGS`, :data:`BLOB_REFUSED_OPTIONS`)."""
    letters = [*flags]
    for option in options:
        if option.startswith("--"):
            what = BLOB_REFUSED_OPTIONS.get(option.split("=", 1)[0])
            if what is not None:
                raise GateRefused(f"a blob push may not carry {what} ({_show(option)}): blobs are plain files, written here as root")
        elif option.startswith("-"):
            letters += option[1:]
    for letter in letters:
        if letter in BLOB_REFUSED_FLAGS:
            raise GateRefused(f"a blob push may not carry {BLOB_REFUSED_FLAGS[letter]}: blobs are plain files, written here as root")


def _rsync_server(words: list[str], config: GateConfig) -> list[str]:
    """rsync's server, receiving into ``<repo>/blobs/`` (blobs) or ``<repo>/`` (snapshots and refs)."""
    if any(word == "--sender" or word.startswith("--sender=") for word in words):
        raise GateRefused("rsync --sender (reading from this node) is refused: the gate lets rsync receive only")
    compat = RSYNC_COMPAT.fullmatch(words[2]) if len(words) > 2 else None
    if compat is None:
        raise GateRefused(f"rsync server flags {_show(words[2] if len(words) > 2 else '')} are not rsync's compact flags (-<flags>e.<capabilities>)")
    if len(words) < 5 or words[-2] != ".":
        raise GateRefused("the rsync server command must end with '. <destination>' (one destination)")
    flags, dest = compat.group(1), words[-1]
    options: list[str] = []
    rest = iter(words[3:-2])
    for word in rest:
        options.append(f"{word}={next(rest, '')}" if word == "--partial-dir" else word)
    if not dest.endswith("/"):
        raise GateRefused(f"rsync destination {_show(dest)} is not <repo>/ or <repo>/blobs/ of the cache")
    blobs = dest.endswith("/blobs/")
    repo = _blobs_dir(dest[:-1], config) if blobs else _repo(dest[:-1], config)
    if blobs:
        _refuse_blob_metadata(flags, options)
    dry_run = "n" in flags
    bwlimit = [option for option in options if BWLIMIT.fullmatch(option)][:1] if blobs else []
    client = [*BLOB_OPTIONS, *bwlimit] if blobs else [*METADATA_OPTIONS, *(["--dry-run"] if dry_run else [])]
    want_flags, want = _server_form(client)
    for option in options:
        if option not in want:
            raise GateRefused(f"rsync server option {_show(option)} is not one the distribution sends")
    if sorted(options) != sorted(want) or len(flags) != len(set(flags)) or set(flags) != want_flags:
        raise GateRefused(f"the rsync server options are not those the distribution sends to {_show(dest)}")
    if config.peer and not blobs:
        raise GateRefused("a peer's key may only push blobs into <repo>/blobs/")
    if not config.write and not dry_run:
        raise GateRefused("this key may not write: only a dry run of the metadata is allowed")
    _check_folders([*_write_folders(repo), f"{repo}/snapshots", f"{repo}/refs"] if not dry_run else [])
    return words


def _rsync_client(command: str, words: list[str], config: GateConfig) -> list[str]:
    """A worker's rsync of one of its blobs to an allowed target."""
    if len(words) < 4:
        raise GateRefused("only a worker's rsync of one blob to the next worker is allowed")
    repo, name = _blob(words[-2], config)
    path = f"{repo}/blobs/{name}"
    bwlimit = [word for word in words if BWLIMIT.fullmatch(word)][:1]
    for multiplex in config.multiplex_modes():
        for target in config.targets:
            for stream in _streams(command, multiplex):
                transport = config.transport(multiplex)
                argv = transport.rsync_argv(None, target, [*BLOB_OPTIONS, *bwlimit], [path], f"{repo}/blobs/", stream)
                if target != config.address and shlex.join(argv) == command:
                    _check_file(path)
                    return argv
    raise GateRefused(f"the rsync of {name} is not one the gate makes (its options, its ssh command or a target this node may pass blobs on to)")


def _hops(transport: SshTransport, targets: t.Sequence[str], stream: int | None, output: dict[str, t.Any], size: int) -> dict[str, t.Any] | None:
    """The ``next`` of a relay's spec along ``targets``, as ``Pipeline._relay_spec`` builds it."""
    nxt: dict[str, t.Any] | None = None
    for target in reversed(targets):
        spec = {"node": target, "size": size, "output": dict(output), "next": nxt}
        nxt = {"via": transport.relay_via(target, stream), "python": transport.python, "spec": spec}
    return nxt


def _relay_targets(nxt: t.Any, config: GateConfig) -> list[str]:
    """The targets a spec's ``next`` chain names (the last word of each ``via``), each allowed and once."""
    targets: list[str] = []
    prefix = f"{config.user}@"
    while nxt is not None:
        via = nxt.get("via") if isinstance(nxt, dict) else None
        last = via[-1] if isinstance(via, list) and via and isinstance(via[-1], str) else ""
        target = last[len(prefix) :] if last.startswith(prefix) else ""
        if target not in config.targets or target == config.address or target in targets:
            raise GateRefused(f"the relay's next hop {_show(str(via))} is not ssh to a target this node may pass blobs on to")
        targets.append(target)
        spec = nxt.get("spec")
        nxt = spec.get("next") if isinstance(spec, dict) else None
    return targets


def _relay(command: str, words: list[str], config: GateConfig) -> list[str]:
    """The relay, as a hop (it writes the blob and passes it on) or as a worker sending its own copy."""
    if len(words) != 6 or words[1:4] != ["-c", BOOT, MARK]:
        raise GateRefused("the relay's command line is not python -c BOOT sparkops-blob-relay CODE SPEC")
    if words[4] != relay_code():
        raise GateRefused("the relay's code is not the relay this collection ships")
    if len(words[5]) > MAX_COMMAND:
        raise GateRefused("the relay's spec is too long")
    try:
        text = base64.b64decode(words[5], validate=True).decode()
        spec = json.loads(text)
    except (binascii.Error, ValueError, RecursionError) as exc:
        raise GateRefused(f"the relay's spec is not base64 of JSON: {exc}") from exc
    if not isinstance(spec, dict):
        raise GateRefused("the relay's spec is not a JSON object")
    hop = "output" in spec
    if not hop and config.peer:
        raise GateRefused("a peer's key may only start a relay hop, not make this node send its own blobs")
    if not config.write:
        raise GateRefused("this key may not write: the relay is refused")
    if hop:
        output, nxt = spec["output"], spec.get("next")
    else:
        nxt = spec.get("next")
        first = nxt.get("spec") if isinstance(nxt, dict) else None
        output = first.get("output") if isinstance(first, dict) else None
    if not isinstance(output, dict):
        raise GateRefused("the relay's spec has no output folder")
    repo = _blobs_dir(str(output.get("dir")), config)
    name = str(output.get("name"))
    if not ETAG.fullmatch(name):
        raise GateRefused(f"{_show(name)} is not a blob's name (a hub etag: 40 or 64 lowercase hex digits)")
    out = {
        "dir": f"{repo}/blobs",
        "name": name,
        "mtime_ns": _integer(output.get("mtime_ns"), "the relay's mtime", 2**63 - 1),
        "mode": _integer(output.get("mode"), "the relay's file mode", 0o777),
    }
    size = _integer(spec.get("size"), "the relay's size", 2**63 - 1)
    targets = _relay_targets(nxt, config)
    if not hop and not targets:
        raise GateRefused("the relay sends its blob nowhere")
    bwlimit = 0 if hop else _integer(spec.get("bwlimit"), "the relay's bwlimit", 2**40)
    for multiplex in config.multiplex_modes():
        for stream in _streams(text, multiplex):
            transport = config.transport(multiplex)
            if hop:
                want = t.cast(dict, _hops(transport, [config.address, *targets], stream, out, size))["spec"]
            else:
                want = {
                    "node": config.address,
                    "size": size,
                    "input": f"{repo}/blobs/{name}",
                    "bwlimit": bwlimit,
                    "next": _hops(transport, targets, stream, out, size),
                }
            argv = relay_command(config.python, relay_code(), want)
            if shlex.join(argv) == command:
                if hop:
                    _check_folders(_write_folders(repo))
                else:
                    _check_file(f"{repo}/blobs/{name}")
                return argv
    raise GateRefused("the relay's spec is not one the gate makes (its paths, targets, ssh commands or fields)")


def decide(original_command: str, config: GateConfig) -> list[str]:
    """The argv to exec for the command line sshd received (``SSH_ORIGINAL_COMMAND``), or :class:`GateRefused`."""
    command = original_command
    if not command.strip():
        raise GateRefused("no command: an interactive shell is refused")
    if len(command) > MAX_COMMAND:
        raise GateRefused(f"the command is longer than {MAX_COMMAND} characters")
    if CONTROL_CHARACTER.search(command):
        raise GateRefused("the command holds a control character (a NUL, a line break...)")
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise GateRefused(f"the command cannot be split into words: {exc}") from exc
    if not words:
        raise GateRefused(f"not a command of the model distribution: {_show(command)}")
    if words[0] == config.rsync and words[1:2] == ["--server"]:
        return _rsync_server(words, config)
    if words[0] == config.python and MARK in words:
        return _relay(command, words, config)
    if config.peer:
        raise GateRefused(f"a peer's key may only push blobs (rsync's server, a relay hop), not run {_show(command)}")
    if words[0] == "sh" and len(words) == 3 and words[1] == "-c":
        if words[2].startswith("if [ -d "):
            return _listing(command, words[2], config)
        if not config.write:
            raise GateRefused("this key may not write: ssh masters are refused")
        return _master(command, config)
    if not config.write:
        raise GateRefused(f"this key may not write: only the listing and a dry run of the metadata are allowed, not {_show(command)}")
    if words[0] == "mkdir":
        return _mkdir(command, words, config)
    if words[0] == config.rsync:
        return _rsync_client(command, words, config)
    raise GateRefused(f"not a command of the model distribution: {_show(command)}")


def main(environ: t.Mapping[str, str], argv: t.Sequence[str]) -> int:
    """``sparkops-model-sync-gate [--peer] [SETTINGS.json]`` (``argv`` without the program's name), run by sshd as a
    forced command: exec the received command when the gate accepts it; else print why to stderr and return 1."""
    args = list(argv)
    peer = args[:1] == ["--peer"]
    args = args[1:] if peer else args
    try:
        if len(args) > 1 or any(arg.startswith("-") for arg in args):
            raise GateConfigError(f"usage: {PROG} [--peer] [SETTINGS.json]")
        config = GateConfig.load(args[0] if args else DEFAULT_SETTINGS)
        if peer:
            config = dataclasses.replace(config, peer=True)
        command = decide(environ.get("SSH_ORIGINAL_COMMAND", ""), config)
    except (GateRefused, GateConfigError) as exc:
        sys.stderr.write(f"{PROG}: refused: {exc}\n")
        return 1
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"{PROG}: cannot run {command[0]}: {exc}\n")
        return 127
    return 0  # not reached: execvp replaces this process
