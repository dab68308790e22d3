# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the lab's stand-ins (tests/lab/standins): nvidia-smi, docker and gpu-holder.

Each stand-in runs as a subprocess, as the lab runs it, against real child processes (gpu-holders with a few MiB),
a temporary docker state folder and, for nvidia-smi, both the real /proc and small fake /proc trees. Expected
nvidia-smi output comes from the real tool: the H200 fixtures next to the module_utils tests, and GB10 output
published by DGX Spark users (see tests/lab/standins/README.md).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

STANDINS = Path(__file__).resolve().parents[2] / "lab" / "standins"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia_smi"
NVIDIA_SMI, DOCKER, GPU_HOLDER = (str(STANDINS / name) for name in ("nvidia-smi", "docker", "gpu-holder"))
GB10_QUERY = "--query-gpu=index,name,memory.total,memory.used,memory.free"
H200 = {"name": "NVIDIA H200", "memory_total_mib": 143771, "unified": False, "pci_bus_id": "00000000:00:06.0"}
H200 |= {"driver_version": "580.159.04", "temperature_c": 38, "power_w": 123}
PS_KEYS = {"Command", "CreatedAt", "ID", "Image", "Labels", "LocalVolumes", "Mounts", "Names", "Networks", "Ports", "RunningFor"}
PS_KEYS |= {"Size", "State", "Status"}


def run(program: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, program, *args], capture_output=True, text=True, timeout=30, env=env, check=False)


def wait_until(predicate, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.05)


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def first_line(proc: subprocess.Popen, timeout: float = 15) -> str:
    """The first line a started process prints, failing (not hanging) when it prints none in time."""
    readable = select.select([proc.stdout], [], [], timeout)[0]
    assert readable, "the process printed nothing"
    return proc.stdout.readline().strip()


def fixture_text(name: str) -> str:
    """A captured output without its trailing ``# rc=N`` line."""
    return (FIXTURES / name).read_text().rsplit("# rc=", 1)[0]


@pytest.fixture
def spawned():
    """Start processes; every one left running is ended (SIGTERM, then SIGKILL) after the test."""
    procs: list[subprocess.Popen] = []

    def start(*argv: str, **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, *argv], **kwargs)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


@pytest.fixture
def holder(spawned):
    """A started gpu-holder, once it says it holds its memory: (process, its one line of output)."""

    def start(mib: int = 8, title: str | None = None) -> tuple[subprocess.Popen, str]:
        proc = spawned(GPU_HOLDER, "--mib", str(mib), *(["--title", title] if title else []), stdout=subprocess.PIPE, text=True)
        return proc, first_line(proc)

    return start


@pytest.fixture
def fake_proc(tmp_path):
    """A fake /proc: add(pid, environ=..., cmdline=..., comm=...) writes one process; the env to use it."""
    root = tmp_path / "proc"
    root.mkdir()
    (root / "self").mkdir()  # non-numeric entries are not processes
    env = {**os.environ, "SPARKOPS_LAB_PROC": str(root), "SPARKOPS_LAB_GPU_CONFIG": str(tmp_path / "none.json")}

    def add(pid: int, environ: list[str] | None = None, cmdline: list[str] = ("python3",), comm: str = "python3") -> None:
        folder = root / str(pid)
        folder.mkdir()
        if environ is None:
            (folder / "environ").mkdir()  # unreadable as a file, as another user's process is
        else:
            (folder / "environ").write_bytes(b"".join(item.encode() + b"\0" for item in environ))
        (folder / "cmdline").write_bytes(b"".join(arg.encode() + b"\0" for arg in cmdline))
        (folder / "comm").write_text(comm + "\n")

    add.env = env
    add.config = tmp_path / "gpu.json"
    return add


def smi(fake, *args: str, config: dict | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(fake.env)
    if config is not None:
        fake.config.write_text(json.dumps(config))
        env["SPARKOPS_LAB_GPU_CONFIG"] = str(fake.config)
    return run(NVIDIA_SMI, *args, env=env)


# ------------------------------------------------------------------------------------------------------ nvidia-smi
def test_gb10_query_gpu_noheader_nounits_reports_memory_as_not_available(fake_proc):
    result = smi(fake_proc, GB10_QUERY, "--format=csv,noheader,nounits")
    assert (result.returncode, result.stdout) == (0, "0, NVIDIA GB10, [N/A], [N/A], [N/A]\n")


def test_gb10_query_gpu_header_keeps_units_in_brackets_and_values_drop_them(fake_proc):
    fields = "--query-gpu=memory.total,memory.used,memory.free,utilization.gpu,power.draw,temperature.gpu"
    header = "memory.total [MiB], memory.used [MiB], memory.free [MiB], utilization.gpu [%], power.draw [W], temperature.gpu\n"
    nounits = smi(fake_proc, fields, "--format=csv,nounits")
    assert nounits.stdout == header + "[N/A], [N/A], [N/A], 0, 11.17, 35\n"
    units = smi(fake_proc, fields, "--format=csv")
    assert units.stdout == header + "[N/A], [N/A], [N/A], 0 %, 11.17 W, 35\n"


def test_gb10_identity_fields_and_list(fake_proc):
    result = smi(fake_proc, "--query-gpu=gpu_name,pci.bus_id,driver_version,compute_cap,count", "--format=csv")
    assert result.stdout == "name, pci.bus_id, driver_version, compute_cap, count\nNVIDIA GB10, 0000000F:01:00.0, 580.95.05, 12.1, 1\n"
    listing = smi(fake_proc, "-L").stdout
    assert re.fullmatch(r"GPU 0: NVIDIA GB10 \(UUID: GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\)\n", listing)
    uuid = smi(fake_proc, "--query-gpu=uuid", "--format=csv,noheader").stdout.strip()
    assert listing == f"GPU 0: NVIDIA GB10 (UUID: {uuid})\n"


def test_query_errors_match_the_real_tool(fake_proc):
    bad_field = smi(fake_proc, "--query-gpu=index,nosuch.field", "--format=csv")
    assert (bad_field.returncode, bad_field.stdout) == (2, fixture_text("h200_bad_field.txt"))
    bad_app_field = smi(fake_proc, "--query-compute-apps=pid,nosuch", "--format=csv")
    assert (bad_app_field.returncode, bad_app_field.stdout) == (2, 'Field "nosuch" is not a valid field to query.\n\n')
    bad_format = smi(fake_proc, "--query-gpu=name", "--format=json")
    assert (bad_format.returncode, bad_format.stdout) == (2, "Format modifier is not recognized.\n")
    bad_option = smi(fake_proc, "--bogus")
    assert (bad_option.returncode, bad_option.stdout) == (255, "ERROR: Option --bogus is not recognized. Please run 'nvidia-smi -h'.\n\n")


def test_query_without_format_prints_csv_with_its_header(fake_proc):
    assert smi(fake_proc, "--query-gpu=name").stdout == "name\nNVIDIA GB10\n"


def test_compute_apps_are_the_marked_processes_named_by_argv0(fake_proc):
    fake_proc(114687, ["HOME=/root", "SPARKOPS_LAB_GPU_MIB=19135"], ["/usr/local/bin/python", "-m", "vllm"])
    fake_proc(200, ["SPARKOPS_LAB_GPU_MIB=64", "SPARKOPS_LAB_GPU_MIB=1"], ["ray::RayWorkerWrapper", ""])
    fake_proc(300, ["SPARKOPS_LAB_GPU_MIB=96"], [], comm="VLLM::Worker")  # empty cmdline: comm names it
    fake_proc(400, ["PATH=/usr/bin"])  # unmarked
    fake_proc(500, ["SPARKOPS_LAB_GPU_MIB=lots"])  # not a number
    fake_proc(600, None)  # environ cannot be read
    result = smi(fake_proc, "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits")
    assert result.stdout == "200, ray::RayWorkerWrapper, 64\n300, VLLM::Worker, 96\n114687, /usr/local/bin/python, 19135\n"
    header = smi(fake_proc, "--query-compute-apps=gpu_uuid,pid,process_name,used_memory", "--format=csv").stdout.splitlines()
    assert header[0] == "gpu_uuid, pid, process_name, used_gpu_memory [MiB]"
    assert re.fullmatch(r"GPU-[0-9a-f-]{36}, 114687, /usr/local/bin/python, 19135 MiB", header[3])


def test_no_compute_apps_prints_the_header_only_or_nothing(fake_proc):
    fields = "--query-compute-apps=pid,process_name,used_memory,gpu_uuid,gpu_bus_id"
    assert smi(fake_proc, fields, "--format=csv").stdout == fixture_text("h200_apps_idle.txt")
    assert smi(fake_proc, fields, "--format=csv,noheader,nounits").stdout == ""


def test_discrete_config_reports_memory_numbers_like_the_h200(fake_proc):
    fake_proc(442, ["SPARKOPS_LAB_GPU_MIB=21090"], ["python3", "-c", "..."])
    fields = "--query-gpu=index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total,memory.used,memory.free"
    result = smi(fake_proc, fields, "--format=csv,noheader,nounits", config={**H200, "compute_cap": "9.0", "uuid": "GPU-ad56e735-2052-d611-0932-0ebd0c155c61"})
    # The real H200 counts 9 MiB more used and 615 MiB less free than its processes hold; the stand-in counts what they hold.
    assert result.stdout == "0, NVIDIA H200, GPU-ad56e735-2052-d611-0932-0ebd0c155c61, 00000000:00:06.0, 580.159.04, 9.0, 143771, 21090, 122681\n"
    apps = smi(fake_proc, "--query-compute-apps=pid,process_name,used_memory", "--format=csv", config=H200).stdout
    assert apps == "pid, process_name, used_gpu_memory [MiB]\n442, python3, 21090 MiB\n"


def test_discrete_table_has_the_h200_layout(fake_proc):
    idle = smi(fake_proc, config={**H200, "power_w": 122}).stdout.splitlines()
    expected = fixture_text("h200_table_idle.txt").splitlines()
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}       ", idle[0])
    assert idle[1:] == expected[1:]
    fake_proc(442, ["SPARKOPS_LAB_GPU_MIB=21090"], ["python3", "-c", "..."])
    busy = smi(fake_proc, config=H200).stdout.splitlines()
    expected = fixture_text("h200_table_busy.txt").splitlines()
    assert busy[9] == expected[9].replace("21099MiB", "21090MiB")  # the real one counts a context's 9 MiB more
    assert busy[1:9] + busy[10:] == expected[1:9] + expected[10:]


def test_gb10_table_reads_not_supported_and_lists_the_processes(fake_proc):
    fake_proc(114687, ["SPARKOPS_LAB_GPU_MIB=19135"], ["/usr/local/bin/python"])
    fake_proc(979, ["SPARKOPS_LAB_GPU_MIB=1634"], ["/opt/conda/envs/some-very-long-environment-name/bin/python3.12"])
    lines = smi(fake_proc).stdout.splitlines()
    assert lines[2] == "| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |"
    assert lines[8] == "|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |"
    assert lines[9] == "| N/A   35C    P0             11W /  N/A  | Not Supported          |      0%      Default |"
    assert lines[10] == "|                                         |                        |                  N/A |"
    # A long argv[0] keeps its end, as the real tool showed it on an H200.
    assert lines[18] == "|    0   N/A  N/A             979      C   ...vironment-name/bin/python3.12       1634MiB |"
    assert lines[19] == "|    0   N/A  N/A          114687      C   /usr/local/bin/python                 19135MiB |"
    assert len(lines) == 21 and all(len(line) == 91 for line in lines[1:] if line)


def test_real_proc_lists_a_holder_by_title_until_it_stops(holder):
    proc = holder(8, "VLLM::EngineCore")[0]
    query = ("--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits")
    assert f"{proc.pid}, VLLM::EngineCore, 8" in run(NVIDIA_SMI, *query).stdout.splitlines()
    proc.terminate()
    assert proc.wait(10) == 0
    assert not any(line.startswith(f"{proc.pid},") for line in run(NVIDIA_SMI, *query).stdout.splitlines())


# ------------------------------------------------------------------------------------------------------ gpu-holder
def test_holder_holds_its_memory_under_its_title_with_the_marker(holder):
    proc, line = holder(16, "VLLM::EngineCore")
    assert line == f"gpu-holder: holding 16 MiB as VLLM::EngineCore (pid {proc.pid})"
    status = Path(f"/proc/{proc.pid}/status").read_text()
    assert int(re.search(r"RssAnon:\s+(\d+) kB", status)[1]) >= 16 * 1024  # every page written
    assert Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[0] == b"VLLM::EngineCore"
    assert Path(f"/proc/{proc.pid}/comm").read_text() == "VLLM::EngineCor\n"  # 15 bytes, as prctl(PR_SET_NAME)
    assert b"SPARKOPS_LAB_GPU_MIB=16" in Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0


def test_holder_without_title_keeps_its_name_and_exits_0_on_sigint(holder):
    proc, line = holder(1)
    argv0 = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    assert argv0 == sys.executable and line == f"gpu-holder: holding 1 MiB as {argv0} (pid {proc.pid})"
    assert b"SPARKOPS_LAB_GPU_MIB=1" in Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 0


def test_holder_refuses_a_negative_size():
    result = run(GPU_HOLDER, "--mib", "-1")
    assert result.returncode == 2 and "--mib must not be negative" in result.stderr


# ---------------------------------------------------------------------------------------------------------- docker
@pytest.fixture
def docker(tmp_path):
    """docker(*args) runs the stand-in on a state folder of its own; every container is removed afterwards."""
    env = {**os.environ, "SPARKOPS_LAB_DOCKER_STATE": str(tmp_path / "docker")}
    env.pop("SPARKOPS_LAB_GPU_MIB", None)

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return run(DOCKER, *args, env=env)

    call.env = env
    call.state = tmp_path / "docker"
    yield call
    ids = call("ps", "-aq", "--no-trunc").stdout.split()
    if ids:
        call("rm", "-f", *ids)
    for record in call.state.glob("*.json"):  # what rm -f could not end
        data = json.loads(record.read_text())
        for pid in (data.get("Pid"), data.get("ShimPid")):
            if pid and not gone(pid):
                os.kill(pid, signal.SIGKILL)


def ps_json(docker, *args: str) -> list[dict]:
    return [json.loads(line) for line in docker("ps", *args, "--format", "{{json .}}").stdout.splitlines()]


def inspect(docker, ref: str) -> dict:
    result = docker("inspect", ref)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)[0]


HOLD = (sys.executable, GPU_HOLDER, "--mib", "8", "--title", "VLLM::EngineCore")


def test_run_detached_then_ps_inspect_and_nvidia_smi(docker):
    flags = ("-d", "--name", "vllm_node", "--gpus=all", "--net", "host", "--ipc", "host", "--shm-size", "1g", "--init", "--restart", "no")
    flags += ("-e", "SPARKOPS_LAB_GPU_MIB=8", "--label", "b=2", "-l", "a=1", "-v", "/models:/models:ro")
    started = docker("run", *flags, "vllm/vllm-openai:v0.11.0", *HOLD)
    cid = started.stdout.strip()
    assert started.returncode == 0 and re.fullmatch(r"[0-9a-f]{64}", cid), started.stderr
    [row] = ps_json(docker)
    assert set(row) == PS_KEYS
    assert (row["ID"], row["Names"], row["Image"], row["State"]) == (cid[:12], "vllm_node", "vllm/vllm-openai:v0.11.0", "running")
    assert (row["Labels"], row["Networks"], row["Mounts"], row["Size"], row["Ports"]) == ("a=1,b=2", "host", "/models", "0B", "")
    assert row["Status"].startswith("Up ") and row["RunningFor"].endswith(" ago") and row["Command"].endswith('…"')
    assert ps_json(docker, "--no-trunc")[0]["ID"] == cid
    data = inspect(docker, "vllm_node")
    pid = data["State"]["Pid"]
    assert (data["Id"], data["Name"], data["State"]["Status"], data["State"]["Running"]) == (cid, "/vllm_node", "running", True)
    assert (data["Config"]["Labels"], data["HostConfig"]["AutoRemove"], data["HostConfig"]["NetworkMode"]) == ({"a": "1", "b": "2"}, False, "host")
    assert "SPARKOPS_LAB_GPU_MIB=8" in data["Config"]["Env"]
    query = ("--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits")
    wait_until(lambda: f"{pid}, VLLM::EngineCore, 8" in run(NVIDIA_SMI, *query).stdout.splitlines())
    assert inspect(docker, cid[:7])["Id"] == cid  # a unique id prefix names it too


def test_ps_lists_running_ones_unless_all_and_filters(docker):
    docker("run", "-d", "--name", "done", "--label", "role=batch", "alpine", "sh", "-c", "exit 3")
    docker("run", "-d", "--name", "web", "--label", "role=serve", "--label", "tier=front", "nginx", "sleep", "300")
    wait_until(lambda: [r["State"] for r in ps_json(docker, "-a", "--filter", "name=done")] == ["exited"])
    assert [r["Names"] for r in ps_json(docker)] == ["web"]
    rows = ps_json(docker, "-a")
    assert [r["Names"] for r in rows] == ["web", "done"]  # newest first
    assert re.fullmatch(r"Exited \(3\) .* ago", rows[1]["Status"])
    assert [r["Names"] for r in ps_json(docker, "-a", "--filter", "label=role=batch")] == ["done"]
    assert [r["Names"] for r in ps_json(docker, "-a", "--filter", "label=role", "--filter", "label=tier")] == ["web"]
    assert [r["Names"] for r in ps_json(docker, "-a", "--filter", "name=^/we")] == ["web"]
    assert [r["Names"] for r in ps_json(docker, "-a", "--filter", "name=^done$")] == ["done"]
    assert [r["Names"] for r in ps_json(docker, "-a", "--filter", "status=exited")] == ["done"]
    assert [r["Names"] for r in ps_json(docker, "-a", "--filter", f"id={rows[1]['ID']}")] == ["done"]
    assert docker("ps", "-a", "-q").stdout.split() == [r["ID"] for r in rows]
    table = docker("ps", "-a").stdout.splitlines()
    # Go's tabwriter as docker sets it up: columns as wide as their widest cell plus 3, and at least 10.
    assert re.fullmatch(r"CONTAINER ID   IMAGE     COMMAND {10}CREATED +STATUS +PORTS     NAMES", table[0])
    assert table[1].startswith(f'{rows[0]["ID"]}   nginx     "sleep 300"      ') and table[1].endswith("             web")
    as_json = [json.loads(line) for line in docker("ps", "--format", "json").stdout.splitlines()]
    assert [{**row, "RunningFor": "", "Status": ""} for row in as_json] == [{**row, "RunningFor": "", "Status": ""} for row in ps_json(docker)]
    assert docker("ps", "--format", '{{.Names}} {{.Label "tier"}}').stdout == "web front\n"
    bad = docker("ps", "--filter", "volume=x")
    assert (bad.returncode, bad.stderr) == (1, "Error response from daemon: invalid filter 'volume'\n")


def test_rm_refuses_a_running_container_then_force_kills_all_of_it(docker, tmp_path):
    child = tmp_path / "child.pid"
    docker("run", "-d", "--name", "stale", "img", "sh", "-c", f"sleep 300 & echo $! > {child}; wait")
    wait_until(child.exists)
    refused = docker("rm", "stale")
    expected = 'Error response from daemon: cannot remove container "stale": container is running: stop the container before removing or force remove\n'
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", expected)
    pid = inspect(docker, "stale")["State"]["Pid"]
    assert not gone(pid)
    removed = docker("rm", "-f", "stale")
    assert (removed.returncode, removed.stdout) == (0, "stale\n")
    assert gone(pid) and gone(int(child.read_text()))  # the container's other processes end with it
    assert docker("ps", "-aq").stdout == ""


def holding(docker, cid: str, timeout: float = 30) -> bool:
    """Whether a detached gpu-holder container printed its ready line (its stop handler is set by then)."""
    end = time.monotonic() + timeout
    log = docker.state / f"{cid}.log"
    while not (log.exists() and "gpu-holder: holding" in log.read_text()):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def test_stop_ends_gracefully_or_kills_after_the_timeout(docker):
    polite = docker("run", "-d", "--name", "polite", "img", *HOLD).stdout.strip()
    assert holding(docker, polite)  # a SIGTERM before the holder's handler is set ends it with 143, as with docker
    docker("run", "-d", "--name", "stubborn", "img", "sh", "-c", "trap '' TERM; exec sleep 300")
    stopped = docker("stop", "polite")
    assert (stopped.returncode, stopped.stdout) == (0, "polite\n")
    assert re.fullmatch(r"Exited \(0\) .*", ps_json(docker, "-a", "--filter", "name=polite")[0]["Status"])
    began = time.monotonic()
    stopped = docker("stop", "-t", "1", "stubborn")
    assert stopped.stdout == "stubborn\n" and time.monotonic() - began >= 1
    data = inspect(docker, "stubborn")["State"]
    assert (data["Status"], data["Running"], data["ExitCode"], data["Pid"]) == ("exited", False, 137, 0)
    assert docker("stop", "stubborn").returncode == 0  # stopping a stopped container is fine
    assert docker("rm", "stubborn", "polite").stdout == "stubborn\npolite\n"


def test_rm_containers_disappear_when_they_end(docker):
    docker("run", "-d", "--rm", "--name", "brief", "img", "sh", "-c", "exit 0")
    wait_until(lambda: docker("ps", "-aq").stdout == "")
    docker("run", "-d", "--rm", "--name", "served", "img", *HOLD)
    assert docker("stop", "served").stdout == "served\n"
    assert docker("ps", "-a", "--format", "{{.Names}}").stdout == ""
    assert list(docker.state.glob("*.json")) == []


def test_attached_run_returns_the_exit_code_and_proxies_signals(docker, spawned):
    attached = docker("run", "--rm", "img", "sh", "-c", "echo hello; exit 3")
    assert (attached.returncode, attached.stdout) == (3, "hello\n")
    assert docker("ps", "-aq").stdout == ""
    cli = spawned(DOCKER, "run", "--rm", "--name", "unit", "-e", "SPARKOPS_LAB_GPU_MIB=8", "img", *HOLD, env=docker.env, stdout=subprocess.PIPE, text=True)
    assert first_line(cli).startswith("gpu-holder: holding 8 MiB as VLLM::EngineCore")  # the container's output
    pid = inspect(docker, "unit")["State"]["Pid"]
    cli.send_signal(signal.SIGTERM)  # as systemd stops a unit whose ExecStart is `docker run`
    assert cli.wait(10) == 0  # the holder's own exit status, after it got the SIGTERM
    assert gone(pid) and docker("ps", "-aq").stdout == ""


def test_a_container_whose_process_is_gone_counts_as_exited(docker):
    docker("run", "-d", "--name", "killed", "img", "sleep", "300")
    docker("run", "-d", "--name", "orphan", "img", "sleep", "300")
    os.kill(inspect(docker, "killed")["State"]["Pid"], signal.SIGKILL)
    wait_until(lambda: inspect(docker, "killed")["State"]["Status"] == "exited")
    assert inspect(docker, "killed")["State"]["ExitCode"] == 137
    record = json.loads(next(p for p in docker.state.glob("*.json") if json.loads(p.read_text())["Name"] == "orphan").read_text())
    os.kill(record["ShimPid"], signal.SIGKILL)  # the monitor first: nobody records the exit
    wait_until(lambda: gone(record["ShimPid"]))
    os.kill(record["Pid"], signal.SIGKILL)
    wait_until(lambda: gone(record["Pid"]))
    assert re.fullmatch(r"Exited \(255\) .*", ps_json(docker, "-a", "--filter", "name=orphan")[0]["Status"])


def test_under_systemd_a_container_gets_its_scope(docker, tmp_path):
    """systemd-run and systemctl are fakes here that log their arguments (systemd-run then execs the command)."""
    bin_dir, log = tmp_path / "bin", tmp_path / "systemd.log"
    bin_dir.mkdir()
    (bin_dir / "systemd-run").write_text(f'#!/bin/sh\necho "systemd-run $*" >> {log}\nwhile [ "$1" != -- ]; do shift; done\nshift\nexec "$@"\n')
    (bin_dir / "systemctl").write_text(f'#!/bin/sh\necho "systemctl $*" >> {log}\n')
    for fake in bin_dir.iterdir():
        fake.chmod(0o755)
    docker.env.update(PATH=f"{bin_dir}:{os.environ['PATH']}", SPARKOPS_LAB_SYSTEMD_RUNTIME=str(tmp_path))
    cid = docker("run", "-d", "--name", "scoped", "img", "sleep", "300").stdout.strip()
    assert log.read_text() == f"systemd-run --scope --quiet --unit=docker-{cid} --slice=system.slice -- sleep 300\n"
    pid = inspect(docker, "scoped")["State"]["Pid"]
    assert Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x00300\x00"  # the scope's pid is the command's
    assert docker("rm", "-f", "scoped").returncode == 0 and gone(pid)
    assert f"systemctl kill --signal=SIGKILL docker-{cid}.scope\n" in log.read_text()


def test_errors_read_as_dockers(docker):
    first = docker("run", "-d", "--name", "twin", "img", "sleep", "300").stdout.strip()
    conflict = docker("run", "-d", "--name", "twin", "img", "sleep", "300")
    assert conflict.returncode == 125
    assert conflict.stderr == (
        f'docker: Error response from daemon: Conflict. The container name "/twin" is already in use by container "{first}". '
        "You have to remove (or rename) that container to be able to reuse that name.\n\nRun 'docker run --help' for more information\n"
    )
    unknown_flag = docker("run", "--foo", "img")
    assert (unknown_flag.returncode, unknown_flag.stderr) == (125, "unknown flag: --foo\nSee 'docker run --help'.\n")
    unknown_short = docker("run", "-dx", "img")
    assert (unknown_short.returncode, unknown_short.stderr) == (125, "unknown shorthand flag: 'x' in -dx\nSee 'docker run --help'.\n")
    no_image = docker("run", "-d", "--rm")
    assert (no_image.returncode, no_image.stderr.splitlines()[0]) == (1, "docker: 'docker run' requires at least 1 argument")
    missing_value = docker("run", "--name")
    assert (missing_value.returncode, missing_value.stderr) == (125, "flag needs an argument: --name\nSee 'docker run --help'.\n")
    no_exec = docker("run", "--rm", "img", "no-such-command")
    assert no_exec.returncode == 127 and 'exec: "no-such-command": executable file not found in $PATH' in no_exec.stderr
    inspected = docker("inspect", "nosuch")
    assert (inspected.returncode, inspected.stdout, inspected.stderr) == (1, "[]\n", "Error: No such object: nosuch\n")
    container_inspect = docker("container", "inspect", "nosuch")
    assert container_inspect.stderr == "Error response from daemon: No such container: nosuch\n"
    for args, status in ((("rm", "nosuch"), 1), (("stop", "nosuch"), 1), (("rm", "-f", "nosuch"), 0)):
        result = docker(*args)
        assert (result.returncode, result.stdout, result.stderr) == (status, "", "Error response from daemon: No such container: nosuch\n")
    assert docker("inspect", "--format", "{{.State.Pid}}", "twin").returncode == 125
    command = docker("frobnicate")
    assert (command.returncode, command.stderr) == (1, "docker: unknown command: docker frobnicate\n\nRun 'docker --help' for more information\n")


def test_version(docker):
    assert docker("--version").stdout == "Docker version 28.5.1, build e180ab8\n"
    assert docker("version", "--format", "{{.Server.Version}}").stdout == "28.5.1\n"
    assert docker("version", "--format", "{{.Client.ApiVersion}}").stdout == "1.51\n"
