"""The model distributed by model_sync on the lab: complete everywhere, resumable, repaired, then left alone."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(os.environ["MODEL_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import node, playbook, recap  # noqa: E402

HEAD = os.environ["MODEL_LAB_HEAD"]
WORKERS = os.environ["MODEL_LAB_WORKERS"].split(",")
PROJECT = os.environ["MODEL_LAB_PROJECT"]
REPO_DIR = "/var/lib/sparkops/huggingface/hub/models--sparkops-lab--tiny-moe"
CHECKSUMS = f"cd {REPO_DIR}/blobs && find . -maxdepth 1 -type f -printf '%f\\n' | sort | xargs -r sha256sum"


def run_site(*args: str) -> subprocess.CompletedProcess[str]:
    return playbook("site.yml", "--tags", "model", *args)


def snapshot(name: str) -> tuple[str, str, str]:
    """(blob checksums, symlinks of the snapshot with their targets, refs/main) of a node's copy."""
    host = node(name)
    links = host.check_output(f"cd {REPO_DIR} && find snapshots -type l -printf '%p -> %l\\n' | sort")
    return host.check_output(CHECKSUMS), links, host.check_output(f"cat {REPO_DIR}/refs/main")


def expect_same_as_head() -> None:
    head = snapshot(HEAD)
    assert head[0] and head[1] and re.fullmatch(r"[0-9a-f]{40}", head[2]), head
    for worker in WORKERS:
        assert snapshot(worker) == head, worker


def test_every_worker_holds_the_heads_snapshot_with_the_cache_layout() -> None:
    expect_same_as_head()
    links = node(WORKERS[0]).check_output(f"find {REPO_DIR}/snapshots -type l -printf '%l\\n'").split()
    assert links and all(link.startswith("../../blobs/") for link in links), links


def test_no_partial_file_left_and_workers_reachable_only_from_the_fabric() -> None:
    for worker in WORKERS:
        host = node(worker)
        assert host.run(f"find {REPO_DIR} -name '*.incomplete' -o -name '.sparkops-partial' -prune -print -o -name '.*.??????' -print").stdout == ""
        keys = host.file("/root/.ssh/authorized_keys").content_string
        sync_keys = [line for line in keys.splitlines() if "sparkops-model-sync@" in line]
        assert len(sync_keys) == 1 + len(WORKERS), keys
        gate = 'from="192.168.200.0/24",restrict,command="/usr/local/sbin/sparkops-model-sync-gate'
        head_key = [line for line in sync_keys if line.endswith(f"sparkops-model-sync@{HEAD}")]
        assert len(head_key) == 1 and head_key[0].startswith(f'{gate}" '), sync_keys
        assert all(line.startswith(f'{gate} --peer" ') for line in sync_keys if line not in head_key), sync_keys


def sync_ssh(source: str, target: str, command: str) -> t.Any:
    """``command`` sent over ssh from ``source`` to the worker ``target`` with the source's model-sync key."""
    options = "-o UserKnownHostsFile=/etc/sparkops/model-sync/known_hosts -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes"
    return node(source).run(f"ssh -i /etc/sparkops/model-sync/id_ed25519 {options} root@{FABRIC_IP[target]} {command}")


@pytest.mark.parametrize("command", ["id", "'sh -c id'", "'cat /etc/shadow'", "'rsync --server --sender -logDtpre.iLsfxCIvu . /etc/'", ""])
def test_a_model_sync_key_cannot_run_a_shell_or_read(command: str) -> None:
    """The attack: a node's distribution key (the head's, or a compromised worker's) used for anything but the
    distribution: a command, a shell (no command), reading files with rsync's sender. The forced command refuses
    each, naming why; before it, the head's key ran `id` on a worker as root."""
    for source, target in [(HEAD, WORKERS[0]), (WORKERS[0], WORKERS[1])]:
        run = sync_ssh(source, target, command)
        assert run.rc != 0 and "uid=" not in run.stdout and "root:" not in run.stdout, (source, target, run.stdout)
        assert "sparkops-model-sync-gate: refused" in run.stderr, (source, target, run.stderr)


def test_a_workers_key_may_only_pass_blobs_on() -> None:
    """Another worker's key (--peer) may push blobs and run a relay hop, nothing that only the head sends: the folder
    the head's key may make is refused to it."""
    mkdir = f"mkdir -p {REPO_DIR}/blobs"
    run = sync_ssh(WORKERS[0], WORKERS[1], mkdir)
    assert run.rc != 0 and "sparkops-model-sync-gate: refused" in run.stderr, run.stderr
    allowed = sync_ssh(HEAD, WORKERS[1], mkdir)
    assert allowed.rc == 0, allowed.stderr


FABRIC_IP = {"model-spark-worker1": "192.168.200.72", "model-spark-worker2": "192.168.200.73"}  # molecule.yml
KNOWN_HOSTS = "/etc/sparkops/model-sync/known_hosts"


def host_key(name: str) -> str:
    """A node's ed25519 host key as sshd presents it: type and base64 data."""
    return " ".join(node(name).check_output("cat /etc/ssh/ssh_host_ed25519_key.pub").split()[:2])


def test_every_node_knows_the_workers_by_their_pinned_host_keys_only() -> None:
    expected = sorted(f"{FABRIC_IP[worker]} {host_key(worker)}" for worker in WORKERS)
    for name in [HEAD, *WORKERS]:
        assert sorted(node(name).file(KNOWN_HOSTS).content_string.splitlines()) == expected, name


def distribute_check(known_hosts: str, checking: str) -> subprocess.CompletedProcess[str]:
    """snapshot_distribute in check mode on the head (it lists the target's blobs over ssh, writes nothing)."""
    args = (
        f"repo_dir={REPO_DIR} targets={FABRIC_IP[WORKERS[0]]} ssh_key=/etc/sparkops/model-sync/id_ed25519 "
        f"ssh_known_hosts={known_hosts} ssh_host_key_checking={checking}"
    )
    return playbook(HEAD, "--check", "-m", "sparkops.inference.snapshot_distribute", "-a", args, command="ansible")


def test_a_host_key_nobody_pinned_is_refused_not_learned() -> None:
    """The attack: whatever answers on a worker's fabric address with a key that is not the pinned one (an impostor
    that got there first, or a worker reinstalled behind the cluster's back). Here the head's known hosts lack the
    worker's key: the role's distribution refuses it; trust on first use (ssh's accept-new, the module's option,
    before pinning the module's default) would send to it and learn its key."""
    head, unpinned = node(HEAD), "/root/known_hosts-unpinned"
    head.check_output(f"grep -v '^{FABRIC_IP[WORKERS[0]]} ' {KNOWN_HOSTS} > {unpinned}")
    refused = distribute_check(unpinned, "strict")
    assert refused.returncode != 0 and "Host key verification failed" in refused.stdout, refused.stdout[-2000:]
    known = f"ssh-keygen -F {FABRIC_IP[WORKERS[0]]} -f {unpinned}"  # ssh may hash what it adds (HashKnownHosts)
    assert head.run(known).rc == 1
    learned = distribute_check(unpinned, "accept-new")  # the same run trusting on first use: it goes through
    assert learned.returncode == 0, learned.stdout[-2000:]
    assert head.run(known).rc == 0
    head.check_output(f"rm -f {unpinned}")


def test_a_truncated_shard_is_repaired_and_a_same_size_corruption_only_with_full_verification() -> None:
    truncated, corrupted = node(WORKERS[0]), node(WORKERS[1])
    shard = truncated.check_output(f"readlink -f {REPO_DIR}/snapshots/*/model-00002-of-00004.safetensors")
    truncated.check_output(f"truncate -s -1000 {shard}")
    shard = corrupted.check_output(f"readlink -f {REPO_DIR}/snapshots/*/model-00003-of-00004.safetensors")
    # Overwrite bytes in the tensor data without changing size or mtime: only content hashing can see it.
    corrupted.check_output(f"t=$(stat -c %y {shard}); printf 'XXXXXXXX' | dd of={shard} bs=1 seek=100000 conv=notrunc status=none; touch -d \"$t\" {shard}")
    quick = run_site()
    assert quick.returncode == 0, quick.stdout[-3000:] + quick.stderr[-2000:]
    assert recap(quick)[HEAD]["changed"] >= 1  # the truncated shard, found by the quick check, sent again
    assert recap(quick)[WORKERS[1]]["changed"] == 0  # the same-size corruption: invisible to the quick check
    assert snapshot(WORKERS[0]) == snapshot(HEAD) and snapshot(WORKERS[1]) != snapshot(HEAD)
    full = run_site("-e", "model_sync_verify_mode=full")
    assert full.returncode == 0, full.stdout[-3000:] + full.stderr[-2000:]
    expect_same_as_head()


def test_interrupted_transfer_resumes_on_the_next_run() -> None:
    for worker in WORKERS:
        node(worker).check_output(f"rm -rf {REPO_DIR}")
    interrupted = subprocess.Popen(  # noqa: S603 - a fixed argv
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], f"{PROJECT}/site.yml", "--tags", "model", "-e", "model_sync_bwlimit_kbps=2000"],
        cwd=PROJECT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": f"{PROJECT}/.collections"},
        start_new_session=True,
    )
    head = node(HEAD)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and head.run("pgrep -f '[s]parkops-blob-relay'").rc != 0:
        time.sleep(0.5)
    time.sleep(3)
    head.run("pkill -KILL -f AnsiballZ_snapshot_distribute")  # the run dies (a lost controller, a reboot)...
    for name in [HEAD, *WORKERS]:  # ...and every transfer with it, mid-file (the pattern does not match this shell)
        node(name).run("pkill -KILL -f '[s]parkops-blob-relay'; pkill -KILL -x rsync")
    interrupted.wait(timeout=300)
    partial = node(WORKERS[0]).run(f"test -d {REPO_DIR}/blobs && ls {REPO_DIR}/blobs | wc -l").stdout.strip()
    run = run_site()
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    expect_same_as_head()
    assert partial != "", "the interrupted run left nothing to resume from"


@pytest.mark.parametrize("worker", WORKERS)
def test_worker_has_no_route_out(worker: str) -> None:
    assert node(worker).run("getent hosts huggingface.co && timeout 3 bash -c '</dev/tcp/huggingface.co/443'").rc != 0


def test_check_mode_on_fresh_nodes_reports_what_a_run_would_do_and_writes_nothing() -> None:
    """Nothing deployed yet (a key folder and a cache no node has): --check previews instead of failing. The lab's Hub
    does not serve this model, so the fit check (which would read its metadata there) is off here; the refusal test
    below runs it against the Hub."""
    fresh = ["-e", "model_sync_key_dir=/etc/sparkops/model-sync-fresh", "-e", "model_sync_cache_dir=/var/lib/sparkops/fresh-hub"]
    fresh += ["-e", "sparkops_model_fit_check=false"]
    run = run_site("--check", *fresh)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "check mode: /etc/sparkops/model-sync-fresh/id_ed25519 would be created" in run.stdout
    assert re.search(r"check mode: sparkops-lab/tiny-moe@main would be sent to 192\.168\.200\.\d+, 192\.168\.200\.\d+;", run.stdout), run.stdout[-3000:]
    assert all(recap(run)[name]["changed"] >= 1 for name in [HEAD, *WORKERS]), recap(run)
    for name in [HEAD, *WORKERS]:
        assert not node(name).file("/etc/sparkops/model-sync-fresh").exists, name
        assert not node(name).file("/var/lib/sparkops/fresh-hub").exists, name


# --- the download path: `hf download` on the head from the Hub (a stand-in on the head's 127.0.0.1), gated ----------

GATED = "sparkops-lab/tiny-gated"
GATED_DIR = "/var/lib/sparkops/huggingface/hub/models--sparkops-lab--tiny-gated"
HUB_LOG = "/var/log/lab-hf-hub.log"


def download_run(token: str, tmp_path: t.Any, *extra: str) -> subprocess.CompletedProcess[str]:
    """site.yml --tags model for the gated model, the token given the way a user would (a vars file, e.g. a vault)."""
    token_vars = tmp_path / "token.yml"
    token_vars.write_text(f"model_sync_hf_token: {token}\n")
    token_vars.chmod(0o600)
    return run_site("-e", f"sparkops_model_repo={GATED}", "-e", "model_sync_hf_endpoint=http://127.0.0.1:8081", "-e", f"@{token_vars}", *extra)


def hub_token() -> str:
    with open(os.environ["MODEL_LAB_HUB_TOKEN_FILE"]) as f:
        return f.read().strip()


def hub_requests() -> list[str]:
    return node(HEAD).check_output(f"cat {HUB_LOG}").splitlines()


def test_a_refused_token_fails_naming_the_repo_and_leaves_nothing_half_done(tmp_path: t.Any) -> None:
    run = download_run("not-the-token", tmp_path)
    assert run.returncode != 0
    out = run.stdout + run.stderr
    assert "not-the-token" not in out
    assert re.search(rf"{HEAD}.*(403|[Gg]ated|approval)", out, re.DOTALL), out[-3000:]
    assert GATED in out
    head = node(HEAD)
    assert head.run(f"ls {GATED_DIR}/snapshots/*/*.safetensors").rc != 0  # no weights came
    for worker in WORKERS:
        assert not node(worker).file(GATED_DIR).exists, worker


def test_a_model_that_cannot_fit_is_refused_before_any_byte_with_its_numbers(tmp_path: t.Any) -> None:
    """TP 3 does not divide the model's attention heads, and 0.1 % of memory cannot hold its weights: the preflight
    says both at once, with the numbers, from the Hub's metadata alone (config.json and the safetensors index)."""
    before = len(hub_requests())
    run = download_run(
        hub_token(), tmp_path, "-e", "sparkops_tensor_parallel_size=3", "-e", "sparkops_pipeline_parallel_size=1", "-e", "sparkops_gpu_memory_utilization=0.001"
    )
    out = " ".join((run.stdout + run.stderr).split())  # the yaml callback wraps long messages
    assert run.returncode != 0, out[-3000:]
    assert re.search(r"sparkops_tensor_parallel_size \(3\) must divide the model's \d+ attention heads \(vLLM refuses it\); sizes that do: 1, 2", out), out[
        -3000:
    ]
    for name in [HEAD, *WORKERS]:
        assert re.search(
            rf"host {name}: the weights take [\d.]+ MiB per node \([\d.]+ MiB over TP 3 x PP 1\) .{{0,200}} "
            r"\(MemTotal [\d.]+ GiB x sparkops_gpu_memory_utilization 0.001",
            out,
        ), out[-3000:]
    assert "PLAY [Model]" not in out
    requests = hub_requests()[before:]
    assert any("config.json" in line for line in requests), requests
    assert not any(".safetensors" in line and ".index.json" not in line for line in requests), requests  # not a byte of weights
    assert hub_token() not in out + "\n".join(requests)
    assert node(HEAD).run(f"ls {GATED_DIR}/snapshots/*/*.safetensors").rc != 0
    for worker in WORKERS:
        assert not node(worker).file(GATED_DIR).exists, worker


def test_download_on_the_head_with_the_token_then_distribution(tmp_path: t.Any) -> None:
    token = hub_token()
    before = len(hub_requests())
    run = download_run(token, tmp_path, "-vvv")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    # The token is in no output, even at -vvv, nor in any command line Ansible ran, nor in the Hub's log.
    assert token not in run.stdout + run.stderr
    requests = hub_requests()[before:]
    assert token not in "\n".join(hub_requests())
    files = [line for line in requests if "/resolve/" in line and line.split()[1] == "GET"]
    assert files and all("auth=yes" in line for line in files), requests
    head = node(HEAD)
    assert head.file("/etc/sparkops/model-sync/hf_token").mode == 0o600
    assert head.file("/etc/sparkops/model-sync/hf_token").content_string.strip() == token
    # Downloaded once on the head, pushed to the workers, the same everywhere.
    listing = f"cd {GATED_DIR} && cat refs/main && find snapshots -type l | sort && sha256sum blobs/*"
    snapshots = {name: node(name).check_output(listing) for name in [HEAD, *WORKERS]}
    assert len(set(snapshots.values())) == 1, snapshots
    assert "safetensors" in snapshots[HEAD]


def test_a_rerun_downloads_nothing_and_removes_a_partial_a_killed_download_left(tmp_path: t.Any) -> None:
    head = node(HEAD)
    before = len(hub_requests())
    etag = head.check_output(f"ls {GATED_DIR}/blobs | head -1")
    head.check_output(f"printf partial > {GATED_DIR}/blobs/{etag}.0a1b2c3d.incomplete")
    token = hub_token()
    run = download_run(token, tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert not head.file(f"{GATED_DIR}/blobs/{etag}.0a1b2c3d.incomplete").exists
    assert recap(run)[HEAD]["changed"] == 1, recap(run)  # the removal, nothing downloaded
    assert all(recap(run)[worker]["changed"] == 0 for worker in WORKERS), recap(run)
    assert hub_requests()[before:] == []  # not even a metadata request: the quick check found the snapshot complete
    push = run.stdout.split("Push the snapshot over the fabric]", 1)[1].split("\n\n", 1)[0]
    assert f"skipping: [{HEAD}]" in push, push  # every worker was complete: nothing to send (a converged re-run)


# --- old snapshots pruned when asked (model_sync_prune_snapshots) ------------------------------------------------------

HUB_ROOT = "/srv/sparkops-lab/hub"  # the Hub stand-in's folder on the head (tests/lab/sparklab/hub_server.py)


def new_revision(tag: str) -> str:
    """A new commit of the gated model on the Hub stand-in, tagged ``tag``: the files of the commit `main` names and a
    README.md of its own (the weights stay the same blobs). Returns the commit."""
    head = node(HEAD)
    main = head.check_output(f'python3 -c \'import json; print(json.load(open("{HUB_ROOT}/{GATED}/refs.json"))["main"])\'')
    source = f"/tmp/lab-hub-revision-{tag}"
    head.check_output(f"rm -rf {source} && cp -rL {HUB_ROOT}/{GATED}/{main} {source} && printf '# tiny-gated, {tag}\\n' > {source}/README.md")
    commit = head.check_output(f"python3 /usr/local/bin/hf-hub --root {HUB_ROOT} --import {GATED} {source} --ref {tag}").splitlines()[-1]
    head.check_output(f"rm -rf {source}")
    assert re.fullmatch(r"[0-9a-f]{40}", commit) and commit != main, (main, commit)
    return commit


def cache_of(name: str) -> tuple[set[str], set[str], set[str], set[str]]:
    """(snapshot commits, refs, blob names, blob names the snapshots link to) in a node's cache of the gated model."""
    host = node(name)
    commits = set(host.check_output(f"ls {GATED_DIR}/snapshots").split())
    refs = set(host.check_output(f'cd {GATED_DIR}/refs && for ref in *; do echo "$ref=$(cat $ref)"; done').split())
    blobs = set(host.check_output(f"ls {GATED_DIR}/blobs").split())
    linked = {target.rsplit("/", 1)[-1] for target in host.check_output(f"find {GATED_DIR}/snapshots -type l -printf '%l\\n'").split()}
    return commits, refs, blobs, linked


def test_old_snapshots_are_pruned_when_asked_keeping_the_one_served_and_the_previous(tmp_path: t.Any) -> None:
    """Two new revisions on the Hub (tags v2, v3, each with a README of its own), pinned in turn with
    model_sync_prune_snapshots: v2 with model_sync_prune_keep_previous 1 (the default) keeps the snapshot served before
    it; v3 with 0 removes both older ones on every node, with their refs and the blob only v2 used (its README), and
    keeps the weights all three share. (A prune with nothing to remove changes nothing: the unit tests of
    hf_snapshot_prune; a rerun of the role with a complete snapshot: test_a_rerun_downloads_nothing above.)"""
    token = hub_token()
    first = node(HEAD).check_output(f"cat {GATED_DIR}/refs/main")
    second, third = new_revision("v2"), new_revision("v3")
    run = download_run(token, tmp_path, "-e", "model_sync_prune_snapshots=true", "-e", "sparkops_model_revision=v2")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    for name in [HEAD, *WORKERS]:
        commits, refs, blobs, linked = cache_of(name)
        assert commits == {first, second} and f"v2={second}" in refs, (name, commits, refs)
        assert linked == blobs, (name, blobs - linked)  # every blob is used; no snapshot links to a missing one

    v3 = ["-e", "model_sync_prune_snapshots=true", "-e", "model_sync_prune_keep_previous=0", "-e", "sparkops_model_revision=v3"]
    run = download_run(token, tmp_path, *v3)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    said = " ".join(run.stdout.split())
    assert re.search(rf"{GATED}: kept {third}; removed 2 snapshot\(s\) ({first}, {second}|{second}, {first}) and 1 blob\(s\)", said), said[-3000:]
    for name in [HEAD, *WORKERS]:
        commits, refs, blobs, linked = cache_of(name)
        assert commits == {third} and refs == {f"v3={third}"}, (name, commits, refs)  # main and v2 named removed commits
        assert linked == blobs, (name, blobs - linked)
        assert node(name).run(f"find -L {GATED_DIR}/snapshots -type l | grep .").rc != 0, name  # no dangling link


# --- several models, each to the nodes that serve it (model_sync_models; issue 36) -----------------------------------


def test_two_models_each_downloaded_once_and_pushed_to_the_nodes_that_serve_it_only(tmp_path: t.Any) -> None:
    """model_sync_models with the scenario's model on every node and the gated one on the head and the first worker:
    one run fetches both, the second worker gets no copy of the gated model (its old one removed first), the first
    holds the head's; the scenario's model stays the same everywhere; a rerun changes nothing."""
    served, spare = WORKERS[0], WORKERS[-1]
    node(spare).check_output(f"rm -rf {GATED_DIR}")
    models = [{"repo_id": "sparkops-lab/tiny-moe"}, {"repo_id": GATED, "revision": "v3", "nodes": [HEAD, served]}]
    models_vars = ["-e", json.dumps({"model_sync_models": models})]
    run = download_run(hub_token(), tmp_path, *models_vars)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "(item=sparkops-lab/tiny-moe@main)" in run.stdout and f"(item={GATED}@v3)" in run.stdout, run.stdout[-3000:]
    assert not node(spare).file(GATED_DIR).exists
    listing = f"cd {GATED_DIR} && cat refs/v3 && find snapshots -type l | sort && sha256sum blobs/*"
    assert node(served).check_output(listing) == node(HEAD).check_output(listing)
    expect_same_as_head()  # tiny-moe, every worker
    again = download_run(hub_token(), tmp_path, *models_vars)
    assert again.returncode == 0 and {counts["changed"] for counts in recap(again).values()} == {0}, recap(again)
