# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ray_cluster role's unit and client environment as Ansible renders them (its defaults and vars, its templates,
the task of tasks/main.yml that records each node's address), for a head and two workers, read back as systemd reads
them (tests/unit/systemd_syntax.py: ``systemd-analyze`` where it is installed, else its model).

- The fence: ``IPAddressAllow=`` is localhost and each node's fabric address (``/32``), not the fabric subnet, so a
  host of the fabric that is not a node cannot reach Ray.
- Ray's temp dir: ``--temp-dir`` in a root-only folder on every node, the cleanup of old sessions there, and
  ``RAY_TMPDIR`` for the clients (Ray 2.60: ``_common/utils.py:327-349``, a client looks for the cluster in
  ``$RAY_TMPDIR/ray``), instead of ``/tmp/ray`` that another local user could make first.
- Values: every value reaches the unit as systemd reads it back, and a line break is refused naming its variable
  (before, ``ray start``'s arguments were joined unquoted: a node address with a line break added a directive).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import typing as t
from pathlib import Path

import pytest
import systemd_syntax
import yaml
from ansible_run import NODES, play, render_files, task_named, three_nodes

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "ray_cluster"
SUBNET = "192.168.100.0/24"
NOT_A_NODE = "192.168.100.99"  # another host of the fabric
TEMP_DIR = "/var/lib/sparkops/tmp/ray"
ENV = {"HOME": "/root", "X": "expanded"}
INJECTION = "\nExecStartPre=/bin/sh -c id"


def role_task(tasks_file: str, name: str) -> dict[str, t.Any]:
    """The task of the role's ``tasks_file`` called ``name``, as written."""
    return task_named(ROLE / "tasks" / tasks_file, name)


def record_address_task() -> dict[str, t.Any]:
    """tasks/main.yml's task that records each node's address (the fence reads it from every node's hostvars)."""
    (task,) = [task for task in yaml.safe_load((ROLE / "tasks" / "main.yml").read_text()) if "ansible.builtin.set_fact" in task]
    assert "ray_cluster_node_address" in task["ansible.builtin.set_fact"], task
    return dict(task)


def inventory(backend: str | None = None, **hostvars: dict[str, t.Any]) -> dict[str, t.Any]:
    """The head and both workers; ``hostvars`` by host (``-`` written ``_``). The role's defaults are the group's
    variables, so that a host's own (ray_cluster_node_ip) wins as over a role's defaults. ``backend``: the inventory's
    vllm_serve_backend (the plan's backend; unset: mp, with which the role forms no Ray cluster)."""
    group_vars = {"sparkops_fabric_subnet": SUBNET, "sparkops_gpus_per_node": 1}
    return three_nodes(ROLE, group_vars if backend is None else {**group_vars, "vllm_serve_backend": backend}, **hostvars)


def render_play(out: Path, hosts: str = "all") -> str:
    plays = [
        {
            "name": "Render the ray_cluster unit and client environment for each node",
            "hosts": hosts,
            "gather_facts": False,
            "vars_files": [str(ROLE / "vars" / "main.yml")],
            "tasks": [
                record_address_task(),
                {
                    "name": "Render the unit",
                    "ansible.builtin.template": {
                        "src": str(ROLE / "templates" / "sparkops-ray.service.j2"),
                        "dest": f"{out}/{{{{ inventory_hostname }}}}.service",
                        "mode": "0644",
                    },
                },
                {
                    "name": "Render the client environment",
                    "ansible.builtin.template": {
                        "src": str(ROLE / "templates" / "ray.env.j2"),
                        "dest": f"{out}/{{{{ inventory_hostname }}}}.env",
                        "mode": "0644",
                    },
                },
            ],
        }
    ]
    return yaml.safe_dump(plays, sort_keys=False)


def render(tmp_path: Path, hosts: str = "all", hostvars: dict[str, dict[str, t.Any]] | None = None, **extra: t.Any) -> dict[str, str]:
    """Render for the head and both workers (or the play's ``hosts``); the files written, by name."""
    return render_files(tmp_path, inventory(**(hostvars or {})), lambda out: render_play(out, hosts), extra)


def refused(tmp_path: Path, **extra: t.Any) -> str:
    """Render, expecting the play to fail where the value is used (the head's unit has no head address: written)
    and every unit written to run nothing else; what it said."""
    out = tmp_path / "out"
    out.mkdir()
    proc = play(tmp_path, inventory(), render_play(out), extra)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    for path in out.glob("*.service"):
        commands = systemd_syntax.read(path.read_text(), ENV).commands
        assert ["/bin/sh", "-c", "id"] not in commands.get("ExecStartPre", []), path.name
    return said


def start_args(node_ip: str, head: bool, **extra: t.Any) -> list[str]:
    args = ["--block"]
    args += ["--head", "--port=6379"] if head else ["--address=192.168.100.10:6379"]
    args += [f"--node-ip-address={node_ip}", f"--temp-dir={TEMP_DIR}", "--num-gpus=1", "--object-store-memory=1073741824", "--disable-usage-stats"]
    args += ["--include-dashboard=false"] if head else []
    return ["/opt/sparkops/ray/bin/ray", "start", *args, *extra.get("extra_args", [])]


# ----------------------------------------------------------------------------------------------------------- fence
def test_the_fence_admits_localhost_and_the_nodes_only(tmp_path: Path) -> None:
    files = render(tmp_path)
    assert sorted(files) == [f"{host}.{kind}" for host in NODES for kind in ("env", "service")]
    expected = sorted(["127.0.0.0/8", "::1/128", *(f"{ip}/32" for ip in NODES.values())])
    for host in NODES:
        text = files[f"{host}.service"]
        unit = systemd_syntax.read(text, ENV)
        assert unit.ip_address_allow() == expected, host
        assert sorted(unit.values["IPAddressDeny"]) in (["0.0.0.0/0", "::/0"], ["any"]), host
        allowed = [ipaddress.ip_network(entry) for entry in unit.ip_address_allow()]
        assert not any(ipaddress.ip_address(NOT_A_NODE) in network for network in allowed), host
        assert SUBNET not in text and "192.168.100.0" not in text, host


def test_extra_clients_and_every_nodes_own_address(tmp_path: Path) -> None:
    """A node whose inventory sets ray_cluster_node_ip is admitted at that address on every node;
    ray_cluster_allowed_addresses adds clients that are not nodes."""
    files = render(
        tmp_path,
        hostvars={"spark_worker2": {"ray_cluster_node_ip": "192.168.100.22"}},
        ray_cluster_allowed_addresses=["10.9.0.0/24", "192.168.100.50"],
    )
    expected = sorted(["127.0.0.0/8", "::1/128", "192.168.100.10/32", "192.168.100.11/32", "192.168.100.22/32", "10.9.0.0/24", "192.168.100.50/32"])
    for host in NODES:
        assert systemd_syntax.read(files[f"{host}.service"], ENV).ip_address_allow() == expected, host
    worker2 = systemd_syntax.read(files["spark-worker2.service"], ENV).commands["ExecStart"][0]
    assert "--node-ip-address=192.168.100.22" in worker2


def test_a_play_on_one_node_fences_the_same(tmp_path: Path) -> None:
    """A run limited to one worker: the other nodes are not in the play (no recorded address); their inventory's."""
    files = render(tmp_path, hosts="spark-worker1", hostvars={"spark_worker2": {"ray_cluster_node_ip": "192.168.100.22"}})
    assert sorted(files) == ["spark-worker1.env", "spark-worker1.service"]
    expected = sorted(["127.0.0.0/8", "::1/128", "192.168.100.10/32", "192.168.100.11/32", "192.168.100.22/32"])
    assert systemd_syntax.read(files["spark-worker1.service"], ENV).ip_address_allow() == expected


def test_no_fence_when_turned_off(tmp_path: Path) -> None:
    unit = systemd_syntax.read(render(tmp_path, ray_cluster_restrict_to_fabric=False)["spark-head.service"], ENV)
    assert "IPAddressAllow" not in unit.values and "IPAddressDeny" not in unit.values


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"ray_cluster_allowed_addresses": ["any"]}, "ray_cluster_allowed_addresses must be an IP address or network, got 'any'"),
        ({"ray_cluster_allowed_addresses": ["0.0.0.0/0"]}, "ray_cluster_allowed_addresses must not be the unspecified address"),
        ({"ray_cluster_allowed_addresses": ["16.0.0.0/4"]}, "wider than /8"),
    ],
)
def test_an_allowed_address_that_opens_the_fence_is_refused(tmp_path: Path, extra: dict[str, t.Any], message: str) -> None:
    assert message in refused(tmp_path, **extra)


# -------------------------------------------------------------------------------------------------------- temp dir
def test_ray_runs_in_its_root_only_temp_dir_on_every_node(tmp_path: Path) -> None:
    files = render(tmp_path)
    for host, ip in NODES.items():
        text = files[f"{host}.service"]
        unit = systemd_syntax.read(text, ENV)
        assert unit.commands["ExecStart"] == [start_args(ip, head=host == "spark-head")], host
        cleanup = ["/bin/sh", "-c", 'rm -rf -- "$1"/session_*', "sparkops-ray-cleanup", TEMP_DIR]
        assert unit.commands["ExecStartPre"][-1] == cleanup, host
        assert not any(word.startswith("/tmp/ray") or " /tmp/ray" in word for argv in unit.commands["ExecStartPre"] for word in argv), host
        client = dict(line.split("=", 1) for line in files[f"{host}.env"].splitlines() if not line.startswith("#"))
        # A client (the vllm_serve unit, an operator sourcing ray.env) looks for the cluster where Ray writes it.
        assert os.path.join(client["RAY_TMPDIR"], "ray") == TEMP_DIR, host
        assert client["RAY_AUTH_MODE"] == "token" and client["RAY_AUTH_TOKEN_PATH"] == "/etc/sparkops/private/ray-auth-token"


def test_the_client_environment_is_written_as_before(tmp_path: Path) -> None:
    """ray.env goes through the env_file filter now: the same lines for these values, and RAY_TMPDIR."""
    assert render(tmp_path)["spark-head.env"].splitlines()[-3:] == [
        "RAY_AUTH_MODE=token",
        "RAY_AUTH_TOKEN_PATH=/etc/sparkops/private/ray-auth-token",
        "RAY_TMPDIR=/var/lib/sparkops/tmp",
    ]


def test_the_longest_socket_ray_makes_in_the_temp_dir_fits() -> None:
    """Ray 2.60 refuses an AF_UNIX path over 107 bytes (_private/utils.py:1750-1763); its longest is the dashboard's
    socket of a session named with a 26-character date and a pid of up to 7 digits (pid_max is at most 2**22)."""
    limit = int(yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__ray_cluster_temp_dir_max_bytes"])
    for folder in ("/var/lib/sparkops/tmp", "/" + "x" * (limit - 1)):
        socket_path = f"{folder}/ray/session_2026-11-30_09-12-03_448211_4194304/sockets/dash_TaskEventsHead"
        assert len(socket_path.encode()) <= 107, socket_path
    assert len(f"/{'x' * limit}/ray/session_2026-11-30_09-12-03_448211_4194304/sockets/dash_TaskEventsHead") > 107


def test_the_cleanup_removes_the_sessions_there_only(tmp_path: Path) -> None:
    """The cleanup as systemd runs it, in a temp dir of the test's (whose name holds a space)."""
    private = tmp_path / "the private"
    files = render(tmp_path, ray_cluster_temp_dir=str(private))
    cleanup = systemd_syntax.read(files["spark-head.service"], ENV).commands["ExecStartPre"][-1]
    ray_tmp = private / "ray"
    for name in ("session_2026-01-01_00-00-00_000000_1", "session_latest", "keep"):
        (ray_tmp / name / "sockets").mkdir(parents=True)
    subprocess.run(cleanup, check=True)
    assert sorted(path.name for path in ray_tmp.iterdir()) == ["keep"]


def test_a_workers_wait_for_the_head_runs_as_written(tmp_path: Path) -> None:
    """The worker's wait for the GCS as systemd runs it: it returns once the port answers, and fails after the wait
    naming the address; the address is an argument of the script, never part of it (a hostile value runs nothing)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        files = render(tmp_path, ray_cluster_head_ip="127.0.0.1", ray_cluster_port=port, ray_cluster_head_wait_s=3)
        wait = systemd_syntax.read(files["spark-worker1.service"], ENV).commands["ExecStartPre"][0]
        assert wait[:2] == ["/bin/bash", "-c"] and wait[3:] == ["sparkops-ray-wait", "127.0.0.1", str(port), "3"]
        assert subprocess.run(wait, check=False, timeout=30).returncode == 0
    proc = subprocess.run(wait[:5] + [str(port), "1"], capture_output=True, text=True, check=False, timeout=30)
    assert proc.returncode == 1 and proc.stderr.strip() == f"Ray GCS 127.0.0.1:{port} not reachable after 1s"


def test_a_hostile_head_address_runs_nothing_in_the_wait(tmp_path: Path) -> None:
    """Before, the address was pasted into the script (run as root): this one closed the subshell and ran a command."""
    pwned = tmp_path / "pwned"
    files = render(tmp_path, ray_cluster_head_ip=f"127.0.0.1/1); touch {pwned}; (true", ray_cluster_head_wait_s=1)
    wait = systemd_syntax.read(files["spark-worker1.service"], ENV).commands["ExecStartPre"][0]
    subprocess.run(wait, capture_output=True, check=False, timeout=30)
    assert not pwned.exists()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("/var/lib/sparkops/tmp", None),
        ("/var/lib/ray", None),
        ("/" + "x" * 10 + "/" + "y" * 10 + "/" + "z" * 9, None),  # 32 bytes
        ("/" + "x" * 10 + "/" + "y" * 10 + "/" + "z" * 10, "at most 32 bytes"),
        ("/tmp", "at least three levels"),
        ("/var/tmp", "at least three levels"),
        ("/var/lib/../../tmp", "no . or .. level"),
        ("var/lib/sparkops", "an absolute path"),
        ("/var/lib/spark ops", "letters, digits and ._-"),
        ("/var/lib/sparkops\n", "letters, digits"),
    ],
)
def test_the_temp_dirs_folder_is_checked_before_it_is_made_root_only(tmp_path: Path, value: str, problem: str | None) -> None:
    """units.yml checks ray_cluster_temp_dir (the role makes it 0700, root): never a shared folder, and short enough
    for Ray's sockets."""
    check = role_task("units.yml", "units | Check the folder of Ray's temp dir (the role makes it root-only)")
    playbook = yaml.safe_dump(
        [
            {
                "name": "Check",
                "hosts": "spark-head",
                "gather_facts": False,
                "vars_files": [str(ROLE / "vars" / "main.yml")],
                "tasks": [check],
            }
        ]
    )
    proc = play(tmp_path, inventory(), playbook, {"ray_cluster_temp_dir": value})
    said = proc.stdout + proc.stderr
    if problem is None:
        assert proc.returncode == 0, said[-3000:]
    else:
        assert proc.returncode != 0 and "ray_cluster_temp_dir must be a folder of its own" in said and problem in said, said[-3000:]


# ---------------------------------------------------------------------------------------------------------- values
def test_hostile_extra_args_reach_ray_as_they_are(tmp_path: Path) -> None:
    """Before, ``ray start``'s arguments were joined with spaces, unquoted: ``$HOME`` was expanded, a space split an
    argument, ``%h`` was a specifier."""
    extra_args = ["--labels", '{"zone": "rack 1"}', "--x=%h", "$HOME", "${X}", "a\\nb", "back\\\\slash", "it's", "100%%", ""]
    files = render(tmp_path, ray_cluster_extra_args=extra_args)
    for host, ip in NODES.items():
        unit = systemd_syntax.read(files[f"{host}.service"], ENV)
        assert unit.commands["ExecStart"] == [start_args(ip, head=host == "spark-head", extra_args=extra_args)], host
        assert unit.value("Description") == f"sparkops Ray {'head' if host == 'spark-head' else 'worker'} on {ip}"
        assert unit.values["Environment"][:2] == ["RAY_memory_monitor_refresh_ms=0", "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=2"]


@pytest.mark.parametrize(
    ("extra", "variable"),
    [
        ({"ray_cluster_node_ip": "192.168.100.10" + INJECTION}, "ray_cluster_node_ip"),
        ({"ray_cluster_head_ip": "192.168.100.10" + INJECTION}, "ray_cluster_head_ip"),
        ({"ray_cluster_extra_args": ["--x", "y" + INJECTION]}, "ray_cluster_extra_args"),
        ({"ray_cluster_venv": "/opt/sparkops/ray" + INJECTION}, "ray_cluster_venv"),
        ({"ray_cluster_env_file": "/etc/sparkops/fabric.env" + INJECTION}, "ray_cluster_env_file"),
        ({"ray_cluster_temp_dir": "/var/lib/sparkops/tmp" + INJECTION}, "ray_cluster_temp_dir"),
        ({"ray_cluster_num_gpus": "1" + INJECTION}, "ray_cluster_num_gpus"),
    ],
)
def test_a_value_with_a_line_break_is_refused_naming_its_variable(tmp_path: Path, extra: dict[str, t.Any], variable: str) -> None:
    """The attack: a line break and a directive that root runs before Ray. Refused, naming the variable, no unit
    written."""
    said = refused(tmp_path, **extra)
    assert f"{variable} must be one line" in said, said[-3000:]


def test_the_old_unit_ran_the_injected_directive() -> None:
    """What the unquoted ``join(' ')`` of ``ray start``'s arguments let through (the test above refuses it): the node
    address's line break made a directive of its own, a command root runs before Ray."""
    old = " ".join(["/opt/sparkops/ray/bin/ray", "start", "--block", f"--node-ip-address=192.168.100.10{INJECTION}\n#", "--num-gpus=1"])
    unit = systemd_syntax.read(f"[Unit]\nDescription=t\n\n[Service]\nType=simple\nExecStart={old}\n", ENV)
    assert unit.commands["ExecStartPre"] == [["/bin/sh", "-c", "id"]]


ROLE_PLAY = "- name: The ray_cluster role\n  hosts: spark-head\n  gather_facts: false\n  roles:\n    - sparkops.inference.ray_cluster\n"


@pytest.mark.parametrize("variable", ["ray_cluster_node_ip", "ray_cluster_head_ip"])
def test_an_address_that_is_not_ipv4_fails_the_role_first_naming_its_variable(tmp_path: Path, variable: str) -> None:
    """With the Ray backend, the role's first task checks each address on its own (one condition each), naming the one
    that is wrong."""
    proc = play(tmp_path, inventory(backend="ray"), ROLE_PLAY, {variable: "192.168.100.300"})
    assert proc.returncode != 0
    assert f'host spark-head: {variable} must be an IPv4 address, got "192.168.100.300"' in proc.stdout, proc.stdout[-3000:]
    assert "install_venv |" not in proc.stdout  # nothing after it ran


# ------------------------------------------------------------------------------------------------------ mp backend
RAY_UNIT_FILES = [Path("/etc/systemd/system") / unit for unit in ("sparkops-ray-head.service", "sparkops-ray-worker.service")]


def mp_run(tmp_path: Path, **extra: t.Any) -> tuple[subprocess.CompletedProcess[str], dict[str, Path]]:
    """The whole role on the head, the backend left to its default (mp), in check mode (the unit paths are systemd's:
    a real run on a machine with Ray's units would stop them); Ray's token, client environment and temp dir, and the
    fabric environment the role requires with Ray, all in ``tmp_path`` where nothing is; those paths, by variable."""
    assert not any(path.exists() for path in RAY_UNIT_FILES), "this test needs a machine without Ray's units"
    paths = {
        name: tmp_path / "absent" / leaf
        for name, leaf in (
            ("ray_cluster_auth_token_file", "ray-auth-token"),
            ("ray_cluster_client_env_file", "ray.env"),
            ("ray_cluster_temp_dir", "tmp"),
            ("ray_cluster_env_file", "fabric.env"),
        )
    }
    check_mode_play = ROLE_PLAY.replace("  gather_facts: false\n", "  gather_facts: false\n  check_mode: true\n")
    proc = play(tmp_path, inventory(), check_mode_play, {**{name: str(path) for name, path in paths.items()}, **extra})
    return proc, paths


def ran_tasks(stdout: str) -> list[str]:
    """The names of the tasks a host ran or failed (a result line other than skipping under their banner)."""
    ran: list[str] = []
    task = ""
    for line in stdout.splitlines():
        if line.startswith("TASK ["):
            task = line
        elif task and line.startswith(("ok:", "changed:", "failed:", "fatal:")) and task not in ran:
            ran.append(task)
    return ran


def test_with_the_default_backend_the_role_changes_nothing_on_a_node_without_ray_and_ends(tmp_path: Path) -> None:
    """mp, the default: the role only removes what a Ray deploy left (here nothing) and ends before its checks and
    requirements: no fabric environment is needed, no address checked, nothing installed."""
    proc, paths = mp_run(tmp_path)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said[-3000:]
    assert "host spark-head: no Ray cluster, the backend being mp (vllm_serve_backend); no Ray unit here" in proc.stdout, said[-3000:]
    recap = next(line for line in proc.stdout.splitlines() if line.startswith("spark-head "))
    assert " changed=0 " in recap and " failed=0 " in recap, recap
    # Every task of the Ray path is skipped on the host: none ran (ok, changed) or failed.
    ran = ran_tasks(proc.stdout)
    for task in ("Check the node's and the head's Ray addresses", "install_venv |", "units | Require the fabric environment", "auth |"):
        assert not [name for name in ran if task in name], (task, ran)
    assert any("remove_cluster | Look for the Ray units" in name for name in ran), ran
    assert not any(path.exists() for path in paths.values())


def test_rays_dashboard_with_the_default_backend_fails_naming_both_variables_before_anything_is_removed(tmp_path: Path) -> None:
    proc = mp_run(tmp_path, ray_cluster_dashboard=True)[0]
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0, said[-3000:]
    assert "host spark-head: ray_cluster_dashboard is true but vllm_serve_backend is mp, which runs no Ray cluster" in said, said[-3000:]
    assert "remove_cluster |" not in said  # refused first
