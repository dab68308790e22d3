# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The reclaim path on a real GPU (the lent H200 machine): see, plan, end, prove - with the collection's own code.

Run there from the repository root (python3 with torch; no Ansible needed):

    python3 tests/gpu/reclaim_on_gpu.py

A torch process named like a vLLM engine left running outside any unit (``exec -a VLLM::EngineCore``) holds
``--gib`` of GPU memory. The script reads the GPU with the gpu_info module's code (real nvidia-smi, /proc), plans
with reclaim_plan (leftovers ended), ends it with process_end's code, reads again and judges with reclaim_verdict,
timing how long until the memory is back. It prints one JSON line and exits 1 on any failed expectation.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINK = Path(tempfile.mkdtemp()) / "ansible_collections" / "sparkops"
LINK.mkdir(parents=True)
(LINK / "inference").symlink_to(REPO)
sys.path.insert(0, str(LINK.parent.parent))

# pylint: disable=wrong-import-position
from ansible_collections.sparkops.inference.plugins.module_utils._gpu_info import collect  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._process_end import end_processes  # noqa: E402
from ansible_collections.sparkops.inference.plugins.plugin_utils._reclaim_check import verdict  # noqa: E402
from ansible_collections.sparkops.inference.plugins.plugin_utils._reclaim_plan import Settings, plan  # noqa: E402

HOLDER = (
    "import torch, time; x = torch.empty({gib} * 2**30, dtype=torch.uint8, device='cuda'); x.fill_(1); "
    "torch.cuda.synchronize(); print('holding', flush=True); time.sleep(600)"
)


def run(argv: list[str]) -> tuple[int, str, str]:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def read() -> dict:
    """What the gpu_info module reports, read the way it reads it (no docker on the GPU machine)."""
    return collect(run, "nvidia-smi", Path("/proc"), top_count=3)


def main(gib: int = 20) -> int:
    # With argv[0] renamed, Python cannot find its venv: hand it the venv's site-packages.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(site.getsitepackages())}
    command = f'exec -a VLLM::EngineCore {sys.executable} -c "{HOLDER.format(gib=gib)}"'
    holder = subprocess.Popen(["bash", "-c", command], stdout=subprocess.PIPE, text=True, env=env)
    assert holder.stdout is not None
    ready = holder.stdout.readline().strip() == "holding"
    before = read()
    settings = Settings(end_leftover_processes=True)
    decided = plan(before, {}, settings)
    planned = [p["pid"] for p in decided.processes]
    t0 = time.monotonic()
    ended = end_processes(planned, timeout=15, expect_names={p["pid"]: p["name"] for p in decided.processes})
    # The driver frees a dead process's memory a little after the process has left nvidia-smi's list: poll, as the
    # role's verify step does, until the verdict holds or 30 s pass.
    first = after = read()
    judged = verdict(after, settings, min_available_fraction=0.9)
    while not judged["ok"] and time.monotonic() - t0 < 30:
        time.sleep(0.05)
        after = read()
        judged = verdict(after, settings, min_available_fraction=0.9)
    freed_s = time.monotonic() - t0
    holder.wait(timeout=30)
    report = {
        "holder_ready": ready,
        "before": [{k: p[k] for k in ("pid", "name", "used_mib", "unit", "cgroup")} for p in before["processes"]],
        "before_available_mib": before["available_mib"],
        "unified_memory": before["unified_memory"],
        "planned_pids": planned,
        "refused": decided.refused,
        "ended": ended.ended,
        "first_read_after_end": {"processes": len(first["processes"]), "available_mib": first["available_mib"]},
        "after_processes": after["processes"],
        "after_available_mib": after["available_mib"],
        "seconds_until_free": round(freed_s, 3),
        "verdict": {k: judged[k] for k in ("ok", "problems", "required_mib", "available_mib")},
    }
    print(json.dumps(report))
    expected = (
        ready
        and planned == [holder.pid]
        and not decided.refused
        and before["processes"][0]["used_mib"] >= gib * 1024
        and not after["processes"]
        and judged["ok"]
        and after["available_mib"] - before["available_mib"] >= gib * 1024
    )
    return 0 if expected else 1


if __name__ == "__main__":
    sys.exit(main())
