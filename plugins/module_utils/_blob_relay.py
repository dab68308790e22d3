# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The relay of a cut-through chain: each node writes a blob while it arrives and passes it on at the same time.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

A chain ``source -> n1 -> n2 -> ...`` moves one blob as one stream of bytes: the source reads its file into the ssh
to ``n1``; ``n1`` writes what arrives into ``<blobs>/.sparkops-partial/<name>`` and, at the same time, into the ssh
to ``n2``; and so on. No node waits for the whole blob before passing it on (store and forward costs about a blob's
time per hop; this costs a pipe buffer). Every node runs this file's :func:`relay`, standard library only, started as

    python3 -c BOOT sparkops-blob-relay <this file, base64> <the node's spec as JSON, base64>

(base64, so that no quoting can go wrong however many hops the command passes; ``sparkops-blob-relay`` names the
processes for ``ps`` and ``pkill -f``). A node's spec says where to read (``input``: a file, or stdin), where to
write (``output``: the blob's folder, name, size, mtime and mode, or none for a node that only sends), the expected
``size``, an optional rate limit and the ``next`` hop: the command prefix that reaches it (``via``: ssh and the host,
or nothing for a local run) and its own spec. Each node builds the command of the next itself, so the quoting is one
level deep at every hop.

A node renames its partial file to the blob's name only once it holds ``size`` bytes, with the source's mtime and
permission bits (``mode & 0o777``: never setuid, setgid or sticky; the mtime so that rsync's quick check finds it up
to date); a short or failed stream leaves the partial where ``rsync --partial-dir=.sparkops-partial`` resumes it. A
node whose next hop fails still completes its own copy. The exit status is 0 only when this node's copy and every
copy after it are complete; failures are written to stderr, which every hop passes back to the head, naming the node.

A node writes as root: the blobs folder, the partial folder and the partial file are each opened without following
a symlink (one planted there is refused, the error naming it, and nothing is written through it); the mtime and mode
are set through the open file, and the file is renamed into place only while it is still the one written (a rename
replaces a symlink at the blob's name, it never follows it).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import os
import shlex
import subprocess
import sys
import time
import typing as t

MARK = "sparkops-blob-relay"
PARTIAL_DIR = ".sparkops-partial"
# sys.argv under `python3 -c BOOT MARK CODE SPEC` is ['-c', MARK, CODE, SPEC].
BOOT = (
    "import base64,sys;g={'__name__':'sparkops_blob_relay'};"
    "exec(compile(base64.b64decode(sys.argv[2]),'sparkops-blob-relay','exec'),g);raise SystemExit(g['main'](sys.argv))"
)
CHUNK = 1 << 20


def encode(value: t.Any) -> str:
    """``value`` as base64 of its JSON (or of the bytes given): an argument no shell needs to quote."""
    data = value if isinstance(value, bytes) else json.dumps(value, separators=(",", ":")).encode()
    return base64.b64encode(data).decode("ascii")


def command(python: str, code: str, spec: dict[str, t.Any]) -> list[str]:
    """The argv that runs the relay with ``spec`` (``code``: this file's source, base64)."""
    return [python, "-c", BOOT, MARK, code, encode(spec)]


def next_argv(nxt: dict[str, t.Any], code: str) -> list[str]:
    """The argv that starts the next hop: its relay command, through ``via`` (ssh and the host) as one command line."""
    argv = command(nxt["python"], code, nxt["spec"])
    return [*nxt["via"], shlex.join(argv)] if nxt["via"] else argv


def _say(node: str, message: str) -> None:
    sys.stderr.write(f"{MARK} on {node}: {message}\n")
    sys.stderr.flush()


# The partial file and its folders are opened without following a symlink (one there: ELOOP for the file, ENOTDIR for
# a folder). A new partial file is 0644 until it is whole.
PARTIAL_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_nofollow(path: str, flags: int, dir_fd: int | None = None) -> int:
    """``os.open`` of ``path`` (of its last component in the folder ``dir_fd`` when given) that refuses a symlink,
    naming ``path``."""
    try:
        return os.open(os.path.basename(path) if dir_fd is not None else path, flags, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, "a symlink: refusing to write through it", path) from exc
        if exc.errno == errno.ENOTDIR and flags & os.O_DIRECTORY:
            raise OSError(exc.errno, "a symlink or not a folder: refusing to write in it", path) from exc
        raise


def _open_once(path: str) -> int:
    """The partial file ``path`` opened for writing: ``<blobs>`` (made when missing), then ``<blobs>/<PARTIAL_DIR>``
    made and opened in it, then the file in that, each opened without following a symlink."""
    partials = os.path.dirname(path)
    blobs = os.path.dirname(partials)
    os.makedirs(blobs, exist_ok=True)
    blobs_fd = _open_nofollow(blobs, FOLDER_FLAGS)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(os.path.basename(partials), dir_fd=blobs_fd)
        partials_fd = _open_nofollow(partials, FOLDER_FLAGS, blobs_fd)
    finally:
        os.close(blobs_fd)
    try:
        return _open_nofollow(path, PARTIAL_FLAGS, partials_fd)
    finally:
        os.close(partials_fd)


def _open_partial(path: str) -> t.BinaryIO:
    """Open the partial file for writing, making its folder (which another relay may remove when it empties)."""
    retries = 10
    while True:
        try:
            return os.fdopen(_open_once(path), "wb")
        except FileNotFoundError:
            # The partial folder removed by another relay (its last partial renamed) between the calls: make it
            # again; the last try raises what it meets.
            if retries == 0:
                raise
            retries -= 1


def _finish(output: dict[str, t.Any], part: str, sink: t.BinaryIO) -> None:
    """Give the complete partial file (still open: ``sink``) the source's mtime and permission bits, then its name;
    drop the partial folder if empty."""
    sink.flush()
    os.utime(sink.fileno(), ns=(output["mtime_ns"], output["mtime_ns"]))
    os.chmod(sink.fileno(), output["mode"] & 0o777)
    written = os.fstat(sink.fileno())
    sink.close()
    found = os.lstat(part)
    if (found.st_dev, found.st_ino) != (written.st_dev, written.st_ino):
        raise OSError(errno.EEXIST, "the partial file was replaced while it was written: not renamed into place", part)
    os.replace(part, os.path.join(output["dir"], output["name"]))  # rename(2): a symlink at the name is replaced
    with contextlib.suppress(OSError):  # not empty: other blobs are on their way
        os.rmdir(os.path.dirname(part))


def relay(spec: dict[str, t.Any], code: str) -> int:
    """Copy the input to this node's file and to the next hop at once; 0 when every copy from here on is complete."""
    node, size = spec["node"], int(spec["size"])
    output = spec.get("output")
    rate = int(spec.get("bwlimit") or 0)
    chunk = max(4096, min(CHUNK, rate // 10)) if rate else CHUNK
    try:
        source = open(spec["input"], "rb", buffering=0) if spec.get("input") else os.fdopen(0, "rb", buffering=0, closefd=False)  # noqa: SIM115
    except OSError as exc:
        _say(node, f"cannot read {spec['input']}: {exc}")
        return 1
    part = os.path.join(output["dir"], PARTIAL_DIR, output["name"]) if output else ""
    child = None
    sink = None
    failed = False
    try:
        sink = _open_partial(part) if output else None
        if spec.get("next"):
            child = subprocess.Popen(next_argv(spec["next"], code), stdin=subprocess.PIPE)  # noqa: S603 - built here
        buffer = bytearray(chunk)
        view = memoryview(buffer)
        got, start, forwarding = 0, time.monotonic(), child is not None
        while True:
            count = source.readinto(view)
            if not count:
                break
            got += count
            if sink is not None:
                sink.write(view[:count])
            if forwarding and child is not None and child.stdin is not None:
                try:
                    child.stdin.write(view[:count])
                except OSError as exc:  # the next hop is gone: keep this node's copy going, report at the end
                    _say(node, f"cannot pass {output['name'] if output else spec['input']} on: {exc}")
                    forwarding, failed = False, True
            if rate:
                ahead = got / rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
        if got != size:
            _say(node, f"received {got} of {size} bytes of {output['name'] if output else spec['input']}: the sender stopped early")
            failed = True
        elif output and sink is not None:
            _finish(output, part, sink)
    except OSError as exc:
        _say(node, f"{exc}")
        failed = True
    finally:
        if sink is not None:
            with contextlib.suppress(OSError):
                sink.close()
        source.close()
        if child is not None:
            if child.stdin is not None:
                with contextlib.suppress(OSError):
                    child.stdin.close()
            failed = child.wait() != 0 or failed
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    """Run as ``python3 -c BOOT MARK CODE SPEC``."""
    return relay(json.loads(base64.b64decode(argv[3])), argv[2])
