# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hash files against their Hugging Face content addresses, in parallel, with a manifest of verified files.

Note that this module util is **PRIVATE** to the collection. It can have breaking changes at any time.

The Hub names every file by its content: a Git LFS file (weights) by the sha256 of its bytes, a regular file
(config, tokenizer) by its git blob sha1, ``sha1(b"blob <size>\\0" + bytes)``. The HF cache uses that name for the
blob (``blobs/<address>``); a ``--local-dir`` download records it as the etag in its ``.metadata`` file.
:func:`verify` hashes files on a thread pool (hashlib releases the GIL while it hashes, so threads use several
cores) and compares each digest with its address. A :class:`Manifest` remembers the files found good, keyed on
their path with size, mtime and inode, so that an unchanged file is not read again; any change re-hashes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
import typing as t
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

SHA256 = "sha256"
GIT_SHA1 = "git-sha1"
CHUNK_SIZE = 8 * 1024 * 1024
MANIFEST_VERSION = 1

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_SHA1_HEX = re.compile(r"[0-9a-f]{40}")


def algorithm_for(address: str | None) -> str | None:
    """The algorithm of a content address: V(sha256) for 64 hex digits, V(git-sha1) for 40, else None."""
    if address is None:
        return None
    if _SHA256_HEX.fullmatch(address):
        return SHA256
    if _SHA1_HEX.fullmatch(address):
        return GIT_SHA1
    return None


def hash_file(path: str | os.PathLike[str], algorithm: str, chunk_size: int = CHUNK_SIZE) -> tuple[str, int]:
    """Hash the file at ``path`` with ``algorithm`` (:data:`SHA256` or :data:`GIT_SHA1`); return (hex digest, bytes read)."""
    if algorithm not in (SHA256, GIT_SHA1):
        raise ValueError(f"unknown hash algorithm {algorithm!r}")
    digest = hashlib.sha256() if algorithm == SHA256 else hashlib.sha1()
    buffer = bytearray(chunk_size)
    view = memoryview(buffer)
    total = 0
    with open(path, "rb", buffering=0) as f:
        if algorithm == GIT_SHA1:
            digest.update(b"blob %d\0" % os.fstat(f.fileno()).st_size)
        while True:
            n = f.readinto(buffer)
            if not n:
                break
            digest.update(view[:n])
            total += n
    return digest.hexdigest(), total


@dataclass(frozen=True)
class Identity:
    """What must be unchanged for a verified hash to stay valid."""

    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> Identity:
        st = os.stat(path)
        return cls(size=st.st_size, mtime_ns=st.st_mtime_ns, inode=st.st_ino)


class Manifest:
    """Files verified earlier: path -> size, mtime_ns, inode, algorithm and the hash found (equal to the address)."""

    def __init__(self, entries: dict[str, dict[str, t.Any]] | None = None) -> None:
        self.entries: dict[str, dict[str, t.Any]] = dict(entries or {})
        self.touched: set[str] = set()

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> tuple[Manifest, str | None]:
        """Read the manifest at ``path``; a missing one is empty, an unreadable one is empty with a warning."""
        try:
            with open(path, encoding="utf-8") as f:
                document = json.load(f)
        except FileNotFoundError:
            return cls(), None
        except (OSError, ValueError) as exc:
            return cls(), f"ignored the manifest {path}, which cannot be read: {exc}"
        except RecursionError:  # nested too deeply for the JSON parser: not a manifest this module wrote
            return cls(), f"ignored the manifest {path}, which cannot be read: nested too deeply"
        if not isinstance(document, dict) or document.get("version") != MANIFEST_VERSION or not isinstance(document.get("files"), dict):
            return cls(), f"ignored the manifest {path}: not a version {MANIFEST_VERSION} manifest"
        # An entry is a flat map of numbers and strings; another (nested values, that writing it back could choke on) is dropped.
        return cls({k: v for k, v in document["files"].items() if isinstance(v, dict) and not any(isinstance(x, (dict, list)) for x in v.values())}), None

    def lookup(self, key: str, identity: Identity, algorithm: str, address: str) -> bool:
        """Whether ``key`` was verified against ``address`` and its size, mtime and inode are unchanged since."""
        entry = self.entries.get(key)
        return (
            entry is not None
            and entry.get("size") == identity.size
            and entry.get("mtime_ns") == identity.mtime_ns
            and entry.get("inode") == identity.inode
            and entry.get("algorithm") == algorithm
            and entry.get("hash") == address
        )

    def record(self, key: str, identity: Identity, algorithm: str, digest: str) -> None:
        self.entries[key] = {"size": identity.size, "mtime_ns": identity.mtime_ns, "inode": identity.inode, "algorithm": algorithm, "hash": digest}
        self.touched.add(key)

    def forget(self, key: str) -> None:
        self.entries.pop(key, None)
        self.touched.add(key)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the manifest atomically (a temporary file in the same folder, then a rename).

        Entries of files that no longer exist, or changed since they were verified, are dropped.
        """
        kept: dict[str, dict[str, t.Any]] = {}
        for key, entry in sorted(self.entries.items()):
            if key not in self.touched:
                try:
                    identity = Identity.of(key)
                except OSError:
                    continue
                if not self.lookup(key, identity, str(entry.get("algorithm")), str(entry.get("hash"))):
                    continue
            kept[key] = entry
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".sparkops-verified.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"version": MANIFEST_VERSION, "files": kept}, f, indent=1, sort_keys=True)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


@dataclass(frozen=True)
class HashJob:
    """A file to check: ``key`` names it (its real path) and ``address`` is what its hash must be."""

    key: str
    address: str
    algorithm: str


@dataclass(frozen=True)
class HashOutcome:
    job: HashJob
    digest: str | None
    reused: bool
    bytes_read: int
    identity: Identity | None = None  # the file's before it was read
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.digest == self.job.address


@dataclass(frozen=True)
class VerifyResult:
    outcomes: list[HashOutcome]
    hashed_files: int
    hashed_bytes: int
    reused_files: int
    elapsed: float


def _check(job: HashJob, manifest: Manifest | None, chunk_size: int) -> HashOutcome:
    try:
        identity = Identity.of(job.key)
        if manifest is not None and manifest.lookup(job.key, identity, job.algorithm, job.address):
            return HashOutcome(job=job, digest=job.address, reused=True, bytes_read=0, identity=identity)
        digest, bytes_read = hash_file(job.key, job.algorithm, chunk_size)
    except OSError as exc:
        return HashOutcome(job=job, digest=None, reused=False, bytes_read=0, error=f"cannot be read: {exc.strerror or exc}")
    return HashOutcome(job=job, digest=digest, reused=False, bytes_read=bytes_read, identity=identity)


def verify(
    jobs: t.Sequence[HashJob],
    manifest: Manifest | None = None,
    workers: int = 1,
    chunk_size: int = CHUNK_SIZE,
    clock: t.Callable[[], float] = time.monotonic,
) -> VerifyResult:
    """Hash ``jobs`` on ``workers`` threads (largest files first), reusing and updating ``manifest``.

    Outcomes come back in the order of ``jobs``; give each file (key) once. A file found good is recorded in the manifest with the size, mtime
    and inode it had before it was read; a file found bad, or unreadable, is removed from it.
    """
    start = clock()

    def size(job: HashJob) -> int:
        try:
            return os.path.getsize(job.key)
        except OSError:
            return 0

    order = sorted(range(len(jobs)), key=lambda i: size(jobs[i]), reverse=True)
    results: dict[int, HashOutcome] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {i: pool.submit(_check, jobs[i], manifest, chunk_size) for i in order}
        for i, future in futures.items():
            results[i] = future.result()
    outcomes = [results[i] for i in range(len(jobs))]
    if manifest is not None:
        for outcome in outcomes:
            if outcome.reused:
                continue
            if outcome.ok and outcome.identity is not None:
                manifest.record(outcome.job.key, outcome.identity, outcome.job.algorithm, outcome.job.address)
            else:
                manifest.forget(outcome.job.key)
    hashed = [o for o in outcomes if not o.reused and o.error is None]
    return VerifyResult(
        outcomes=outcomes,
        hashed_files=len(hashed),
        hashed_bytes=sum(o.bytes_read for o in hashed),
        reused_files=sum(1 for o in outcomes if o.reused),
        elapsed=clock() - start,
    )
