# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _sync_gate: every command line a node's sshd gets from a real distribution (SshTransport driven
through distribute, rsync's server lines taken from the real rsync) passes the gate unchanged; attacks are refused,
each with a reason on one line."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import typing as t
from pathlib import Path

import pytest
import yaml
from ansible_collections.sparkops.inference.plugins.module_utils import _sync_gate
from ansible_collections.sparkops.inference.plugins.module_utils._blob_relay import MARK, PARTIAL_DIR, command, encode, next_argv
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_distribute import distribute
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_plan import listing_argv
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_transport import BLOB_OPTIONS, SshTransport
from ansible_collections.sparkops.inference.plugins.module_utils._sync_gate import GateConfig, GateRefused, decide, main, relay_code

TARGETS = ("10.0.0.2", "10.0.0.3", "10.0.0.4")
KEY_DIR = "/etc/sparkops/model-sync"
KEY, KNOWN_HOSTS = f"{KEY_DIR}/id_ed25519", f"{KEY_DIR}/known_hosts"
RSYNC = shutil.which("rsync") or "rsync"
CONTENTS = {"model.safetensors": b"w" * 3000, "tokenizer.json": b"t" * 2000, "config.json": b"{}"}
ETAGS = {path: hashlib.sha256(data).hexdigest() if path.endswith(".safetensors") else hashlib.sha1(data).hexdigest() for path, data in CONTENTS.items()}
A, B, C = ETAGS["model.safetensors"], ETAGS["tokenizer.json"], ETAGS["config.json"]

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="needs rsync")


def make_repo(cache: Path) -> str:
    """The head's repo folder in ``cache`` (a hub cache with a space in its path): blobs, a snapshot, a ref."""
    repo = cache / "models--acme--tiny-llm"
    for folder in ("blobs", "snapshots/c0ffee", "refs"):
        (repo / folder).mkdir(parents=True)
    for path, data in CONTENTS.items():
        (repo / "blobs" / ETAGS[path]).write_bytes(data)
        (repo / "snapshots/c0ffee" / path).symlink_to(f"../../blobs/{ETAGS[path]}")
    (repo / "refs/main").write_text("c0ffee")
    return str(repo)


def gate_config(cache: Path, node: str, **changes: t.Any) -> GateConfig:
    settings = {"cache_dir": str(cache), "address": node, "targets": TARGETS, "key": KEY, "known_hosts": KNOWN_HOSTS, "control_dir": KEY_DIR}
    return GateConfig(**{**settings, **changes})


class Cluster:
    """A fake runner for distribute (the targets hold what ``held`` lists), and what each node's sshd then gets:
    the head's ssh commands, and, through the gate on each node, what the node runs and sends on."""

    def __init__(self, cache: Path, tmp: Path, held: dict[str, str], **gate: t.Any) -> None:
        self.cache, self.held, self.gate = cache, held, gate
        self.recorder = tmp / "ssh-recorder"
        self.recorder.write_text('#!/bin/sh\nprintf "%s\\0" "$@" > "$0.args"\nexit 1\n')
        self.recorder.chmod(0o755)
        self.received: list[tuple[str, str, bool]] = []  # node, SSH_ORIGINAL_COMMAND, from a peer's key
        self._servers: dict[tuple[str, ...], tuple[str, str]] = {}
        self._lock = threading.Lock()  # distribute runs its commands from several threads

    def __call__(self, argv: list[str]) -> tuple[int, str, str]:
        with self._lock:
            self.follow(argv, peer=False)
        listing = argv[0] == "ssh" and argv[-1].startswith("sh -c 'if [ -d ")
        return 0, self.held.get(argv[-2].split("@")[-1], "") if listing else "", ""

    def follow(self, argv: list[str], peer: bool) -> None:
        """Record what ``argv`` (run on the head, or on a worker when ``peer``) makes a node's sshd get, and follow it."""
        if argv[0] == "ssh":  # run_argv: ssh ... user@node LINE
            self.receive(argv[-2].split("@")[1], argv[-1], peer)
        elif argv[0] == RSYNC and "--server" not in argv:  # a client: rsync's own ssh gets the server's line
            self.receive(*self.rsync_server_line(argv), peer)
        elif MARK in argv and json.loads(base64.b64decode(argv[5]))["next"]:  # a relay starts its next hop
            nxt = json.loads(base64.b64decode(argv[5]))["next"]
            self.receive(nxt["via"][-1].split("@")[1], next_argv(nxt, argv[4])[-1], peer)

    def receive(self, node: str, line: str, peer: bool) -> None:
        self.received.append((node, line, peer))
        argv = decide(line, gate_config(self.cache, node, peer=peer, **self.gate))
        assert argv == shlex.split(line)
        self.follow(argv, peer=True)  # what the node runs sends with its own key

    def rsync_server_line(self, argv: list[str]) -> tuple[str, str]:
        """The node and the line rsync's client makes ssh send (the real rsync, its -e pointed at a recorder)."""
        at = argv.index("-e")
        key = (*argv[:at], *argv[at + 2 : -2], argv[-1])
        if key not in self._servers:
            subprocess.run([*argv[:at], "-e", str(self.recorder), *argv[at + 2 :]], capture_output=True, check=False)
            args = Path(f"{self.recorder}.args").read_bytes().decode().split("\0")[:-1]
            start = args.index("--server") - 1
            self._servers[key] = (args[start - 1], " ".join(args[start:]))  # ssh joins the words with spaces
        return self._servers[key]


def kind(line: str) -> str:
    words = shlex.split(line)
    if words[1:2] == ["--server"]:
        return "rsync server " + ("blobs" if words[-1].endswith("/blobs/") else "metadata") + (" dry run" if "n" in words[2].split("e.")[0] else "")
    if MARK in words:
        return "relay hop" if "output" in json.loads(base64.b64decode(words[5])) else "relay sending a worker's copy"
    if words[0] == "sh":
        return "listing" if words[2].startswith("if [") else "master exit" if "-O exit" in words[2] else "master start"
    return "rsync client" if words[0] == RSYNC else words[0]


PARTIAL_OF_B = f"{PARTIAL_DIR}/{B} 500\n"
# What the real rsync sends its server for BLOB_OPTIONS (-rt; the capabilities after "e." vary with its version).
BLOB_SERVER_FLAGS = "-tre.iLsfxCIvu"
BASICS = {"listing", "mkdir", "rsync server blobs", "rsync server metadata"}
RELAYS = {"relay hop", "relay sending a worker's copy", "rsync client"}
SCENARIOS = {
    # targets[0] holds A (so it sends A on), targets[1] keeps a partial of B (so rsync resumes it)
    "chain cut-through multiplexed": (
        {"topology": "chain"},
        {TARGETS[0]: f"{A} 3000\n", TARGETS[1]: PARTIAL_OF_B},
        {},
        BASICS | RELAYS | {"master start", "master exit"},
    ),
    "chain store and forward, no multiplexing, bwlimit": (
        {"topology": "chain", "cut_through": False, "bwlimit_kbps": 5000, "multiplex": False},
        {},
        {"control_dir": None},
        BASICS | {"rsync client"},
    ),
    "star cut-through, bwlimit, other rsync and python paths": (
        {"topology": "star", "bwlimit_kbps": 5000, "rsync": RSYNC, "python": "/usr/bin/python3"},
        {TARGETS[2]: PARTIAL_OF_B},
        {"rsync": RSYNC, "python": "/usr/bin/python3"},
        BASICS | {"relay hop"},
    ),
    "chain without multiplexing, gate set up for it": (
        {"topology": "chain", "multiplex": False},
        {TARGETS[0]: f"{A} 3000\n", TARGETS[1]: PARTIAL_OF_B},
        {},
        BASICS | RELAYS,
    ),
    "check mode": ({"topology": "chain", "check_mode": True}, {TARGETS[2]: f"{A} 3000\n{B} 2000\n{C} 2\n"}, {}, {"listing", "rsync server metadata dry run"}),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_command_of_a_run_passes_the_gate_unchanged(tmp_path: Path, name: str) -> None:
    run, held, gate, kinds = SCENARIOS[name]
    cache = tmp_path / "hf hub"
    repo = make_repo(cache)
    run = dict(run)
    multiplex = run.pop("multiplex", True)
    control_dir = KEY_DIR if multiplex else None
    transport = SshTransport(key=KEY, known_hosts=KNOWN_HOSTS, control_dir=control_dir, rsync=run.pop("rsync", "rsync"), python=run.pop("python", "python3"))
    if transport.rsync == "rsync":
        transport.rsync = RSYNC  # the same program, by the path the gate's settings name (--rsync-path then follows)
        gate = {"rsync": RSYNC, **gate}
    cluster = Cluster(cache, tmp_path, held, **gate)
    distribute(repo, TARGETS, transport, streams=2, runner=cluster, retry_delay=0, **run)
    assert {kind(line) for _node, line, _peer in cluster.received} == kinds
    # a worker's key only ever pushes blobs to another worker
    assert {kind(line) for _node, line, peer in cluster.received if peer} <= {"relay hop", "rsync server blobs"}


# --- attacks ---------------------------------------------------------------------------------------------------


def hop_spec(repo: str, node: str = TARGETS[0], **output: t.Any) -> dict[str, t.Any]:
    out = {"dir": f"{repo}/blobs", "name": A, "mtime_ns": 1, "mode": 0o644, **output}
    return {"node": node, "size": 3000, "output": out, "next": None}


def relay_line(spec: dict[str, t.Any], code: str = "") -> str:
    return shlex.join(command("python3", code or relay_code(), spec))


def attacks(cache: Path) -> dict[str, tuple[str, str]]:
    """Command lines and the reason each is refused for (from the head's key, at targets[0])."""
    repo = f"{cache}/models--acme--tiny-llm"
    ssh = SshTransport(key=KEY, known_hosts=KNOWN_HOSTS, control_dir=KEY_DIR, rsync=RSYNC)
    listing = shlex.join(listing_argv(f"{repo}/blobs"))
    server = f"{RSYNC} --server {BLOB_SERVER_FLAGS} --timeout=120 --partial-dir .sparkops-partial . "
    blobs = shlex.quote(f"{repo}/blobs/")
    push = ssh.rsync_argv(None, TARGETS[1], BLOB_OPTIONS, [f"{repo}/blobs/{A}"], f"{repo}/blobs/", 0)
    proxy = [word.replace("-o BatchMode=yes", "-o BatchMode=yes -oProxyCommand='touch /tmp/x'") for word in push]
    via = {"via": ["sh", "-c", "id"], "python": "python3", "spec": hop_spec(repo, TARGETS[1])}
    return {
        "id": ("id", "not a command of the model distribution"),
        "sh -c id": ("sh -c id", "neither the blob listing nor an ssh master"),
        "listing; id": (shlex.join(["sh", "-c", shlex.split(listing)[2] + "; id"]), "is not the one the gate makes"),
        "listing of /etc": (shlex.join(listing_argv("/etc/blobs")), "is not a models--* folder"),
        "listing ../": (shlex.join(listing_argv(f"{repo}/../../../etc/blobs")), "is not a models--* folder"),
        "mkdir /etc/cron.d": ("mkdir -p /etc/cron.d", "is not the blobs folder"),
        "rsync --sender": (f"{RSYNC} --server --sender {BLOB_SERVER_FLAGS} . {blobs}", "receive only"),
        "rsync into /etc/": (server + "/etc/", "'/etc' is not a models--* folder"),
        "rsync into /root/.ssh/": (server + "/root/.ssh/", "'/root/.ssh' is not a models--* folder"),
        "rsync into ../../..": (server + shlex.quote(f"{repo}/../../../"), "is not a models--* folder"),
        "rsync two destinations": (server + blobs + " /etc/", "one destination"),
        "rsync --log-file": (server.replace("--timeout", "--log-file=/etc/cron.d/x --timeout") + blobs, "'--log-file=/etc/cron.d/x' is not one"),
        "rsync --rsync-path": (server.replace("--timeout", "--rsync-path=/tmp/x --timeout") + blobs, "'--rsync-path=/tmp/x' is not one"),
        "rsync -e": (server.replace("--timeout", "-e sh --timeout") + blobs, "'-e' is not one"),
        "rsync --remove-source-files": (server.replace("--timeout", "--remove-source-files --timeout") + blobs, "is not one"),
        "rsync -s (arguments on stdin)": (server.replace(" -tre.", " -stre.") + blobs, "options are not those"),
        "worker rsync with a ProxyCommand": (shlex.join(proxy), "is not one the gate makes"),
        "worker rsync -a of a blob": (shlex.join(push).replace(" -rt ", " -a "), "is not one the gate makes"),
        "worker rsync to another host": (shlex.join(push).replace(TARGETS[1], "10.9.9.9"), "is not one the gate makes"),
        "worker rsync of its ssh key": (shlex.join(push).replace(f"{repo}/blobs/{A}", "/root/.ssh/id_ed25519"), "'id_ed25519' is not a blob's name"),
        "relay with other code": (relay_line(hop_spec(repo), encode(b"import os; os.system('id')")), "code is not the relay"),
        "relay via sh -c id": (relay_line({**hop_spec(repo), "next": via}), "is not ssh to a target"),
        "relay into /etc": (relay_line(hop_spec(repo, dir="/etc")), "is not the blobs folder"),
        "relay name ../x": (relay_line(hop_spec(repo, name="../x")), "is not a blob's name"),
        "relay setuid mode": (relay_line(hop_spec(repo, mode=0o4755)), "file mode"),
        "master to another host": (shlex.join(ssh.stream_setup(None, "10.9.9.9", 0)[0]), "nor an ssh master"),
        "interactive shell": ("", "interactive shell is refused"),
        "NUL": (f"mkdir -p {repo}/blobs\0", "control character"),
        "newline": (f"{listing}\nid", "control character"),
    }


@pytest.mark.parametrize("name", list(attacks(Path("/srv/hf"))))
def test_an_attack_is_refused_with_its_reason_on_one_line(tmp_path: Path, name: str) -> None:
    line, reason = attacks(tmp_path / "hf hub")[name]
    with pytest.raises(GateRefused) as refused:
        decide(line, gate_config(tmp_path / "hf hub", TARGETS[0], rsync=RSYNC))
    assert reason in str(refused.value) and "\n" not in str(refused.value)


def real_server_line(tmp: Path, options: t.Sequence[str], dest: str) -> str:
    """The line the real rsync client makes ssh send for ``options`` (its -e pointed at a recorder), as sshd gets it."""
    recorder = tmp / "ssh-recorder"
    recorder.write_text('#!/bin/sh\nprintf "%s\\0" "$@" > "$0.args"\nexit 1\n')
    recorder.chmod(0o755)
    source = tmp / "a-blob"
    source.write_bytes(b"x")
    subprocess.run([RSYNC, *options, f"--rsync-path={RSYNC}", "-e", str(recorder), str(source), f"root@{TARGETS[0]}:{dest}"], capture_output=True, check=False)
    args = Path(f"{recorder}.args").read_bytes().decode().split("\0")[:-1]
    return " ".join(args[args.index("--server") - 1 :])  # ssh joins the words with spaces


@pytest.mark.parametrize("bwlimit", [[], ["--bwlimit=5000"]])
def test_a_blob_push_is_rsync_rt_and_passes_the_gate_as_is(tmp_path: Path, bwlimit: list[str]) -> None:
    cache = tmp_path / "hf hub"
    repo = make_repo(cache)
    line = real_server_line(tmp_path, [*BLOB_OPTIONS, *bwlimit], f"{repo}/blobs/")
    words = shlex.split(line)
    assert words[:2] == [RSYNC, "--server"] and words[2].startswith("-tre.")  # -rt: recursion and mtimes, nothing else
    assert words[3:] == ["--timeout=120", *bwlimit, "--partial-dir", PARTIAL_DIR, ".", f"{repo}/blobs/"]
    assert decide(line, gate_config(cache, TARGETS[0], rsync=RSYNC)) == words
    assert decide(line, gate_config(cache, TARGETS[1], rsync=RSYNC, peer=True)) == words


# What the real rsync client sends its server for options that would carry more than a blob's bytes and mtime, and
# the reason the gate refuses it into <repo>/blobs/ (the metadata's -a too: only into <repo>/).
CARRYING = {
    "-a (rsync -a's -logDtpr)": (["-a"], "symlinks (-l)"),
    "-l": (["-rtl"], "symlinks (-l)"),
    "--links": (["-rt", "--links"], "symlinks (-l)"),
    "-p": (["-rtp"], "permissions (-p)"),
    "--perms": (["-rt", "--perms"], "permissions (-p)"),
    "-o": (["-rt", "--owner"], "owner (-o)"),
    "-g": (["-rt", "--group"], "group (-g)"),
    "-D": (["-rtD"], "devices and specials (-D)"),
    "--devices": (["-rt", "--devices"], "devices and specials (-D)"),
    "--specials": (["-rt", "--specials"], "specials ('--specials')"),
    "--super": (["-rt", "--super"], "owner, group and devices ('--super')"),
    "--chown": (["-rt", "--chown=0:0"], "owner ('--usermap=*:0')"),
    "--usermap": (["-rt", "--usermap=*:0"], "owner ('--usermap=*:0')"),
    "--groupmap": (["-rt", "--groupmap=*:0"], "group ('--groupmap=*:0')"),
    "--copy-unsafe-links": (["-rt", "--copy-unsafe-links"], "the files symlinks point to ('--copy-unsafe-links')"),
    "-K": (["-rtK"], "symlinked folders followed (-K)"),
    "-H": (["-rtH"], "hard links (-H)"),
    "-E": (["-rtE"], "permissions (-E)"),
    "-X": (["-rtX"], "extended attributes (-X)"),
    "-A": (["-rtA"], "permissions (-p)"),
}


@pytest.mark.parametrize("name", list(CARRYING))
def test_a_blob_push_that_carries_links_perms_owner_group_or_devices_is_refused(tmp_path: Path, name: str) -> None:
    options, reason = CARRYING[name]
    cache = tmp_path / "hf hub"
    repo = make_repo(cache)
    line = real_server_line(tmp_path, [*options, f"--partial-dir={PARTIAL_DIR}", "--timeout=120"], f"{repo}/blobs/")
    for config in (gate_config(cache, TARGETS[0], rsync=RSYNC), gate_config(cache, TARGETS[1], rsync=RSYNC, peer=True)):
        with pytest.raises(GateRefused) as refused:
            decide(line, config)
        assert str(refused.value) == f"a blob push may not carry {reason}: blobs are plain files, written here as root", line


# What a changed rsync client could send its server (words the real client never sends like this), and the reason.
CRAFTED = {
    "--devices": ("--devices", "devices ('--devices')"),
    "--specials": ("--specials", "specials ('--specials')"),
    "--perms": ("--perms", "permissions ('--perms')"),
    "--links": ("--links", "symlinks ('--links')"),
    "--chmod=u+s": ("--chmod=u+s", "permissions ('--chmod=u+s')"),
    "--chmod u+s": ("--chmod u+s", "permissions ('--chmod')"),
    "--super": ("--super", "owner, group and devices ('--super')"),
    "--fake-super": ("--fake-super", "permissions, owner and devices (as extended attributes) ('--fake-super')"),
    "--owner": ("--owner", "owner ('--owner')"),
    "--group": ("--group", "group ('--group')"),
    "--chown": ("--chown=0:0", "owner and group ('--chown=0:0')"),
    "--copy-unsafe-links": ("--copy-unsafe-links", "the files symlinks point to ('--copy-unsafe-links')"),
    "--keep-dirlinks": ("--keep-dirlinks", "symlinked folders followed ('--keep-dirlinks')"),
    "-l, a word of its own": ("-l", "symlinks (-l)"),
    "-pgo, a word of its own": ("-pgo", "permissions (-p)"),
    "-a, a word of its own": ("-a", "symlinks, permissions, owner, group, devices and specials (-a)"),
}


@pytest.mark.parametrize("name", list(CRAFTED))
def test_a_crafted_blob_push_that_asks_for_more_than_bytes_is_refused(tmp_path: Path, name: str) -> None:
    extra, reason = CRAFTED[name]
    cache = tmp_path / "hf hub"
    repo = make_repo(cache)
    line = f"{RSYNC} --server {BLOB_SERVER_FLAGS} --timeout=120 {extra} --partial-dir .sparkops-partial . {shlex.quote(f'{repo}/blobs/')}"
    with pytest.raises(GateRefused) as refused:
        decide(line, gate_config(cache, TARGETS[1], rsync=RSYNC, peer=True))
    assert str(refused.value) == f"a blob push may not carry {reason}: blobs are plain files, written here as root"


@pytest.mark.parametrize(
    "flags",
    [
        "-tlre.iLsfxCIvu",  # -l among the compact flags
        "-Dtre.iLsfxCIvu",
        "-treloe.iLsfxCIvu",  # popt reads "loe.iLs..." as -e's value; the gate refuses what it cannot read as rsync does
        "-tre.iLsfxCIvu-l",
        "-tr",
    ],
)
def test_compact_flags_are_read_as_rsync_reads_them(tmp_path: Path, flags: str) -> None:
    cache = tmp_path / "hf hub"
    repo = make_repo(cache)
    line = f"{RSYNC} --server {flags} --timeout=120 --partial-dir .sparkops-partial . {shlex.quote(f'{repo}/blobs/')}"
    with pytest.raises(GateRefused, match="a blob push may not carry|are not rsync's compact flags"):
        decide(line, gate_config(cache, TARGETS[0], rsync=RSYNC))


def test_the_metadata_push_keeps_rsync_a_with_symlinks(tmp_path: Path) -> None:
    cache = tmp_path / "hf hub"
    repo = make_repo(cache)
    line = real_server_line(tmp_path, ["-a", "--itemize-changes", "--timeout=120"], f"{repo}/")
    assert shlex.split(line)[2].startswith("-logDtpre.")
    assert decide(line, gate_config(cache, TARGETS[0], rsync=RSYNC)) == shlex.split(line)
    with pytest.raises(GateRefused, match="may only push blobs into"):
        decide(line, gate_config(cache, TARGETS[0], rsync=RSYNC, peer=True))


def test_a_peers_key_may_only_push_blobs(tmp_path: Path) -> None:
    cache = tmp_path / "hf hub"
    repo = make_repo(cache)
    peer = gate_config(cache, TARGETS[1], peer=True, rsync=RSYNC)
    decide(relay_line(hop_spec(repo, TARGETS[1])), peer)  # what the previous worker sends
    refused = {
        shlex.join(listing_argv(f"{repo}/blobs")): "may only push blobs",
        shlex.join(["mkdir", "-p", f"{repo}/blobs"]): "may only push blobs",
        shlex.join([RSYNC, "--server", "-logDtpre.iLsfxCIvu", "--log-format=%i", "--timeout=120", ".", f"{repo}/"]): "may only push blobs into",
        relay_line({"node": TARGETS[1], "size": 3000, "input": f"{repo}/blobs/{A}", "bwlimit": 0, "next": None}): "may only start a relay hop",
    }
    for line, reason in refused.items():
        with pytest.raises(GateRefused, match=reason):
            decide(line, peer)


def test_a_read_only_key_may_list_and_dry_run_only(tmp_path: Path) -> None:
    cache = tmp_path / "hf hub"
    repo = make_repo(cache)
    config = gate_config(cache, TARGETS[0], write=False, rsync=RSYNC)
    decide(f"{RSYNC} --server -nlogDtpre.iLsfxCIvu --log-format=%i --timeout=120 . {shlex.quote(repo)}/", config)
    for line in (f"mkdir -p {shlex.quote(repo)}/blobs", f"{RSYNC} --server -logDtpre.iLsfxCIvu --log-format=%i --timeout=120 . {shlex.quote(repo)}/"):
        with pytest.raises(GateRefused, match="may not write"):
            decide(line, config)


def test_a_symlink_where_a_command_writes_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "hf hub"
    repo = make_repo(cache)
    os.symlink(tmp_path, f"{repo}/blobs/{PARTIAL_DIR}")
    # The refusal names the path, shortened with "..." when long (as under pytest-xdist's longer tmp_path).
    with pytest.raises(GateRefused, match=r"/blobs/\.sparkops-p.* is a symlink"):
        decide(relay_line(hop_spec(repo)), gate_config(cache, TARGETS[0]))


def test_main_execs_an_accepted_command_and_prints_a_refusal_on_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: t.Any) -> None:
    cache = tmp_path / "hf hub"
    repo = make_repo(cache)
    settings = tmp_path / "gate.json"
    settings.write_text(json.dumps({"cache_dir": str(cache), "address": TARGETS[0], "targets": list(TARGETS), "key": KEY, "known_hosts": KNOWN_HOSTS}))
    execs: list[list[str]] = []
    monkeypatch.setattr(_sync_gate.os, "execvp", lambda program, argv: execs.append(argv))
    assert main({"SSH_ORIGINAL_COMMAND": shlex.join(["mkdir", "-p", f"{repo}/blobs"])}, [str(settings)]) == 0
    assert execs == [["mkdir", "-p", f"{repo}/blobs"]]
    assert main({"SSH_ORIGINAL_COMMAND": "id"}, ["--peer", str(settings)]) == 1
    assert capsys.readouterr().err == "sparkops-model-sync-gate: refused: a peer's key may only push blobs (rsync's server, a relay hop), not run 'id'\n"
    settings.write_text(json.dumps({"cache_dir": str(cache), "address": TARGETS[0], "shell": "/bin/sh"}))
    assert main({}, [str(settings)]) == 1
    assert capsys.readouterr().err.endswith(": unknown gate settings: shell\n")


# --- the gate's library on a worker -----------------------------------------------------------------------------

COLLECTION = Path(__file__).resolve().parents[4]
# What the gate command runs (roles/model_sync/files/sparkops-model-sync-gate), without its sys.exit: the modules of
# the collection it loaded, then what main() says to a command it refuses.
GATE_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.sparkops.inference.plugins.module_utils._sync_gate import main
prefix = "ansible_collections.sparkops.inference.plugins.module_utils."
print(json.dumps(sorted(name[len(prefix):] + ".py" for name in sys.modules if name.startswith(prefix))))
print(main({"SSH_ORIGINAL_COMMAND": "id"}, ["--peer", sys.argv[2]]))
"""


def test_the_gate_runs_from_exactly_the_module_utils_the_role_installs(tmp_path: Path) -> None:
    """gate.yml installs the files vars/main.yml lists (the common role's copy_packed) into the gate's library, where
    a worker's own python3 (no Ansible, no collection) runs them: a file missing there fails every distribution, one
    too many is dead code on every node."""
    role_vars = yaml.safe_load((COLLECTION / "roles" / "model_sync" / "vars" / "main.yml").read_text(encoding="utf-8"))
    listed = role_vars["__model_sync_gate_utils"]
    lib = tmp_path / "lib"
    utils = lib / "ansible_collections" / "sparkops" / "inference" / "plugins" / "module_utils"
    utils.mkdir(parents=True)
    for name in listed:
        shutil.copy(COLLECTION / "plugins" / "module_utils" / name, utils / name)
    settings = tmp_path / "gate.json"
    settings.write_text(json.dumps({"cache_dir": str(tmp_path / "hub"), "address": TARGETS[0], "targets": list(TARGETS)}))
    # -I -S: no site-packages, no PYTHONPATH, no current folder: only the library, as on a worker.
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", GATE_PROBE, str(lib), str(settings)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    loaded, rc = proc.stdout.splitlines()
    assert json.loads(loaded) == sorted(listed)
    assert "_snapshot_transport.py" in listed and "_snapshot_distribute.py" not in listed
    assert rc == "1" and "refused: a peer's key may only push blobs" in proc.stderr
