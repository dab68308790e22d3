# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _snapshot_distribute: whole runs (plan, scheduler, pipeline, metadata) with real rsync and the real
relay between local folders standing for the head and the workers (LocalTransport), over a real hub cache. The pieces
have their own files: test__snapshot_plan.py, test__snapshot_scheduler.py, test__snapshot_transport.py."""

from __future__ import annotations

import os
import random
import re
import stat
import sys
import threading
import time
import typing as t
from dataclasses import dataclass
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import MARK, PARTIAL_DIR
from ansible_collections.sparkops.inference.plugins.module_utils._run_command import run_command
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_distribute import distribute
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import DistributeError, Node, node_name
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_result import Result
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_transport import BLOB_OPTIONS
from ansible_collections.sparkops.inference.tests.lab.sparklab.hf_model import SnapshotInfo, read_hub_snapshot, write_hub_snapshot
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.local_transport import LocalTransport

REPO_ID = "acme/tiny-llm"
CACHE = "/srv/hf hub"  # the hub cache on every node, with a space to exercise the quoting
REPO = f"{CACHE}/models--acme--tiny-llm"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TARGETS = ("10.0.0.2", "10.0.0.3", "10.0.0.4")


def model_files(sizes: t.Sequence[int] = (48_000, 32_000, 16_000, 8_000)) -> dict[str, bytes]:
    """A config and shards of the given sizes (random bytes, so every blob differs)."""
    rng = random.Random(7)
    files = {f"model-{i:05d}-of-{len(sizes):05d}.safetensors": rng.randbytes(size) for i, size in enumerate(sizes, start=1)}
    files["config.json"] = b'{"architectures": ["TinyLlmForCausalLM"]}'
    return files


@dataclass
class Cluster:
    """The head and the targets as folders under ``root``; the model in the head's cache."""

    root: Path
    targets: list[str]
    info: SnapshotInfo

    def folder(self, node: Node) -> Path:
        return self.root / ("head" if node is None else node)

    @property
    def transport(self) -> LocalTransport:
        return LocalTransport({None: str(self.folder(None)), **{target: str(self.folder(target)) for target in self.targets}})

    def repo(self, node: Node) -> Path:
        return Path(str(self.folder(node)) + REPO)

    def blob(self, node: Node, name: str) -> Path:
        return self.repo(node) / "blobs" / name

    def blobs(self, node: Node) -> dict[str, bytes]:
        folder = self.repo(node) / "blobs"
        return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} if folder.is_dir() else {}

    def sizes(self) -> list[tuple[str, int]]:
        """The head's blobs, largest first."""
        return sorted(((name, len(data)) for name, data in self.blobs(None).items()), key=lambda x: (-x[1], x[0]))

    def shard_blob(self, index: int) -> str:
        """The blob of shard ``index`` (1 is the largest)."""
        return self.info.etags[f"model-{index:05d}-of-00004.safetensors"]

    def give(self, node: str, name: str, data: bytes | None = None) -> None:
        """Put a blob on ``node`` (the head's, or ``data``)."""
        path = self.blob(node, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.blob(None, name).read_bytes() if data is None else data)


def make_cluster(root: Path, targets: t.Sequence[str] = TARGETS, sizes: t.Sequence[int] = (48_000, 32_000, 16_000, 8_000)) -> Cluster:
    info = write_hub_snapshot(Path(str(root / "head") + CACHE), REPO_ID, model_files(sizes), commit=COMMIT, refs=("main",))
    return Cluster(root, list(targets), info)


class Recorder:
    """A runner that runs each command for real and records it; ``fail`` makes the first N runs of an rsync of a
    given blob fail with rc 23."""

    def __init__(self, fail: dict[str, int] | None = None, stderr: str = "rsync: connection unexpectedly closed") -> None:
        self.commands: list[list[str]] = []
        self.fail = dict(fail or {})
        self.stderr = stderr
        self._lock = threading.Lock()

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        with self._lock:
            self.commands.append(argv)
            for name, count in self.fail.items():
                if count and any(arg.endswith(f"/blobs/{name}") for arg in argv):
                    self.fail[name] = count - 1
                    return 23, "", self.stderr
        return run_command(argv)

    def blob_rsyncs(self) -> list[list[str]]:
        return [argv for argv in self.commands if f"--partial-dir={PARTIAL_DIR}" in argv]

    def relays(self) -> list[list[str]]:
        return [argv for argv in self.commands if MARK in argv]


def run(cluster: Cluster, **kwargs: t.Any) -> Result:
    kwargs.setdefault("retry_delay", 0)
    return distribute(REPO, kwargs.pop("targets", cluster.targets), kwargs.pop("transport", cluster.transport), **kwargs)


def assert_converged(cluster: Cluster, targets: t.Sequence[str]) -> None:
    """Every target holds the head's repo: the same blobs, snapshot symlinks and refs, read back as a hub cache."""
    head = read_hub_snapshot(cluster.info.cache_dir, REPO_ID)
    for target in targets:
        assert cluster.blobs(target) == cluster.blobs(None), target
        copy = read_hub_snapshot(Path(str(cluster.folder(target)) + CACHE), REPO_ID)
        assert copy.commit == COMMIT and copy.refs == ("main",)
        assert copy.files == head.files
        for path in cluster.info.etags:
            link = copy.link(path)
            assert link.is_symlink() and os.readlink(link) == os.readlink(head.link(path))
            assert link.read_bytes() == cluster.info.link(path).read_bytes()
        assert not (cluster.repo(target) / "blobs" / PARTIAL_DIR).exists()


# --- the whole run ---------------------------------------------------------------------------------------------


def test_chain_sends_every_blob_along_the_chain_then_the_metadata(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)
    result = run(cluster)
    assert_converged(cluster, TARGETS)
    sizes = cluster.sizes()
    total = sum(size for _name, size in sizes)
    out = result.as_dict()
    assert out["changed"] is True
    assert out["topology"] == "chain" and out["streams"] == 4
    assert out["bytes"] == 3 * total
    assert sorted((x["source"], x["target"], x["file"]) for x in out["transferred"]) == sorted(
        (source, target, name) for source, target in [("head", TARGETS[0]), (TARGETS[0], TARGETS[1]), (TARGETS[1], TARGETS[2])] for name, _size in sizes
    )
    assert all(x["bytes"] == dict(sizes)[x["file"]] and x["seconds"] >= 0 for x in out["transferred"])
    expected_plan = {"files": [name for name, _size in sizes], "bytes": total}
    assert out["plan"] == dict.fromkeys(TARGETS, expected_plan)
    assert {target: (sorted(v["files"]), v["bytes"]) for target, v in out["per_target"].items()} == dict.fromkeys(
        TARGETS, (sorted(name for name, _size in sizes), total)
    )
    assert "would_transfer" not in out
    assert out["seconds"] > 0
    # snapshots/ first, refs/ last, every symlink and the ref itemized.
    for target in TARGETS:
        changes = out["metadata"][target]
        assert changes[0] == "cd+++++++++ snapshots/" and changes[-1] == ">f+++++++++ refs/main"
        assert sum(line.startswith("cL+++++++++ snapshots/") for line in changes) == len(cluster.info.etags)


def test_store_and_forward_passes_each_blob_on_once_received_largest_first(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)
    result = run(cluster, streams=1, cut_through=False)
    by_link: dict[str, list[tuple[str, float, float]]] = {}
    for transfer in result.transfers:
        by_link.setdefault(transfer.link.label, []).append((transfer.blob.name, transfer.started, transfer.finished))
    assert list(by_link) == [f"head -> {TARGETS[0]}", f"{TARGETS[0]} -> {TARGETS[1]}", f"{TARGETS[1]} -> {TARGETS[2]}"]
    links = list(by_link.values())
    # one stream: the head sends largest first; each blob goes on only once its source has it
    assert [name for name, _s, _f in links[0]] == [name for name, _size in cluster.sizes()]
    for upstream, downstream in zip(links, links[1:], strict=False):
        finished = {name: end for name, _start, end in upstream}
        assert all(start >= finished[name] for name, start, _end in downstream)
    # ... and it is a pipeline: the last link starts before the first one is done
    assert links[2][0][1] < links[0][-1][2]


def test_converged_rerun_sends_nothing(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)
    run(cluster)
    recorder = Recorder()
    result = run(cluster, runner=recorder)
    out = result.as_dict()
    assert out["changed"] is False
    assert out["transferred"] == [] and out["bytes"] == 0
    assert out["plan"] == dict.fromkeys(TARGETS, {"files": [], "bytes": 0})
    assert out["metadata"] == dict.fromkeys(TARGETS, [])
    assert recorder.blob_rsyncs() == []
    # a listing per target, then snapshots and refs per target; no mkdir
    assert sorted(argv[0] for argv in recorder.commands) == ["rsync"] * 6 + ["sh"] * 3
    assert_converged(cluster, TARGETS)


def test_held_blob_is_not_sent_but_passed_on_and_a_wrong_size_is_replaced(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)
    largest, second = cluster.shard_blob(1), cluster.shard_blob(2)
    cluster.give(TARGETS[0], largest)
    cluster.give(TARGETS[1], second, b"truncated")
    cluster.give(TARGETS[1], "0" * 64, b"a blob the head lacks")
    result = run(cluster)
    sent = {(x.link.label, x.blob.name) for x in result.transfers}
    assert (f"head -> {TARGETS[0]}", largest) not in sent
    assert (f"{TARGETS[0]} -> {TARGETS[1]}", largest) in sent
    assert (f"{TARGETS[0]} -> {TARGETS[1]}", second) in sent
    plan = result.plan.as_dict()
    assert largest not in plan[TARGETS[0]]["files"] and len(plan[TARGETS[0]]["files"]) == 4
    assert plan[TARGETS[1]]["files"][:2] == [largest, second]
    extra = cluster.blobs(TARGETS[1]).pop("0" * 64)
    assert extra == b"a blob the head lacks"  # left alone
    cluster.blob(TARGETS[1], "0" * 64).unlink()
    assert_converged(cluster, TARGETS)


def test_star_sends_everything_from_the_head(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)
    cluster.give(TARGETS[2], cluster.shard_blob(3))
    result = run(cluster, topology="star", streams=2)
    assert {x.link.source for x in result.transfers} == {None}
    assert len(result.transfers) == 5 + 5 + 4
    assert result.as_dict()["topology"] == "star"
    assert_converged(cluster, TARGETS)


def test_check_mode_plans_and_changes_nothing(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)
    cluster.give(TARGETS[0], cluster.shard_blob(2))
    recorder = Recorder()
    out = run(cluster, check_mode=True, runner=recorder).as_dict()
    assert out["changed"] is True
    assert out["transferred"] == [] and out["bytes"] == 0
    assert out["would_transfer"] == out["plan"]
    sizes = dict(cluster.sizes())
    first = out["would_transfer"][TARGETS[0]]
    assert cluster.shard_blob(2) not in first["files"] and first["bytes"] == sum(sizes.values()) - sizes[cluster.shard_blob(2)]
    assert out["would_transfer"][TARGETS[1]]["files"] == [name for name, _size in cluster.sizes()]
    assert [argv[0] for argv in recorder.commands] == ["sh"] * 3  # the listings only
    assert not cluster.folder(TARGETS[1]).exists() and not cluster.folder(TARGETS[2]).exists()
    assert cluster.blobs(TARGETS[0]) == {cluster.shard_blob(2): cluster.blob(None, cluster.shard_blob(2)).read_bytes()}


def test_check_mode_sees_a_new_ref_without_writing_it(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)
    run(cluster)
    (cluster.repo(None) / "refs" / "v1.0").write_text(COMMIT)
    out = run(cluster, check_mode=True).as_dict()
    assert out["changed"] is True
    assert out["would_transfer"] == dict.fromkeys(TARGETS, {"files": [], "bytes": 0})
    # the new ref (and, when the second changed since, the refs/ folder's time)
    assert all(lines[-1] == ">f+++++++++ refs/v1.0" and set(lines[:-1]) <= {".d..t...... refs/"} for lines in out["metadata"].values()), out
    assert not (cluster.repo(TARGETS[0]) / "refs" / "v1.0").exists()
    assert all(lines[-1] == ">f+++++++++ refs/v1.0" for lines in run(cluster).as_dict()["metadata"].values())
    assert (cluster.repo(TARGETS[2]) / "refs" / "v1.0").read_text() == COMMIT
    assert run(cluster, check_mode=True).as_dict()["changed"] is False


# --- failures and resuming -------------------------------------------------------------------------------------


def test_failed_rsync_is_retried(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, targets=TARGETS[:2])
    flaky = cluster.shard_blob(3)
    recorder = Recorder(fail={flaky: 2})
    delays: list[float] = []
    result = run(cluster, runner=recorder, retries=2, retry_delay=0.5, sleep=delays.append, cut_through=False)
    attempts = {(x.link.target, x.blob.name): x.attempts for x in result.transfers}
    assert attempts[(TARGETS[0], flaky)] == 3
    assert sorted(attempts.values()) == [1] * 9 + [3]
    assert delays == [0.5, 0.5]
    assert_converged(cluster, TARGETS[:2])


def test_failure_after_the_retries_names_the_file_and_link_and_keeps_what_was_sent(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, targets=TARGETS[:2])
    bad = cluster.shard_blob(4)  # the smallest shard: with one stream the larger ones are sent before it
    recorder = Recorder(fail={bad: 99}, stderr="rsync: [sender] write error: Broken pipe (32)\n")
    with pytest.raises(DistributeError) as caught:
        run(cluster, runner=recorder, retries=1, streams=1, cut_through=False)
    size = dict(cluster.sizes())[bad]
    assert str(caught.value) == (
        f"cannot send {bad} ({size} bytes) on head -> {TARGETS[0]}: rsync failed (2 attempts), rc 23: rsync: [sender] write error: Broken pipe (32)"
    )
    result = caught.value.result
    assert result is not None
    sent = [x.blob.name for x in result.transfers if x.link.target == TARGETS[0]]
    assert sent == [name for name, _size in cluster.sizes()][:3]
    assert set(cluster.blobs(TARGETS[0])) == set(sent)
    assert result.as_dict()["changed"] is True and result.metadata == {}
    assert not (cluster.repo(TARGETS[0]) / "refs").exists() and not (cluster.repo(TARGETS[1]) / "refs").exists()
    # the rest goes on the next run
    out = run(cluster).as_dict()
    assert out["plan"][TARGETS[0]]["files"] == [name for name, _size in cluster.sizes() if name not in sent]
    assert_converged(cluster, TARGETS[:2])


class Interrupting(LocalTransport):
    """Kills the rsync of one blob part way (slowed down, then SIGTERM), as a lost connection would."""

    def __init__(self, roots: t.Mapping[Node, str], blob: str) -> None:
        super().__init__(roots)
        self.blob = blob

    def rsync_argv(self, source: Node, target: str, options: t.Sequence[str], paths: t.Sequence[str], dest: str, stream: int | None = None) -> list[str]:
        argv = super().rsync_argv(source, target, options, paths, dest, stream)
        if paths[0].endswith(self.blob):
            return ["timeout", "-s", "TERM", "0.4", argv[0], "--bwlimit=500", *argv[1:]]
        return argv


def test_an_interrupted_blob_stays_out_of_place_and_is_resumed(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, targets=TARGETS[:1], sizes=(2_000_000, 1000))
    big = cluster.sizes()[0][0]
    with pytest.raises(DistributeError, match=re.escape(f"cannot send {big} (2000000 bytes) on head -> {TARGETS[0]}: rsync failed (1 attempt), rc 124: ")):
        run(cluster, transport=Interrupting(cluster.transport.roots, big), retries=0, cut_through=False)
    partial = cluster.repo(TARGETS[0]) / "blobs" / PARTIAL_DIR / big
    assert 0 < partial.stat().st_size < 2_000_000
    assert not cluster.blob(TARGETS[0], big).exists()
    assert set(cluster.blobs(TARGETS[0])) == set(cluster.blobs(None)) - {big}
    assert not (cluster.repo(TARGETS[0]) / "snapshots").exists()
    result = run(cluster)
    assert [x.blob.name for x in result.transfers] == [big]
    assert_converged(cluster, TARGETS[:1])


# --- what a blob push carries -----------------------------------------------------------------------------------


def test_a_blob_push_carries_no_setuid_bit_symlink_or_fifo(tmp_path: Path) -> None:
    """A compromised node's blobs folder: a setuid-root file, a symlink to a file outside and a FIFO among the real
    blobs, all pushed with BLOB_OPTIONS (the most the gate lets a blob push ask for): the file arrives without its
    setuid and setgid bits, the symlink and the FIFO are skipped; the real blobs arrive whole with their mtimes, one
    resumed from its partial (rsync's delta against it, as over ssh)."""
    cluster = make_cluster(tmp_path, targets=TARGETS[:1], sizes=(400_000, 1000))
    real = dict(cluster.sizes())
    big = cluster.sizes()[0][0]
    head = cluster.repo(None) / "blobs"
    outside = tmp_path / "outside"
    outside.write_bytes(b"root's file")
    setuid, link, fifo = "5" * 64, "1" * 64, "f" * 64
    (head / setuid).write_bytes(b"#!/bin/sh\nid\n")
    (head / setuid).chmod(0o6755)
    (head / link).symlink_to(outside)
    os.mkfifo(head / fifo)
    partial = cluster.repo(TARGETS[0]) / "blobs" / PARTIAL_DIR / big
    partial.parent.mkdir(parents=True)
    partial.write_bytes(cluster.blob(None, big).read_bytes()[: real[big] // 2])
    transport = cluster.transport
    # --no-whole-file: rsync's delta algorithm, as over ssh (between local folders rsync sends whole files); --stats
    # to see it use the partial
    argv = transport.rsync_argv(None, TARGETS[0], [*BLOB_OPTIONS, "--no-whole-file", "--stats"], [f"{head}/"], transport.path(TARGETS[0], f"{REPO}/blobs/"))
    rc, out, err = run_command(argv)
    assert rc == 0, err
    assert f'skipping non-regular file "{link}"' in out + err and f'skipping non-regular file "{fifo}"' in out + err
    matched = re.search(r"Matched data: ([0-9,]+) bytes", out)
    assert matched and int(matched.group(1).replace(",", "")) >= real[big] // 4, out  # resumed: the partial's bytes not sent again
    target = cluster.repo(TARGETS[0]) / "blobs"
    copy = (target / setuid).lstat()
    assert stat.S_ISREG(copy.st_mode) and oct(copy.st_mode & 0o7000) == oct(0) and (target / setuid).read_bytes() == b"#!/bin/sh\nid\n"
    assert not os.path.lexists(target / link) and not os.path.lexists(target / fifo)
    assert outside.read_bytes() == b"root's file"
    for name in real:
        assert (target / name).read_bytes() == cluster.blob(None, name).read_bytes()
        assert int((target / name).stat().st_mtime) == int(cluster.blob(None, name).stat().st_mtime)
    assert not (target / PARTIAL_DIR).exists()


@pytest.mark.parametrize("cut_through", [True, False])
def test_a_setuid_blob_arrives_without_its_setuid_bit_and_a_worker_resumes_a_partial(tmp_path: Path, cut_through: bool) -> None:
    """A setuid blob on the head reaches every worker of a chain (relayed by the first, cut-through or store and
    forward) without its setuid and setgid bits; the second worker's partial is resumed by the first worker's rsync."""
    cluster = make_cluster(tmp_path, targets=TARGETS[:2])
    setuid, big = cluster.shard_blob(2), cluster.shard_blob(1)
    cluster.blob(None, setuid).chmod(0o6755)
    partial = cluster.repo(TARGETS[1]) / "blobs" / PARTIAL_DIR / big
    partial.parent.mkdir(parents=True)
    partial.write_bytes(cluster.blob(None, big).read_bytes()[:10_000])
    recorder = Recorder()
    run(cluster, runner=recorder, cut_through=cut_through)
    assert_converged(cluster, TARGETS[:2])
    for target in TARGETS[:2]:
        mode = cluster.blob(target, setuid).lstat().st_mode
        assert stat.S_ISREG(mode) and oct(mode & 0o7000) == oct(0), target
    source = cluster.transport.path(TARGETS[0], f"{REPO}/blobs/{big}")
    resumed = [argv for argv in recorder.blob_rsyncs() if source in argv]
    assert resumed and resumed[0][:4] == ["rsync", *BLOB_OPTIONS] and resumed[0][-1] == cluster.transport.path(TARGETS[1], f"{REPO}/blobs/")


def test_an_exception_in_a_transfer_ends_the_run(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)

    def runner(argv: list[str]) -> tuple[int, str, str]:
        if f"--partial-dir={PARTIAL_DIR}" in argv and TARGETS[1] in argv[-1]:
            raise RuntimeError("boom")
        return run_command(argv)

    with pytest.raises(DistributeError, match=rf"cannot send \w+ on {TARGETS[0]} -> {TARGETS[1]}: RuntimeError\('boom'\)"):
        run(cluster, runner=runner, cut_through=False)


def test_a_failing_listing_fails_before_anything_is_sent(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)

    def runner(argv: list[str]) -> tuple[int, str, str]:
        if argv[0] == "sh" and TARGETS[1] in argv[-1]:
            return 255, "", "ssh: connect to host 10.0.0.3 port 22: No route to host\n"
        return run_command(argv)

    with pytest.raises(DistributeError) as caught:
        run(cluster, runner=runner)
    assert str(caught.value) == f"cannot list {REPO}/blobs on {TARGETS[1]}: rc 255: ssh: connect to host 10.0.0.3 port 22: No route to host"
    assert caught.value.result is None
    assert not cluster.folder(TARGETS[0]).exists()


def test_a_failing_metadata_rsync_names_the_folder(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, targets=TARGETS[:1])

    def runner(argv: list[str]) -> tuple[int, str, str]:
        if "--itemize-changes" in argv and argv[-2].endswith("/refs"):
            return 11, "", "rsync: write failed: No space left on device (28)"
        return run_command(argv)

    with pytest.raises(DistributeError) as caught:
        run(cluster, runner=runner, retries=0)
    assert str(caught.value) == f"cannot send refs/ on head -> {TARGETS[0]}: rsync failed (1 attempt), rc 11: rsync: write failed: No space left on device (28)"
    assert caught.value.result is not None and len(caught.value.result.transfers) == 5
    assert (cluster.repo(TARGETS[0]) / "snapshots" / COMMIT).is_dir()


@pytest.mark.parametrize(
    ("repo_dir", "targets", "kwargs", "message"),
    [
        ("hub/models--acme--tiny-llm", TARGETS, {}, "repo_dir must be an absolute path, not 'hub/models--acme--tiny-llm'"),
        (REPO, [], {}, "targets is empty: there is nowhere to send the model"),
        (REPO, ["a", "b", "a"], {}, "targets are listed more than once: a"),
        (REPO, TARGETS, {"topology": "ring"}, "topology must be one of chain, star, not 'ring'"),
        (REPO, TARGETS, {"streams": 0}, "streams must be at least 1, not 0"),
        (REPO, TARGETS, {"retries": -1}, "retries must be at least 0, not -1"),
        ("/srv/elsewhere", TARGETS, {}, "cannot list the blobs on the head: "),
    ],
)
def test_bad_arguments(tmp_path: Path, repo_dir: str, targets: list[str], kwargs: dict[str, t.Any], message: str) -> None:
    cluster = make_cluster(tmp_path)
    with pytest.raises(DistributeError) as caught:
        distribute(repo_dir, targets, cluster.transport, **kwargs)
    assert str(caught.value).startswith(message)


def test_a_head_without_blobs_fails(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)
    for path in (cluster.repo(None) / "blobs").iterdir():
        path.rename(path.with_name(path.name + ".incomplete"))
    with pytest.raises(DistributeError, match=r"^/srv/hf hub/models--acme--tiny-llm/blobs on the head holds no blob: nothing to distribute$"):
        run(cluster)


# --- pipelining ------------------------------------------------------------------------------------------------


class Slow(LocalTransport):
    """Each blob takes ``delay`` seconds more to send, as if the link were slow."""

    delay = 0.1

    def rsync_argv(self, source: Node, target: str, options: t.Sequence[str], paths: t.Sequence[str], dest: str, stream: int | None = None) -> list[str]:
        argv = super().rsync_argv(source, target, options, paths, dest, stream)
        return ["sh", "-c", 'sleep "$0" && exec "$@"', str(self.delay), *argv] if PARTIAL_DIR in " ".join(options) else argv


def test_a_store_and_forward_chain_of_three_takes_hardly_longer_than_one_target(tmp_path: Path) -> None:
    one = make_cluster(tmp_path / "one", targets=TARGETS[:1])
    three = make_cluster(tmp_path / "three")
    start = time.monotonic()
    run(one, transport=Slow(one.transport.roots), streams=1, cut_through=False)
    single = time.monotonic() - start
    start = time.monotonic()
    result = run(three, transport=Slow(three.transport.roots), streams=1, cut_through=False)
    chain = time.monotonic() - start
    assert len(result.transfers) == 15
    # 5 blobs of 0.1 s: one target 0.5 s; the chain 7 steps, 0.7 s (3 targets one after the other: 1.5 s)
    assert single >= 5 * Slow.delay
    # Under load (a fresh-clone run beside the engine's tests) the chain took 2.2 times one target; one after the other
    # takes 3 times.
    assert chain < 2.5 * single, (chain, single)
    assert_converged(three, TARGETS)


# --- ssh connection sharing, as the pipeline asks for it --------------------------------------------------------


class Muxing(LocalTransport):
    """Records the setup and teardown the pipeline asks for; each setup command is a real (harmless) command."""

    def __init__(self, roots: t.Mapping[Node, str]) -> None:
        super().__init__(roots)
        self.setups: list[tuple[Node, str, int]] = []
        self.torn_down = 0

    def stream_setup(self, source: Node, target: str, stream: int) -> list[list[str]]:
        self.setups.append((source, target, stream))
        return [["true", f"setup {node_name(source)} {target} {stream}"]]

    def teardown(self) -> list[list[list[str]]]:
        self.torn_down += 1
        return [[["true", "teardown"]]]


def test_each_stream_is_set_up_before_its_first_file_and_torn_down_at_the_end(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, targets=TARGETS[:2], sizes=(4000, 3000, 2000, 1000))
    transport = Muxing(cluster.transport.roots)
    recorder = Recorder()
    run(cluster, transport=transport, runner=recorder, streams=2, cut_through=False)
    assert sorted(transport.setups, key=str) == sorted(
        [(None, TARGETS[0], 0), (None, TARGETS[0], 1), (TARGETS[0], TARGETS[1], 0), (TARGETS[0], TARGETS[1], 1)], key=str
    )
    assert transport.torn_down == 1
    commands = [" ".join(argv) for argv in recorder.commands]
    assert commands.count("true teardown") == 1
    # The teardown comes after the last blob and the metadata (which uses stream 0's connection).
    last_blob = max(i for i, c in enumerate(commands) if f"--partial-dir={PARTIAL_DIR}" in c)
    assert last_blob < max(i for i, c in enumerate(commands) if "--itemize-changes" in c) < commands.index("true teardown")
    # The first setup comes before the first file of its link.
    for source, target in [(None, TARGETS[0]), (TARGETS[0], TARGETS[1])]:
        setups = [commands.index(f"true setup {node_name(source)} {target} {stream}") for stream in (0, 1)]
        first = min(
            i for i, argv in enumerate(recorder.commands) if f"--partial-dir={PARTIAL_DIR}" in argv and argv[-1].startswith(cluster.transport.path(target, "/"))
        )
        assert min(setups) < first
    assert_converged(cluster, TARGETS[:2])


def test_teardown_runs_after_a_failure_too(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, targets=TARGETS[:1])
    transport = Muxing(cluster.transport.roots)
    with pytest.raises(DistributeError):
        run(cluster, transport=transport, runner=Recorder(fail={cluster.sizes()[0][0]: 9}), retries=0, cut_through=False)
    assert transport.torn_down == 1


# --- cut-through -----------------------------------------------------------------------------------------------


def test_cut_through_sends_each_blob_along_the_whole_chain_in_one_stream(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)
    recorder = Recorder()
    result = run(cluster, runner=recorder)
    assert_converged(cluster, TARGETS)
    assert recorder.blob_rsyncs() == []
    assert len(recorder.relays()) == len(cluster.sizes())  # one relay a blob, started on the head
    by_blob: dict[str, set[tuple[float, float]]] = {}
    for transfer in result.transfers:
        by_blob.setdefault(transfer.blob.name, set()).add((transfer.started, transfer.finished))
    assert all(len(times) == 1 for times in by_blob.values())  # every link of a blob in the same stream
    assert len(result.transfers) == 3 * len(cluster.sizes()) and result.relay_failures == []
    for name, _size in cluster.sizes():
        head = cluster.blob(None, name).stat()
        for target in TARGETS:
            copy = cluster.blob(target, name).stat()
            assert (copy.st_mtime_ns, copy.st_mode) == (head.st_mtime_ns, head.st_mode), (target, name)
    # the copies look up to date to rsync's quick check (same size and mtime): nothing is sent again
    again = Recorder()
    assert run(cluster, runner=again, cut_through=False).as_dict()["changed"] is False


def test_a_partial_left_on_a_target_is_resumed_by_rsync_and_the_rest_goes_cut_through(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path)
    big = cluster.sizes()[0][0]
    partial = cluster.repo(TARGETS[0]) / "blobs" / PARTIAL_DIR / big
    partial.parent.mkdir(parents=True)
    partial.write_bytes(cluster.blob(None, big).read_bytes()[:20_000])
    recorder = Recorder()
    result = run(cluster, runner=recorder)
    assert [(argv[-2], argv[-1]) for argv in recorder.blob_rsyncs()] == [(str(cluster.blob(None, big)), f"{cluster.repo(TARGETS[0])}/blobs/")]
    assert len(recorder.relays()) == len(cluster.sizes())  # the big blob's relay starts at TARGETS[0] once it holds it
    assert {x.link.label for x in result.transfers if x.blob.name == big} == {
        f"head -> {TARGETS[0]}",
        f"{TARGETS[0]} -> {TARGETS[1]}",
        f"{TARGETS[1]} -> {TARGETS[2]}",
    }
    assert_converged(cluster, TARGETS)


class FirstHopFails(LocalTransport):
    """The first relay that starts a hop to ``target`` fails as ``script`` (a shell command) does: ssh that cannot
    connect, a target with no Python 3."""

    def __init__(self, roots: t.Mapping[Node, str], target: str, script: str) -> None:
        super().__init__(roots)
        self.target = target
        self.script = script
        self.failed = False

    def relay_via(self, target: str, stream: int) -> list[str]:
        if target == self.target and not self.failed:
            self.failed = True
            return ["sh", "-c", self.script]
        return []


def test_a_failed_relay_keeps_the_complete_copies_and_rsync_sends_the_rest_link_by_link(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, sizes=(3_000_000, 1000))
    big = cluster.sizes()[0][0]
    recorder = Recorder()
    refused = "echo 'ssh: connect to host 10.0.0.3 port 22: Connection refused' >&2; exit 255"
    result = run(cluster, transport=FirstHopFails(cluster.transport.roots, TARGETS[1], refused), runner=recorder, streams=1)
    assert_converged(cluster, TARGETS)
    [failure] = result.relay_failures
    assert failure.startswith(f"{big} on head -> {TARGETS[0]} -> {TARGETS[1]} -> {TARGETS[2]}: the relay failed, rc 1: ")
    assert "ssh: connect to host 10.0.0.3 port 22: Connection refused" in failure
    assert f"{MARK} on {TARGETS[0]}: cannot pass {big} on: " in failure
    rsyncs = [(argv[-2], argv[-1]) for argv in recorder.blob_rsyncs()]
    assert len(rsyncs) == 3 and all(source.endswith(f"/blobs/{big}") for source, _dest in rsyncs)  # each link of its path
    assert result.as_dict()["relay_failures"] == [failure]


def test_an_interrupted_relay_leaves_a_partial_that_rsync_resumes(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, targets=TARGETS[:1], sizes=(600_000, 1000))
    big = cluster.sizes()[0][0]
    seen: list[int] = []

    def runner(argv: list[str]) -> tuple[int, str, str]:
        if MARK in argv and not seen:  # the first relay is killed part way
            seen.append(1)
            return run_command(["timeout", "--foreground", "-s", "TERM", "0.3", *argv])  # the head relay only
        if f"--partial-dir={PARTIAL_DIR}" in argv:
            partial = cluster.repo(TARGETS[0]) / "blobs" / PARTIAL_DIR / big
            seen.append(partial.stat().st_size)
        return run_command(argv)

    result = run(cluster, runner=runner, bwlimit_kbps=1000, streams=1)
    assert_converged(cluster, TARGETS[:1])
    [failure] = result.relay_failures
    assert f"{MARK} on {TARGETS[0]}: received " in failure and f" of 600000 bytes of {big}: the sender stopped early" in failure
    assert 0 < seen[1] < 600_000  # rsync found the partial the relay left


def test_the_rate_limit_paces_the_relay(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, targets=TARGETS[:1], sizes=(400_000,))
    start = time.monotonic()
    run(cluster, bwlimit_kbps=2000)  # 2 MB/s: at least 0.2 s for the shard
    assert time.monotonic() - start >= 0.19
    assert_converged(cluster, TARGETS[:1])


def test_cut_through_sets_up_each_stream_of_each_link_once(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, targets=TARGETS[:2], sizes=(4000, 3000, 2000, 1000))
    transport = Muxing(cluster.transport.roots)
    run(cluster, transport=transport, streams=2)
    assert sorted(transport.setups, key=str) == sorted(
        [(None, TARGETS[0], 0), (None, TARGETS[0], 1), (TARGETS[0], TARGETS[1], 0), (TARGETS[0], TARGETS[1], 1)], key=str
    )
    assert transport.torn_down == 1
    assert_converged(cluster, TARGETS[:2])


def test_a_relay_without_python_on_a_target_names_the_option(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, targets=TARGETS[:2], sizes=(3_000_000,))
    result = run(cluster, transport=FirstHopFails(cluster.transport.roots, TARGETS[1], "echo 'sh: 1: python3: not found' >&2; exit 127"), streams=1)
    assert_converged(cluster, TARGETS[:2])
    [failure] = result.relay_failures
    assert "python3: not found" in failure and failure.endswith(f"(is {sys.executable!r}, the option python, a Python 3 on every target?)")
