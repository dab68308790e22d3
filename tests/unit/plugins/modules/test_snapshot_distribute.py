# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the snapshot_distribute module: main() on a real hub cache, with the ssh transport it builds
replaced by local folders (LocalTransport) so that rsync runs for real."""

from __future__ import annotations

import functools
import json
import random
import typing as t
from pathlib import Path
from unittest.mock import MagicMock, patch

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.sparkops.inference.plugins.modules import snapshot_distribute
from ansible_collections.sparkops.inference.tests.lab.sparklab.hf_model import SnapshotInfo, read_hub_snapshot, write_hub_snapshot
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.local_transport import LocalTransport

CACHE = "/var/lib/sparkops/huggingface/hub"
REPO_ID = "acme/tiny-llm"
REPO = f"{CACHE}/models--acme--tiny-llm"
TARGETS = ["192.168.100.11", "192.168.100.12"]


def build_head(root: Path) -> SnapshotInfo:
    rng = random.Random(3)
    files = {f"model-0000{i}-of-00003.safetensors": rng.randbytes(size) for i, size in enumerate((30_000, 20_000, 10_000), start=1)}
    files["config.json"] = b"{}"
    return write_hub_snapshot(Path(str(root / "head") + CACHE), REPO_ID, files)


class Run(t.NamedTuple):
    result: dict[str, t.Any]
    ssh: MagicMock


def run_module(args: dict[str, t.Any], root: Path, capsys: pytest.CaptureFixture[str]) -> Run:
    """Run main() with ``args``; the SshTransport it builds is recorded and replaced by a LocalTransport, and a failed
    rsync is retried at once."""
    targets = args.get("targets") or []
    local = LocalTransport({None: str(root / "head"), **{target: str(root / target) for target in targets}}, rsync=args.get("rsync", "rsync"))
    ssh = MagicMock(return_value=local)
    fast = functools.partial(snapshot_distribute.distribute, retry_delay=0)
    with (
        patch_module_args(args),
        patch.object(snapshot_distribute, "SshTransport", ssh),
        patch.object(snapshot_distribute, "distribute", fast),
        pytest.raises(SystemExit),
    ):
        snapshot_distribute.main()
    return Run(json.loads(capsys.readouterr().out), ssh)


def test_sends_the_model_and_a_rerun_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = build_head(tmp_path)
    args = {"repo_dir": REPO, "targets": TARGETS, "ssh_key": "/etc/sparkops/ssh/id_ed25519", "ssh_known_hosts": "/etc/sparkops/ssh/known_hosts"}
    result, ssh = run_module(args, tmp_path, capsys)
    assert not result.get("failed"), result
    ssh.assert_called_once_with(
        user="root",
        key="/etc/sparkops/ssh/id_ed25519",
        known_hosts="/etc/sparkops/ssh/known_hosts",
        port=22,
        rsync="rsync",
        control_dir="/etc/sparkops/ssh",
        python="python3",
        host_key_checking="yes",
    )
    assert result["changed"] is True
    assert result["topology"] == "chain" and result["streams"] == 4
    assert len(result["transferred"]) == 8
    assert {(x["source"], x["target"]) for x in result["transferred"]} == {("head", TARGETS[0]), (TARGETS[0], TARGETS[1])}
    assert result["bytes"] == 2 * (60_000 + 2)
    assert result["per_target"][TARGETS[1]]["bytes"] == 60_002 and len(result["per_target"][TARGETS[1]]["files"]) == 4
    plan = result["plan"][TARGETS[0]]
    assert sorted(plan["files"]) == sorted(x["file"] for x in result["transferred"] if x["target"] == TARGETS[0]) and plan["bytes"] == 60_002
    assert result["relay_failures"] == []
    assert result["metadata"][TARGETS[1]][-1] == ">f+++++++++ refs/main"
    assert "would_transfer" not in result
    for target in TARGETS:
        copy = read_hub_snapshot(Path(str(tmp_path / target) + CACHE), REPO_ID)
        assert copy.files == head.files and copy.refs == ("main",)
        assert copy.link("config.json").read_bytes() == b"{}"

    again = run_module(args, tmp_path, capsys).result
    assert again["changed"] is False
    assert again["transferred"] == [] and again["bytes"] == 0
    assert again["metadata"] == dict.fromkeys(TARGETS, [])


def test_check_mode_returns_the_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_head(tmp_path)
    args = {"repo_dir": REPO, "targets": TARGETS, "topology": "star", "streams": 2, "_ansible_check_mode": True}
    result = run_module(args, tmp_path, capsys).result
    assert not result.get("failed"), result
    assert result["changed"] is True
    assert result["topology"] == "star" and result["streams"] == 2
    assert result["transferred"] == []
    assert result["would_transfer"] == result["plan"]
    assert [result["would_transfer"][target]["bytes"] for target in TARGETS] == [60_002, 60_002]
    assert not (tmp_path / TARGETS[0]).exists() and not (tmp_path / TARGETS[1]).exists()


def test_options_reach_the_transport(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_head(tmp_path)
    args = {
        "repo_dir": REPO,
        "targets": TARGETS[:1],
        "ssh_user": "spark",
        "ssh_port": 2222,
        "rsync": "/usr/local/bin/rsync",
        "python": "/opt/py/bin/python3",
        "ssh_host_key_checking": "accept-new",
        "_ansible_check_mode": True,
    }
    result, ssh = run_module(args, tmp_path, capsys)
    assert not result.get("failed"), result
    ssh.assert_called_once_with(
        user="spark",
        key=None,
        known_hosts=None,
        port=2222,
        rsync="/usr/local/bin/rsync",
        control_dir=None,
        python="/opt/py/bin/python3",
        host_key_checking="accept-new",
    )


@pytest.mark.parametrize(
    ("extra", "control_dir"),
    [
        ({"ssh_key": "/etc/sparkops/model-sync/id_ed25519"}, "/etc/sparkops/model-sync"),
        ({"ssh_key": "/etc/sparkops/model-sync/id_ed25519", "ssh_control_dir": "/run/sparkops"}, "/run/sparkops"),
        ({"ssh_control_dir": "/run/sparkops"}, "/run/sparkops"),
        ({"ssh_key": "/etc/sparkops/model-sync/id_ed25519", "ssh_multiplex": False}, None),
    ],
)
def test_connection_sharing_follows_the_key_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: dict[str, t.Any], control_dir: str | None
) -> None:
    build_head(tmp_path)
    result, ssh = run_module({"repo_dir": REPO, "targets": TARGETS[:1], "_ansible_check_mode": True, **extra}, tmp_path, capsys)
    assert not result.get("failed"), result
    assert ssh.call_args.kwargs["control_dir"] == control_dir


def test_a_control_dir_too_long_fails_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_head(tmp_path)
    long_dir = "/run/" + "d" * 80
    with patch_module_args({"repo_dir": REPO, "targets": TARGETS[:1], "ssh_control_dir": long_dir}), pytest.raises(SystemExit):
        snapshot_distribute.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] is True and long_dir in result["msg"] and "too long" in result["msg"]


@pytest.mark.parametrize("user", ["-oProxyCommand=touch /tmp/pwned", "root -oProxyCommand=x", "", "r" * 33])
def test_an_ssh_user_ssh_would_read_as_an_option_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], user: str) -> None:
    """The review's attack: ``model_sync_ssh_user: "-oProxyCommand=touch /tmp/x"`` made ssh run the command as root on
    the head (``-oProxyCommand=...@192.168.100.11`` is an option). Refused before any command runs, naming ssh_user."""
    build_head(tmp_path)
    with patch_module_args({"repo_dir": REPO, "targets": TARGETS[:1], "ssh_user": user}), pytest.raises(SystemExit):
        snapshot_distribute.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] is True and result["msg"].startswith(f"ssh_user {user!r} is not a user name"), result
    assert result["changed"] is False


@pytest.mark.parametrize("target", ["-oProxyCommand=touch /tmp/pwned", "host name", "a;b"])
def test_a_target_ssh_would_read_as_an_option_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str) -> None:
    build_head(tmp_path)
    result = run_module({"repo_dir": REPO, "targets": [TARGETS[0], target]}, tmp_path, capsys)
    assert result.result["failed"] is True and result.result["msg"].startswith(f"target {target!r} is not an IP address or a host name")
    result.ssh.assert_not_called()


def test_a_failure_returns_what_was_sent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_head(tmp_path)
    # the second target's folder cannot be created: a file stands where its /var is
    (tmp_path / TARGETS[1]).mkdir()
    (tmp_path / TARGETS[1] / "var").write_text("")
    result = run_module({"repo_dir": REPO, "targets": TARGETS, "retries": 0}, tmp_path, capsys).result
    assert result["failed"] is True
    assert result["msg"].startswith(f"cannot create {REPO}/blobs on {TARGETS[1]}: rc 1: mkdir: ")
    assert result["changed"] is False and result["transferred"] == []
    assert result["plan"][TARGETS[1]]["bytes"] == 60_002


def test_a_failed_blob_fails_the_task_with_the_blobs_sent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_head(tmp_path)
    # an rsync that cannot send blobs to the second target
    rsync = tmp_path / "rsync"
    fail = 'echo "rsync: connection unexpectedly closed" >&2; exit 12'
    rsync.write_text(f'#!/bin/sh\ncase "$*" in *--partial-dir*{TARGETS[1]}/*) {fail};; esac\nexec rsync "$@"\n')
    rsync.chmod(0o755)
    result = run_module({"repo_dir": REPO, "targets": TARGETS, "retries": 1, "rsync": str(rsync), "cut_through": False}, tmp_path, capsys).result
    assert result["failed"] is True
    assert result["msg"].endswith(f"on {TARGETS[0]} -> {TARGETS[1]}: rsync failed (2 attempts), rc 12: rsync: connection unexpectedly closed")
    assert result["changed"] is True
    assert result["per_target"][TARGETS[0]]["bytes"] == 60_002
    assert result["per_target"][TARGETS[1]] == {"files": [], "bytes": 0}
    assert result["metadata"] == dict.fromkeys(TARGETS, [])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"streams": 0}, "streams must be at least 1, not 0"),
        ({"retries": -2}, "retries must be at least 0, not -2"),
        ({"ssh_port": 0}, "ssh_port must be between 1 and 65535, not 0"),
        ({"targets": []}, "targets is empty: there is nowhere to send the model"),
        ({"repo_dir": "/nowhere/models--a--b"}, "cannot list the blobs on the head: "),
    ],
)
def test_bad_options_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: dict[str, t.Any], message: str) -> None:
    build_head(tmp_path)
    result = run_module({"repo_dir": REPO, "targets": TARGETS, **args}, tmp_path, capsys).result
    assert result["failed"] is True
    assert result["msg"].startswith(message)
    assert result["changed"] is False
