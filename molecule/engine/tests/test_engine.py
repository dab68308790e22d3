"""The real vLLM engine (CPU builds) served by site.yml in mp mode, TP=2 across head and worker: converged on 0.30.0,
upgraded to the role's default 0.32.0 (an upgrade the new engine refuses rolled back to 0.30.0 serving first), and
brought back with no Ansible run whatever ends it: both nodes rebooted (side_effect), its engine killed, the worker's
rank killed, rank 0 restarted alone. Each recovery is timed against the engine's own start; the times go to
tests/output/ci/engine-recovery.json (bench/engine_recovery.py writes them to docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import openai
import pytest
import requests
from engine_serving import API_KEY, BASE, HEAD, MODEL, TIMINGS, UNIT, WORKER, main_pid, record, serves, unit, wait_not_serving, wait_serving

sys.path.insert(0, str(Path(os.environ["ENGINE_LAB_PROJECT"]) / "tests" / "lab"))
from sparklab.scenario import installed_vllm, node, playbook, recap  # noqa: E402

HEAD_IP = os.environ["ENGINE_LAB_HEAD_FABRIC_IP"]
# converge.yml deploys FROM; the tests upgrade to TO, the role's default (roles/vllm_serve/defaults/main.yml).
FROM, TO = "0.30.0", "0.32.0"


def test_both_ranks_serve_after_the_reboot_with_no_ansible_run() -> None:
    """side_effect rebooted both nodes: the ranks met again and serve, through their gates."""
    wait_serving(600)
    started = TIMINGS.parent / "engine-reboot-started"  # written by side_effect just before the reboot
    record("reboot_to_serving_s", time.time() - float(started.read_text()))
    head, worker = node(HEAD), node(WORKER)
    assert head.service(UNIT).is_enabled and worker.service(UNIT).is_enabled
    head_args = head.check_output(f"cat /proc/{main_pid(HEAD)}/cmdline | tr '\\0' ' '")
    worker_args = worker.check_output(f"cat /proc/{main_pid(WORKER)}/cmdline | tr '\\0' ' '")
    assert "sparkops-vllm-rank /etc/sparkops/vllm-group.json -- /opt/sparkops/ray/bin/vllm serve" in head_args, head_args
    assert f"--distributed-executor-backend mp --nnodes 2 --node-rank 0 --master-addr {HEAD_IP}" in head_args, head_args
    assert "--node-rank 1" in worker_args and "--headless" in worker_args and "--headless" not in head_args, worker_args
    # The real engine, installed by the role as `vllm` (the CPU build is versioned 0.30.0+cpu, as vLLM's own are).
    assert installed_vllm(HEAD) == installed_vllm(WORKER) == f"{FROM}+cpu"
    journal = head.check_output(f"journalctl _SYSTEMD_INVOCATION_ID={unit(HEAD, 'InvocationID')} --no-pager --output cat")
    assert "gate snapshot: ok" in journal and "gate memory: ok" in journal, journal[-3000:]
    assert "every headless rank answers; starting vLLM" in journal, journal[-3000:]


def unit_starts(name: str, since: str) -> int:
    """How many times systemd started the rank's unit since ``since`` (the node's clock)."""
    return len(node(name).run(f"journalctl -u {UNIT} --since '{since}' --no-pager -o cat | grep -E '^Started .*vLLM'").stdout.splitlines())


# 0.30's flag, renamed in 0.32: 0.30.0 vllm/engine/arg_utils.py:1315 (--enable-mamba-fine-grained-prefix-cache),
# 0.32.0 arg_utils.py:1408 (--enable-mamba-shared-prefix-checkpoint in its place). An inventory that carries it from
# 0.30 cannot run 0.32.
RENAMED_FLAG = "--enable-mamba-fine-grained-prefix-cache"


def test_an_upgrade_the_new_engine_refuses_is_rolled_back_to_the_serving_release() -> None:
    """0.32.0 pinned with a flag 0.32 no longer has: the new engine's own command line refuses the unit's arguments
    after the install, so the role puts 0.30.0 back on both nodes, which serves again, and the run fails saying so."""
    units = {name: node(name).file(f"/etc/systemd/system/{UNIT}.service").content_string for name in (HEAD, WORKER)}
    extra = {"vllm_serve_version": TO, "vllm_serve_extra_args": ["--enforce-eager", "--kv-cache-memory-bytes", "64M", RENAMED_FLAG]}
    run = playbook("site.yml", "--tags", "serve", "-e", json.dumps(extra))
    output = " ".join((run.stdout + run.stderr).split())
    assert run.returncode != 0, output[-3000:]
    assert f"vLLM {TO} refuses the arguments the unit would run it with; the unit was not changed (the upgrade to it is undone next)" in output, output[-3000:]
    assert f"unrecognized arguments: {RENAMED_FLAG}" in output, output[-3000:]
    assert f"vLLM {TO} did not serve, so the previous install (vLLM {FROM}+cpu) was put back on {HEAD}, {WORKER} and serves again" in output, output[-3000:]
    for name in (HEAD, WORKER):
        assert installed_vllm(name) == f"{FROM}+cpu", name
        assert not node(name).file("/opt/sparkops/ray.previous").exists, name
        assert node(name).file(f"/etc/systemd/system/{UNIT}.service").content_string == units[name], name
    assert serves()


def test_an_upgrade_to_the_default_release_serves_with_one_group_restart() -> None:
    """The role's default (0.32.0) over 0.30.0: installed on both nodes, the group restarted once (one start of each
    rank's unit), serving on 0.32.0, the copy of 0.30.0 removed; a rerun changes nothing."""
    since = node(HEAD).check_output("date '+%Y-%m-%d %H:%M:%S'")
    run = playbook("site.yml", "--tags", "serve")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    for name in (HEAD, WORKER):
        assert installed_vllm(name) == f"{TO}+cpu", name
        assert not node(name).file("/opt/sparkops/ray.previous").exists, name
        assert unit_starts(name, since) == 1, node(name).run(f"journalctl -u {UNIT} --since '{since}' --no-pager -o cat").stdout[-3000:]
    assert serves()
    head_args = node(HEAD).check_output(f"cat /proc/{main_pid(HEAD)}/cmdline | tr '\\0' ' '")
    assert "--distributed-executor-backend mp --nnodes 2 --node-rank 0" in head_args, head_args
    again = playbook("site.yml", "--tags", "serve")
    assert again.returncode == 0 and recap(again) and all(s["changed"] == 0 for s in recap(again).values()), recap(again)


def test_the_engine_start_time() -> None:
    """The baseline of the recovery times: the group stopped, then started as the role's handler does."""
    for name in (HEAD, WORKER):
        node(name).check_output(f"systemctl stop {UNIT}")
    start = time.monotonic()
    for name in (HEAD, WORKER):
        node(name).check_output(f"systemctl start {UNIT}")
    record("engine_start_s", wait_serving(600, since=start))


def test_a_completion_with_the_reasoning_apart_and_a_wrong_key_refused() -> None:
    """--reasoning-parser qwen3, as 0.30 returns it: the thinking in `reasoning` (not `reasoning_content`, 0.16 on),
    `content` null while the model is still thinking. The lab model's weights are random: most sampled tokens are
    special ones; a few seeds give text, all of it reasoning."""
    client = openai.OpenAI(base_url=f"{BASE}/v1", api_key=API_KEY, timeout=60)
    thinking = []
    for seed in range(8):
        reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Say hello."}], max_tokens=32, seed=seed)
        assert reply.usage is not None and reply.usage.completion_tokens == 32
        message = reply.choices[0].message.model_dump()
        assert "reasoning" in message and "reasoning_content" not in message, message
        if message["reasoning"]:
            thinking.append((message, reply.usage.model_dump()))
    assert thinking, "no seed gave reasoning text"
    message, usage = thinking[0]
    assert message["content"] is None and usage["completion_tokens_details"]["reasoning_tokens"] == 32, (message, usage)
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{BASE}/v1", api_key="wrong", timeout=30).models.list()
    wrong = requests.get(f"{BASE}/v1/models", headers={"Authorization": "Bearer wrong"}, timeout=10)
    assert wrong.status_code == 401 and wrong.json() == {"error": "Unauthorized"}


def test_the_module_reports_ready() -> None:
    args = {"url": f"http://{HEAD_IP}:8000", "model": MODEL, "api_key": API_KEY, "timeout": 60, "interval": 1, "fail_on_timeout": False}
    run = playbook(HEAD, "-m", "sparkops.inference.openai_endpoint", "-a", json.dumps(args), command="ansible")
    assert " => " in run.stdout, run.stdout + run.stderr
    result = json.loads(run.stdout.split(" => ", 1)[1])
    assert result["ready"] and result["state"] == "ready" and result["usage"]["completion_tokens"] > 0, result
    assert API_KEY not in run.stdout + run.stderr


def test_secrets_only_in_the_0600_file() -> None:
    for name in (HEAD, WORKER):
        host = node(name)
        secrets = host.file("/etc/sparkops/vllm-secrets.env")
        assert secrets.mode == 0o600 and f"VLLM_API_KEY={API_KEY}" in secrets.content_string
        assert API_KEY not in host.check_output("ps -eo args")
        assert API_KEY not in host.file(f"/etc/systemd/system/{UNIT}.service").content_string


def test_every_rank_records_its_gb10_workarounds() -> None:
    """The lab's nvidia-smi says 12.1 (a GB10), and its model is not quantized: no workaround, recorded on every rank's
    node, and none in the running engine's environment."""
    for name in (HEAD, WORKER):
        host = node(name)
        record = json.loads(host.file("/etc/sparkops/vllm-kernel-workarounds.json").content_string)
        assert record["note"] == "none needed: the model is not quantized" and record["env"] == {}, (name, record)
        environ = host.check_output(f"cat /proc/{main_pid(name)}/environ | tr '\\0' '\\n'")
        assert "HF_HUB_OFFLINE=1" in environ and "VLLM_DISABLED_KERNELS" not in environ, name


def test_rank_0s_engine_killed_serving_again_with_no_ansible_run() -> None:
    """SIGKILL of rank 0's EngineCore: vLLM exits 0 (vllm#48966); Restart=always and the group bring it back."""
    head = node(HEAD)
    worker_pid = main_pid(WORKER)
    engine = head.check_output("pgrep --exact VLLM::EngineCor | head -1")
    assert engine, head.check_output("ps -eo pid,comm,args")
    start = time.monotonic()
    head.check_output(f"kill -KILL {engine}")
    wait_not_serving(60)
    record("engine_killed_to_serving_s", wait_serving(600, since=start))
    journal = head.check_output(f"journalctl -u {UNIT} --since '-10min' --no-pager -o cat")
    assert "vLLM exited with status 0" in journal, journal[-3000:]  # the engine's own exit status on engine death
    assert main_pid(WORKER) != worker_pid  # the headless rank restarted with it


def test_the_worker_rank_killed_serving_again_with_no_ansible_run() -> None:
    """SIGKILL of the worker's `vllm serve` (the headless rank): its supervisor ends the rank, rank 0 notices within
    vllm_serve_group_lost_after_s, and the group meets again. (A `systemctl kill` of the whole unit also recovers, but
    in the lab systemd then misses the emptied cgroup of the hybrid cgroup v1 layout and waits out TimeoutStopSec.)"""
    head_pid = main_pid(HEAD)
    rank = node(WORKER).check_output(f"pgrep --parent {main_pid(WORKER)} --exact vllm")
    assert rank, node(WORKER).check_output("ps -eo pid,ppid,comm,args")
    since = node(HEAD).check_output("date '+%Y-%m-%d %H:%M:%S'")
    start = time.monotonic()
    node(WORKER).check_output(f"kill -KILL {rank}")
    wait_not_serving(60)  # the group restarts: rank 0 too (a request may still be answered for a moment)
    record("worker_rank_killed_to_serving_s", wait_serving(600, since=start))
    assert main_pid(HEAD) != head_pid  # rank 0 left the old group and met the new one
    journal = node(HEAD).check_output(f"journalctl -u {UNIT} --since '{since}' --no-pager -o cat | grep sparkops-vllm-rank:")
    # Rank 0's supervisor ends it when rank 1 goes away, unless rank 0's vLLM fails first (a request to an engine
    # whose headless rank is gone gets HTTP 500 and the server exits): either way the rank ends and the group meets.
    assert (
        "rank 1 (engine-spark-worker1, 192.168.200.82) has not answered" in journal
        or "rank 1 (engine-spark-worker1, 192.168.200.82) restarted" in journal
        or "vLLM exited with status" in journal
    ), journal


def test_rank_0_restarted_alone_serving_again_with_no_ansible_run() -> None:
    worker_pid = main_pid(WORKER)
    start = time.monotonic()
    node(HEAD).check_output(f"systemctl restart {UNIT}")
    record("rank0_restarted_to_serving_s", wait_serving(600, since=start))
    assert main_pid(WORKER) != worker_pid  # the headless rank did not stay in the old rendezvous


def test_an_argument_the_engine_does_not_know_stops_the_role_and_the_unit_stays() -> None:
    """--swap-space: vLLM 0.30 removed it (0.32 has none either). The role stops with vLLM's own message and the
    variable that carried it."""
    units = {name: node(name).file(f"/etc/systemd/system/{UNIT}.service").content_string for name in (HEAD, WORKER)}
    pids = (main_pid(HEAD), main_pid(WORKER))
    extra = {"vllm_serve_extra_args": ["--enforce-eager", "--kv-cache-memory-bytes", "64M", "--swap-space", "4"]}
    run = playbook("site.yml", "--tags", "serve", "-e", json.dumps(extra))
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert f"vLLM {TO} refuses the arguments the unit would run it with; nothing was changed" in output, output[-3000:]
    assert "unrecognized arguments: --swap-space 4" in output and "refused; from vllm_serve_extra_args" in output, output[-3000:]
    assert {name: node(name).file(f"/etc/systemd/system/{UNIT}.service").content_string for name in (HEAD, WORKER)} == units
    assert (main_pid(HEAD), main_pid(WORKER)) == pids and serves()


# vLLM's DefaultModelLoader path for a safetensors snapshot (0.30 model_loader/default_loader.py:128-233, 287): the
# index's weight_map picks the shard files, then every tensor of them is read. Run with the node's real vLLM.
LOADER = """
import glob, json, os, sys
from vllm.model_executor.model_loader.weight_utils import (
    filter_duplicate_safetensors_files, filter_files_not_needed_for_inference, safetensors_weights_iterator)
verdicts = {}
for folder in sys.argv[1:]:
    try:
        files = filter_duplicate_safetensors_files(glob.glob(os.path.join(folder, '*.safetensors')), folder, 'model.safetensors.index.json')
        files = filter_files_not_needed_for_inference(files)
        verdicts[folder] = sum(1 for _ in safetensors_weights_iterator(files, use_tqdm_on_load=False))
    except Exception as exc:
        verdicts[folder] = type(exc).__name__ + ': ' + str(exc)[:200]
print(json.dumps(verdicts))
"""


def test_snapshot_verdicts_agree_with_what_the_engine_loads() -> None:
    """hf_snapshot's verdict on three copies of the served snapshot, beside vLLM's own loader on the same files: a
    wrong index total_size (a value no loader reads) is complete with a warning and loads; a truncated shard is
    incomplete and does not load."""
    head = node(HEAD)
    hub = "/var/lib/sparkops/huggingface/hub"
    repo = "models--sparkops-lab--tiny-moe"
    commit = head.check_output(f"cat {hub}/{repo}/refs/main")
    work = "/tmp/sparkops-xcheck"
    head.check_output(f"rm -rf {work} && mkdir -p {work}")
    for variant in ("intact", "total_size", "truncated"):
        head.check_output(f"mkdir -p {work}/{variant} && cp -a {hub}/{repo} {work}/{variant}/")
    snap = f"{repo}/snapshots/{commit}"
    index = f"{work}/total_size/{snap}/model.safetensors.index.json"
    head.check_output(
        f"""python3 -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d["metadata"]["total_size"] += 12345; """
        f"""open(p + ".new", "w").write(json.dumps(d))' {index} && rm {index} && mv {index}.new {index}"""
    )
    shard = head.check_output(f"readlink -f {work}/truncated/{snap}/model-00002-of-00004.safetensors")
    head.check_output(f"truncate --size=-100 {shard}")
    verdicts = {}
    for variant in ("intact", "total_size", "truncated"):
        args = {"repo_id": "sparkops-lab/tiny-moe", "revision": "main", "cache_dir": f"{work}/{variant}", "fail_on_incomplete": False}
        run = playbook(HEAD, "-m", "sparkops.inference.hf_snapshot", "-a", json.dumps(args), command="ansible")
        assert " => " in run.stdout, run.stdout + run.stderr
        verdicts[variant] = json.loads(run.stdout.split(" => ", 1)[1])
    folders = " ".join(f"{work}/{v}/{snap}" for v in ("intact", "total_size", "truncated"))
    loaded = json.loads(head.check_output(f'/opt/sparkops/ray/bin/python -c "{LOADER}" {folders}').splitlines()[-1])  # vLLM logs first
    head.check_output(f"rm -rf {work}")
    assert verdicts["intact"]["complete"] and isinstance(loaded[f"{work}/intact/{snap}"], int)
    assert verdicts["total_size"]["complete"] and verdicts["total_size"]["index_total_size_matches"] is False, verdicts["total_size"]
    assert loaded[f"{work}/total_size/{snap}"] == loaded[f"{work}/intact/{snap}"]  # the engine reads every tensor
    assert not verdicts["truncated"]["complete"], verdicts["truncated"]
    assert not isinstance(loaded[f"{work}/truncated/{snap}"], int), loaded  # and the engine cannot load it


def test_a_rerun_changes_nothing() -> None:
    pids = (main_pid(HEAD), main_pid(WORKER))
    run = playbook("site.yml", "--tags", "serve")  # nccl and ray: the serve scenario reruns them
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert recap(run) and all(s["changed"] == 0 for s in recap(run).values()), recap(run)
    assert (main_pid(HEAD), main_pid(WORKER)) == pids
