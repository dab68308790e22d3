# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_serve role's unit and gate settings as Ansible renders them (its defaults and vars, its templates), for
the cases the lab cannot run: the docker runtime, and flags that need escaping for systemd.

Hostile values are read back as systemd reads the unit (tests/unit/systemd_syntax.py: ``systemd-analyze`` where it is
installed, else its model): each reaches vLLM's argv (or the unit's description) exactly, and a line break is refused
naming its variable."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest
import systemd_syntax
from ansible_run import play, run_playbook
from vllm_serve_inventory import inventory

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "vllm_serve"

PLAYBOOK = """
- name: Render the vllm_serve unit and gate settings for each node
  hosts: all
  gather_facts: false
  vars_files:
    - {role}/defaults/main.yml
    - {role}/vars/main.yml
  tasks:
    - name: Render the unit
      ansible.builtin.template:
        src: {role}/templates/sparkops-vllm.service.j2
        dest: "{out}/{{{{ inventory_hostname }}}}.service"
        mode: "0644"
      when: __vllm_serve_runs_here | bool
    - name: Render the gate settings
      ansible.builtin.template:
        src: {role}/templates/vllm-gate.json.j2
        dest: "{out}/{{{{ inventory_hostname }}}}.json"
        mode: "0644"
      vars:
        vllm_serve_gate_min_available_mib: 90000
      when: __vllm_serve_runs_here | bool
    - name: Render the group settings (mp mode)
      ansible.builtin.template:
        src: {role}/templates/vllm-group.json.j2
        dest: "{out}/{{{{ inventory_hostname }}}}.group.json"
        mode: "0644"
      when: __vllm_serve_runs_here | bool and vllm_serve_backend == 'mp'
"""


def render(tmp_path: Path, **extra: object) -> dict[str, str]:
    """Render for a head and a worker; return the files written, by name."""
    out = tmp_path / "out"
    out.mkdir()
    run_playbook(tmp_path, inventory(), PLAYBOOK.format(role=ROLE, out=out), extra)
    return {path.name: path.read_text() for path in out.iterdir()}


def exec_start(unit: str) -> str:
    """The ExecStart command, its continuation lines joined."""
    text = unit.replace("\\\n", " ")
    return " ".join(next(line for line in text.splitlines() if line.startswith("ExecStart=")).split())


def test_ray_mode_venv_on_the_head_only_with_escaped_flags(tmp_path: Path) -> None:
    files = render(
        tmp_path,
        vllm_serve_backend="ray",
        vllm_serve_reasoning_parser="qwen3",
        vllm_serve_tool_call_parser="qwen3_coder",
        vllm_serve_max_model_len=262144,
        vllm_serve_extra_args=["--chat-template", "/etc/vllm/100% qwen.jinja", "--override-generation-config", '{"temperature": $T}'],
    )
    assert sorted(files) == ["spark-head.json", "spark-head.service"]  # Ray mode: no unit on the worker
    unit = files["spark-head.service"]
    assert exec_start(unit) == (
        "ExecStart=/opt/sparkops/ray/bin/vllm serve Qwen/Qwen3.5-122B-A10B-FP8 --revision main --served-model-name qwen3.5-122b "
        "--host 0.0.0.0 --port 8000 --tensor-parallel-size 2 --pipeline-parallel-size 1 --gpu-memory-utilization 0.8 "
        "--kv-cache-dtype auto --max-model-len 262144 --reasoning-parser qwen3 --tool-call-parser qwen3_coder --enable-auto-tool-choice "
        "--distributed-executor-backend ray --chat-template '/etc/vllm/100%% qwen.jinja' "
        """--override-generation-config '{"temperature": $$T}'"""
    )
    assert "Requires=sparkops-ray-head.service" in unit and "After=sparkops-ray-head.service" in unit
    # vLLM exits 0 when its engine dies (vllm#48966): restart whatever the exit status, within the start limit.
    assert "Restart=always" in unit and "Restart=on-failure" not in unit and "StartLimitBurst=3" in unit and "StartLimitIntervalSec=3600" in unit
    assert "EnvironmentFile=-/etc/sparkops/vllm-secrets.env" in unit
    assert "ExecStartPre=/usr/local/sbin/sparkops-vllm-gate /etc/sparkops/vllm-gate.json" in unit
    assert "TimeoutStartSec=1020" in unit  # the gates' 600 + 120 s, and 300 s to spare
    gate = json.loads(files["spark-head.json"])
    assert gate["gates"] == ["cluster", "snapshot", "memory"]
    assert gate["expected_nodes"] == {"spark-head": "192.168.100.10", "spark-worker1": "192.168.100.11"}
    assert gate["ray_address"] == "192.168.100.10:6379" and gate["ray_python"] == "/opt/sparkops/ray/bin/python"
    assert gate["min_available_mib"] == 90000 and gate["repo_id"] == "Qwen/Qwen3.5-122B-A10B-FP8"


def test_mp_mode_a_unit_per_node_the_workers_headless(tmp_path: Path) -> None:
    files = render(tmp_path, vllm_serve_backend="mp")
    assert sorted(files) == [
        "spark-head.group.json", "spark-head.json", "spark-head.service",
        "spark-worker1.group.json", "spark-worker1.json", "spark-worker1.service",
    ]  # fmt: skip
    head, worker = exec_start(files["spark-head.service"]), exec_start(files["spark-worker1.service"])
    # Each rank runs under its supervisor, which restarts the ranks as one group.
    supervisor = "ExecStart=/usr/local/sbin/sparkops-vllm-rank /etc/sparkops/vllm-group.json -- /opt/sparkops/ray/bin/vllm serve "
    assert head.startswith(supervisor) and worker.startswith(supervisor), head
    peers = [{"name": "spark-head", "ip": "192.168.100.10"}, {"name": "spark-worker1", "ip": "192.168.100.11"}]
    assert json.loads(files["spark-head.group.json"]) == {"rank": 0, "port": 29560, "peers": peers, "lost_after": 5, "stop_grace": 10}
    assert json.loads(files["spark-worker1.group.json"])["rank"] == 1
    assert "Restart=always" in files["spark-worker1.service"]
    assert head.endswith("--distributed-executor-backend mp --nnodes 2 --node-rank 0 --master-addr 192.168.100.10 --master-port 29501")
    assert worker.endswith("--distributed-executor-backend mp --nnodes 2 --node-rank 1 --master-addr 192.168.100.10 --master-port 29501 --headless")
    assert "sparkops-ray-head" not in files["spark-head.service"]
    assert json.loads(files["spark-worker1.json"])["gates"] == ["snapshot", "memory"]


def test_a_listed_deployment_is_what_every_rank_serves(tmp_path: Path) -> None:
    """sparkops_deployments' entry (the plan's deployment, here from the inventory alone) wins over the cluster
    variables: its model, served name, port, memory share and extra arguments reach each rank's unit and gate."""
    listed = [{"name": "big", "model": "org/big-model", "revision": "v2", "served_model_name": "big", "port": 8100,
               "gpu_memory_utilization": 0.7, "extra_args": ["--enforce-eager"]}]  # fmt: skip
    files = render(tmp_path, vllm_serve_backend="mp", sparkops_deployments=listed)
    for host in ("spark-head", "spark-worker1"):
        argv = exec_start(files[f"{host}.service"])
        assert "/bin/vllm serve org/big-model --revision v2 --served-model-name big --host 0.0.0.0 --port 8100 --tensor-parallel-size 2 " in argv, argv
        assert "--gpu-memory-utilization 0.7 " in argv and " --enforce-eager" in argv, argv
        assert (json.loads(files[f"{host}.json"])["repo_id"], json.loads(files[f"{host}.json"])["revision"]) == ("org/big-model", "v2")


def test_speculative_decoding_reaches_every_rank_as_one_json_argument(tmp_path: Path) -> None:
    """vllm_serve_speculative in the unit of each mp rank as vLLM reads it: one argument, the compact JSON."""
    speculative = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}
    files = render(tmp_path, vllm_serve_backend="mp", vllm_serve_speculative=speculative)
    for host in ("spark-head", "spark-worker1"):
        (argv,) = systemd_syntax.read(files[f"{host}.service"]).commands["ExecStart"]
        at = argv.index("--speculative-config")
        assert json.loads(argv[at + 1]) == speculative and argv[at + 2] == "--distributed-executor-backend", argv


def test_a_draft_model_reaches_each_rank_and_its_gate_and_vllm_serve_speculative_enabled_false_serves_without(tmp_path: Path) -> None:
    """A draft model (vllm_serve_speculative.model): in the flag as given (vLLM reads the repository id from the cache
    model_sync filled) and in each rank's gate settings, which check its snapshot; with vllm_serve_speculative_enabled
    false (playbooks/benchmark.yml's comparison), neither."""
    speculative = {"method": "draft_model", "model": "org/drafter", "revision": "v2", "num_speculative_tokens": 2}
    for case in ("on", "off"):
        (tmp_path / case).mkdir()
    files = render(tmp_path / "on", vllm_serve_backend="mp", vllm_serve_speculative=speculative)
    for host in ("spark-head", "spark-worker1"):
        (argv,) = systemd_syntax.read(files[f"{host}.service"]).commands["ExecStart"]
        assert json.loads(argv[argv.index("--speculative-config") + 1]) == speculative, argv
        gate = json.loads(files[f"{host}.json"])
        assert (gate["draft_repo_id"], gate["draft_revision"]) == ("org/drafter", "v2"), gate
    files = render(tmp_path / "off", vllm_serve_backend="mp", vllm_serve_speculative=speculative, vllm_serve_speculative_enabled=False)
    assert "--speculative-config" not in files["spark-head.service"] and "draft_repo_id" not in json.loads(files["spark-head.json"])


def test_mp_mode_fences_the_headless_ranks_to_the_nodes_and_leaves_rank_0_open_for_the_api(tmp_path: Path) -> None:
    files = render(tmp_path, vllm_serve_backend="mp")
    head, worker = (systemd_syntax.read(files[f"{host}.service"]) for host in ("spark-head", "spark-worker1"))
    # The worker's rank serves no API: localhost and each node's fabric address only, everything else denied.
    assert worker.ip_address_allow() == ["127.0.0.0/8", "192.168.100.10/32", "192.168.100.11/32", "::1/128"]
    assert sorted(worker.values["IPAddressDeny"]) in (["0.0.0.0/0", "::/0"], ["any"])  # systemd-analyze, or the model
    # Rank 0 serves the API to clients anywhere: no unit fence (the host firewall fences its other ports).
    assert "IPAddressAllow" not in head.values and "IPAddressDeny" not in head.values
    # The docker runtime's container runs outside the unit's cgroup: no fence that would not hold.
    image = "nvcr.io/nvidia/vllm@sha256:" + "0" * 64
    (tmp_path / "docker").mkdir()
    docker = render(tmp_path / "docker", vllm_serve_runtime="docker", vllm_serve_image=image, vllm_serve_backend="mp")
    assert "IPAddressDeny" not in systemd_syntax.read(docker["spark-worker1.service"]).values


def test_docker_runtime_runs_the_pinned_image_in_the_foreground(tmp_path: Path) -> None:
    image = "nvcr.io/nvidia/vllm@sha256:" + "0" * 64
    # mp mode (docker with the Ray backend is refused: a container cannot drive another container's raylet).
    files = render(tmp_path, vllm_serve_runtime="docker", vllm_serve_image=image, vllm_serve_backend="mp")
    unit = files["spark-head.service"]
    assert exec_start(unit) == (
        "ExecStart=/usr/local/sbin/sparkops-vllm-rank /etc/sparkops/vllm-group.json -- "
        "/usr/bin/docker run --rm --name sparkops-vllm --network host --ipc host --gpus all "
        "--device /dev/infiniband --cap-add IPC_LOCK --ulimit memlock=-1 --ulimit stack=67108864 "
        "--volume /var/lib/sparkops/huggingface:/var/lib/sparkops/huggingface:ro "
        "--env-file /etc/sparkops/fabric.env --env-file /etc/sparkops/vllm.env --env-file /etc/sparkops/vllm-secrets.env "
        "--entrypoint vllm ${SPARKOPS_VLLM_IMAGE} serve Qwen/Qwen3.5-122B-A10B-FP8 --revision main --served-model-name qwen3.5-122b "
        "--host 0.0.0.0 --port 8000 --tensor-parallel-size 2 --pipeline-parallel-size 1 --gpu-memory-utilization 0.8 "
        "--kv-cache-dtype auto --distributed-executor-backend mp --nnodes 2 --node-rank 0 --master-addr 192.168.100.10 "
        "--master-port 29501"
    )
    # The image from a file of its own (units.yml writes the pinned one; a rollback the previous one), not the unit.
    assert "EnvironmentFile=/etc/sparkops/vllm-image.env" in unit and image not in unit
    assert "ExecStartPre=-/usr/bin/docker rm --force sparkops-vllm" in unit
    assert "ExecStop=/usr/bin/docker stop --time 120 sparkops-vllm" in unit
    assert "Requires=docker.service" in unit


# What the service's environment holds when vLLM starts: a word that expanded a variable would differ.
ENV = {"HOME": "/root", "X": "expanded", "T": "0.7", "SPARKOPS_VLLM_IMAGE": "nvcr.io/nvidia/vllm:26.01"}
NAME = """qwen 100% %h $HOME ${X} \\n \\\\ it's "q" ;"""
EXTRA_ARGS = [
    "--chat-template", "/etc/vllm/%h/100% chat.jinja",
    "--override-generation-config", '{"temperature": $T, "x": "${X}"}',
    "--a", "\\n", "--b", "\\\\", "--c", "it's", "--d", 'say "hi"', "--e", "two words", "--f", "%%", "--g", "", "--h", "$$", "--i", ";",
]  # fmt: skip
VLLM_ARGS = [
    "serve", "Qwen/Qwen3.5-122B-A10B-FP8", "--revision", "main", "--served-model-name", NAME, "--host", "0.0.0.0", "--port", "8000",
    "--tensor-parallel-size", "2", "--pipeline-parallel-size", "1", "--gpu-memory-utilization", "0.8", "--kv-cache-dtype", "auto",
]  # fmt: skip
# The attack: a value that closes the line's quote as the old quoting wrote it (systemd reads \' as an escaped quote
# inside single quotes), then a directive of its own that root runs before vLLM, then the old line's rest as a comment.
INJECTION = "\\'\\'\nExecStartPre=/bin/sh -c id\n#"
DROP_CACHES = ["/bin/sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches"]
GATE = ["/usr/local/sbin/sparkops-vllm-gate", "/etc/sparkops/vllm-gate.json"]


def test_hostile_values_reach_vllm_as_they_are_ray_mode(tmp_path: Path) -> None:
    """The old quoting (``quote``, then ``%`` and ``$`` doubled) missed that systemd reads C escapes inside single
    quotes: ``\\n`` reached vLLM as a line break, ``\\\\`` as one backslash. The description took ``%h`` as a
    specifier."""
    files = render(tmp_path, vllm_serve_backend="ray", vllm_serve_served_model_name=NAME, vllm_serve_extra_args=EXTRA_ARGS)
    unit = systemd_syntax.read(files["spark-head.service"], ENV)
    vllm = ["/opt/sparkops/ray/bin/vllm", *VLLM_ARGS, "--distributed-executor-backend", "ray", *EXTRA_ARGS]
    assert unit.commands == {"ExecStartPre": [DROP_CACHES, GATE], "ExecStart": [vllm]}
    assert unit.value("Description") == f"sparkops vLLM serving {NAME} (ray)"
    assert unit.values["EnvironmentFile"] == ["/etc/sparkops/fabric.env", "/etc/sparkops/ray.env", "/etc/sparkops/vllm.env", "-/etc/sparkops/vllm-secrets.env"]
    assert unit.warnings == []


def test_hostile_values_reach_vllm_as_they_are_mp_mode(tmp_path: Path) -> None:
    files = render(tmp_path, vllm_serve_backend="mp", vllm_serve_served_model_name=NAME, vllm_serve_extra_args=EXTRA_ARGS)
    supervisor = ["/usr/local/sbin/sparkops-vllm-rank", "/etc/sparkops/vllm-group.json", "--", "/opt/sparkops/ray/bin/vllm"]
    for host, rank in (("spark-head", []), ("spark-worker1", ["--headless"])):
        unit = systemd_syntax.read(files[f"{host}.service"], ENV)
        mp = ["--distributed-executor-backend", "mp", "--nnodes", "2", "--node-rank", "0" if not rank else "1", "--master-addr", "192.168.100.10"]
        assert unit.commands["ExecStart"] == [[*supervisor, *VLLM_ARGS, *mp, "--master-port", "29501", *rank, *EXTRA_ARGS]], host
        assert unit.value("Description") == f"sparkops vLLM serving {NAME} (mp rank {0 if not rank else 1})"


def test_hostile_values_reach_vllm_as_they_are_docker_runtime(tmp_path: Path) -> None:
    files = render(
        tmp_path,
        vllm_serve_runtime="docker",
        vllm_serve_image="nvcr.io/nvidia/vllm:26.01",
        vllm_serve_backend="mp",
        vllm_serve_served_model_name=NAME,
        vllm_serve_extra_args=EXTRA_ARGS,
        vllm_serve_hf_home="/srv/hugging face",
    )
    unit = systemd_syntax.read(files["spark-head.service"], ENV)
    (argv,) = unit.commands["ExecStart"]
    docker = argv[argv.index("/usr/bin/docker") :]
    assert docker[docker.index("--volume") + 1] == "/srv/hugging face:/srv/hugging face:ro"
    entry = docker.index("--entrypoint")
    assert docker[entry : entry + 3] == ["--entrypoint", "vllm", "nvcr.io/nvidia/vllm:26.01"]
    assert docker[entry + 3 :][: len(VLLM_ARGS)] == VLLM_ARGS and docker[-len(EXTRA_ARGS) :] == EXTRA_ARGS
    assert unit.commands["ExecStop"] == [["/usr/bin/docker", "stop", "--time", "120", "sparkops-vllm"]]


@pytest.mark.parametrize(
    ("extra", "variable"),
    [
        ({"vllm_serve_served_model_name": INJECTION}, "vllm_serve_served_model_name"),
        ({"vllm_serve_extra_args": ["--chat-template", INJECTION]}, "vllm_serve_extra_args"),
        ({"vllm_serve_model": "Qwen/Qwen3-8B" + INJECTION}, "vllm_serve_model"),
        ({"vllm_serve_reasoning_parser": "qwen3" + INJECTION}, "vllm_serve_reasoning_parser"),
        ({"vllm_serve_env_file": "/etc/sparkops/vllm.env" + INJECTION}, "vllm_serve_env_file"),
        ({"vllm_serve_venv": "/opt/sparkops/ray" + INJECTION}, "vllm_serve_venv"),
    ],
)
def test_a_value_with_a_line_break_is_refused_naming_its_variable(tmp_path: Path, extra: dict[str, t.Any], variable: str) -> None:
    """The attack: before, the unit was written and systemd ran ``/bin/sh -c id`` as root before vLLM. Now the
    template fails, naming the variable (an Ansible error, no traceback), and no unit is written."""
    out = tmp_path / "out"
    out.mkdir()
    proc = play(tmp_path, inventory(), PLAYBOOK.format(role=ROLE, out=out), extra)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"{variable} must be one line" in said, said[-3000:]
    assert "Traceback" not in said
    assert not list(out.glob("*.service"))
