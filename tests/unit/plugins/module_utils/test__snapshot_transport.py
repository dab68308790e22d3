# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for _snapshot_transport: the exact ssh and rsync command lines of SshTransport, its ssh connection
sharing (a master per stream), and what it refuses."""

from __future__ import annotations

import shlex
import subprocess
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_errors import DistributeError
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_plan import listing_argv
from ansible_collections.sparkops.inference.plugins.module_utils._snapshot_transport import BLOB_OPTIONS, METADATA_OPTIONS, SshTransport

SSH = [
    "ssh",
    "-p",
    "2222",
    "-i",
    "/etc/sparkops/ssh/id_ed25519",
    "-o",
    "IdentitiesOnly=yes",
    "-o",
    "UserKnownHostsFile=/etc/sparkops/ssh/known_hosts",
    "-o",
    "StrictHostKeyChecking=yes",
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=30",
]
BLOBS = "/var/lib/sparkops/huggingface/hub/models--Qwen--Qwen3.5-122B-A10B-FP8/blobs"


def ssh_transport(**kwargs: t.Any) -> SshTransport:
    defaults = {"user": "root", "key": "/etc/sparkops/ssh/id_ed25519", "known_hosts": "/etc/sparkops/ssh/known_hosts", "port": 2222}
    return SshTransport(**{**defaults, **kwargs})


def test_ssh_runs_a_quoted_command_on_a_target() -> None:
    transport = ssh_transport()
    assert transport.ssh_command() == SSH
    argv = transport.run_argv("192.168.100.11", listing_argv("/srv/hf hub/blobs"))
    assert argv[:-1] == [*SSH, "root@192.168.100.11"]
    assert shlex.split(argv[-1]) == listing_argv("/srv/hf hub/blobs")
    assert transport.run_argv("10.0.0.2", ["mkdir", "-p", BLOBS]) == [*SSH, "root@10.0.0.2", f"mkdir -p {BLOBS}"]


def test_ssh_options_without_key_or_known_hosts() -> None:
    transport = SshTransport()
    assert transport.ssh_command() == ["ssh", "-p", "22", "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=30"]
    assert transport.rsync == "rsync" and transport.user == "root"


def test_an_unknown_host_key_is_refused_unless_trust_on_first_use_is_asked() -> None:
    """The attack: whoever answers first on a target's fabric address (before the real worker, or instead of it) gets
    the model and the relay's commands, and is trusted from then on. Pinned keys only, by default."""
    assert "StrictHostKeyChecking=yes" in SshTransport().ssh_command()
    assert "StrictHostKeyChecking=accept-new" not in " ".join(ssh_transport().rsync_argv("10.0.0.1", "10.0.0.2", BLOB_OPTIONS, ["/a"], "/b/"))
    assert "StrictHostKeyChecking=accept-new" in SshTransport(host_key_checking="accept-new").ssh_command()
    with pytest.raises(DistributeError, match="host_key_checking must be one of yes, accept-new, not 'no'"):
        SshTransport(host_key_checking="no")


def test_rsync_from_the_head() -> None:
    argv = ssh_transport(user="spark").rsync_argv(None, "192.168.100.11", BLOB_OPTIONS, [f"{BLOBS}/abc"], f"{BLOBS}/")
    assert argv == [
        "rsync",
        "-rt",
        "--partial-dir=.sparkops-partial",
        "--timeout=120",
        "-e",
        " ".join(SSH),
        f"{BLOBS}/abc",
        f"spark@192.168.100.11:{BLOBS}/",
    ]


def test_rsync_relayed_by_a_worker() -> None:
    transport = ssh_transport()
    argv = transport.rsync_argv("192.168.100.11", "192.168.100.12", BLOB_OPTIONS, [f"{BLOBS}/abc"], f"{BLOBS}/")
    inner = ["rsync", "-rt", "--partial-dir=.sparkops-partial", "--timeout=120", "-e", " ".join(SSH), f"{BLOBS}/abc", f"root@192.168.100.12:{BLOBS}/"]
    assert argv == [*SSH, "root@192.168.100.11", shlex.join(inner)]
    assert argv[-1] == (
        "rsync -rt --partial-dir=.sparkops-partial --timeout=120 -e "
        "'ssh -p 2222 -i /etc/sparkops/ssh/id_ed25519 -o IdentitiesOnly=yes -o UserKnownHostsFile=/etc/sparkops/ssh/known_hosts "
        "-o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=30' "
        f"{BLOBS}/abc root@192.168.100.12:{BLOBS}/"
    )


def test_rsync_quotes_paths_with_spaces_and_brackets_ipv6() -> None:
    transport = ssh_transport(key="/etc/spark ops/id key", known_hosts="/etc/spark ops/known hosts", rsync="/opt/rsync/bin/rsync")
    argv = transport.rsync_argv("fd00::11", "fd00::12", METADATA_OPTIONS, ["/srv/hf hub/m/snapshots"], "/srv/hf hub/m/")
    ssh = transport.ssh_command()
    assert ssh[3:9] == ["-i", "/etc/spark ops/id key", "-o", "IdentitiesOnly=yes", "-o", "UserKnownHostsFile=/etc/spark ops/known hosts"]
    inner = [
        "/opt/rsync/bin/rsync",
        "-a",
        "--itemize-changes",
        "--timeout=120",
        "--rsync-path=/opt/rsync/bin/rsync",
        "-e",
        shlex.join(ssh),
        "/srv/hf hub/m/snapshots",
        "root@[fd00::12]:/srv/hf hub/m/",
    ]
    assert argv == [*ssh, "root@fd00::11", shlex.join(inner)]
    assert shlex.split(argv[-1]) == inner
    assert "'/etc/spark ops/id key'" in inner[6]


def test_rsync_splits_the_ssh_command_as_shlex_quoted_it(tmp_path: Path) -> None:
    """rsync runs -e's value, split by its own rules: a quoted path with spaces stays one argument."""
    record = tmp_path / "ssh args"
    fake_ssh = tmp_path / "fake ssh"
    fake_ssh.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {shlex.quote(str(record))}\nexit 255\n')
    fake_ssh.chmod(0o755)
    source = tmp_path / "abc"
    source.write_bytes(b"x")
    transport = ssh_transport(key="/etc/spark ops/it's key", ssh=str(fake_ssh))
    proc = subprocess.run(transport.rsync_argv(None, "10.0.0.2", BLOB_OPTIONS, [str(source)], "/srv/hf hub/blobs/"), capture_output=True, check=False)
    assert proc.returncode != 0
    args = record.read_text().splitlines()
    assert args[:17] == [*SSH[1:3], "-i", "/etc/spark ops/it's key", *SSH[5:], "-l", "root", "10.0.0.2"]
    assert args[17:19] == ["rsync", "--server"] and args[-1] == "/srv/hf\\ hub/blobs/"  # rsync escapes the remote path itself


# --- ssh connection sharing (a master per stream) ---------------------------------------------------------------

CONTROL = "/etc/sparkops/ssh"
MUX = ["-o", "ControlMaster=no", "-o", f"ControlPath={CONTROL}/mux-%C-1"]


def test_a_stream_uses_its_master_and_no_stream_none() -> None:
    transport = ssh_transport(control_dir=CONTROL)
    assert transport.ssh_command() == SSH
    assert transport.ssh_command(1) == [*SSH[:9], *MUX, *SSH[9:]]
    assert transport.run_argv("10.0.0.2", ["true"], 1) == [*SSH[:9], *MUX, *SSH[9:], "root@10.0.0.2", "true"]
    relayed = transport.rsync_argv("10.0.0.2", "10.0.0.3", BLOB_OPTIONS, [f"{BLOBS}/abc"], f"{BLOBS}/", 1)
    # The relay's ssh (inside the command) and the head's ssh to the relay both use stream 1's master.
    assert relayed[:15] == [*SSH[:9], *MUX, *SSH[9:]][:15]
    assert f"-o ControlMaster=no -o ControlPath={CONTROL}/mux-%C-1 -o" in relayed[-1]
    # Without a control dir a stream changes nothing.
    assert ssh_transport().ssh_command(1) == SSH


def test_masters_start_once_per_hop_and_stream_detached() -> None:
    transport = ssh_transport(control_dir=CONTROL, control_persist=45)
    path = ["-o", f"ControlPath={CONTROL}/mux-%C-0"]

    def master(target: str) -> str:
        """Keep a live master, else start one (ControlMaster=auto clears a dead one's socket), stdio closed."""
        check = shlex.join([*SSH, *path, "-O", "check", f"root@{target}"])
        alive = ["-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"]
        start = shlex.join([*SSH, *path, "-o", "ControlMaster=auto", "-o", "ControlPersist=45", *alive, "-N", "-f", f"root@{target}"])
        return f"{{ {check} || exec {start}; }} </dev/null >/dev/null 2>&1"

    head_link = transport.stream_setup(None, "10.0.0.2", 0)
    assert head_link == [["sh", "-c", master("10.0.0.2")]]
    assert transport.stream_setup(None, "10.0.0.2", 0) == []  # started already
    # A relay's stream: the head's master to the relay exists (the head link's), so only the relay's own, run there.
    relay = transport.stream_setup("10.0.0.2", "10.0.0.3", 0)
    assert relay == [transport.run_argv("10.0.0.2", ["sh", "-c", master("10.0.0.3")], 0)]
    # The next relay's stream 0 needs the head's master to its source first.
    second = transport.stream_setup("10.0.0.3", "10.0.0.4", 0)
    assert second == [["sh", "-c", master("10.0.0.3")], transport.run_argv("10.0.0.3", ["sh", "-c", master("10.0.0.4")], 0)]
    # Teardown: the relays' masters (reached through the head's) at once, then the head's at once; then nothing.
    relays, heads = transport.teardown()

    def exit_of(source: str | None, target: str) -> list[str]:
        ssh = [*SSH[:9], "-o", "ControlMaster=no", "-o", f"ControlPath={CONTROL}/mux-%C-0", *SSH[9:]]
        command = ["sh", "-c", f"{shlex.join([*ssh, '-O', 'exit', f'root@{target}'])} </dev/null >/dev/null 2>&1"]
        return command if source is None else transport.run_argv(source, command, 0)

    assert relays == [exit_of("10.0.0.2", "10.0.0.3"), exit_of("10.0.0.3", "10.0.0.4")]
    assert heads == [exit_of(None, "10.0.0.2"), exit_of(None, "10.0.0.3")]
    assert transport.teardown() == []
    assert ssh_transport().stream_setup(None, "10.0.0.2", 0) == []


def test_a_control_dir_too_long_for_a_socket_is_refused() -> None:
    with pytest.raises(DistributeError, match="control_dir '/x+' is too long for an ssh control socket path"):
        SshTransport(control_dir="/" + "x" * 70)
