# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/preflight.yml chooses the GB10 workarounds from facts: the head's GPU compute capability, read by
node_recon from nvidia-smi (the lab's stand-in on PATH: a GB10, 12.1, or the H200 of the lent GPU machine, 9.0), and
the model's config.json, read by model_metadata from a real hub cache on this machine; and it warns, before anything
starts, about a quantization the table does not know.

Runs ansible-playbook against this machine (local connection, nothing is changed): the preflight, then a play that
writes the head's choice to a file."""

from __future__ import annotations

import ipaddress
import json
import os
import typing as t
from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.tests.unit.plugins.module_utils.hf_cache_factory import build_cache, model_files
from preflight_run import PREFLIGHT, REPO, local_ipv4, play_head, write_inventory

STANDIN = REPO / "tests" / "lab" / "standins" / "nvidia-smi"
REPO_ID = "acme/tiny-fp8"
SHAPE = {
    "architectures": ["TinyLlmForCausalLM"],
    "num_hidden_layers": 3,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 4,
    "hidden_size": 8,
    "max_position_embeddings": 512,
}
BLOCK_FP8 = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4"}

PLAYBOOK = """
- name: The preflight
  ansible.builtin.import_playbook: {preflight}

- name: Write the head's choice
  hosts: spark_head
  gather_facts: false
  tasks:
    - name: Write it
      ansible.builtin.copy:
        content: "{{{{ sparkops_kernel_workarounds | default(none) | to_json }}}}"
        dest: "{out}"
        mode: "0644"
"""


def preflight(tmp_path: Path, quantization: dict[str, t.Any] | None, gpu: dict[str, t.Any] | None = None, *args: str) -> tuple[t.Any, str]:
    """Run the preflight with the model's config holding ``quantization`` on a head whose nvidia-smi reports ``gpu``
    (the stand-in's GB10 when None); the head's choice and the run's output."""
    files = model_files(tmp_path / "staging", shards=1)
    files["config.json"] = json.dumps({**SHAPE, **({"quantization_config": quantization} if quantization else {})}).encode()
    cache = build_cache(tmp_path / "cache", repo_id=REPO_ID, files=files)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").symlink_to(STANDIN)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SPARKOPS_LAB_PROC": str(tmp_path / "no-proc")}
    (tmp_path / "no-proc").mkdir()
    if gpu is not None:
        (tmp_path / "gpu.json").write_text(json.dumps(gpu))
        env["SPARKOPS_LAB_GPU_CONFIG"] = str(tmp_path / "gpu.json")
    head = ipaddress.IPv4Address(local_ipv4())
    subnet = ipaddress.IPv4Network(f"{head}/24", strict=False)
    worker = next(host for host in subnet.hosts() if host != head)
    inventory = tmp_path / "hosts.yml"
    write_inventory(inventory, subnet, {"sparkops_fabric_ip": str(head)}, {"sparkops_fabric_ip": str(worker)})
    model = ["-e", f"sparkops_model_repo={REPO_ID}", "-e", "sparkops_model_fit_check=true", "-e", f"model_sync_cache_dir={cache.cache_dir}"]
    out = tmp_path / "choice.json"
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK.format(preflight=PREFLIGHT, out=out))
    proc = play_head(inventory, playbook, *model, *args, env=env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return json.loads(out.read_text()), proc.stdout


def test_block_fp8_on_a_gb10_gets_both_rows_with_vllm_032(tmp_path: Path) -> None:
    choice = preflight(tmp_path, BLOCK_FP8, None, "-e", "vllm_serve_version=0.32.0")[0]
    assert choice["family_hosts"] == ["spark-head"]
    assert choice["quantization"] == {"quant_method": "fp8", "kind": "block-scaled FP8", "config_key": "quantization_config"}
    assert [row["name"] for row in choice["rows"]] == ["cutlass_fp8_block_scaled", "deep_gemm_fp8"]
    assert choice["warnings"] == []


def test_the_same_model_on_an_h200_gets_nothing(tmp_path: Path) -> None:
    h200 = {"name": "NVIDIA H200", "memory_total_mib": 143771, "unified": False, "compute_cap": "9.0"}
    choice = preflight(tmp_path, BLOCK_FP8, h200)[0]
    assert (choice["rows"], choice["family_hosts"], choice["warnings"]) == ([], [], [])


def test_an_unknown_quantization_on_a_gb10_is_warned_about_before_anything_starts(tmp_path: Path) -> None:
    choice, stdout = preflight(tmp_path, NVFP4)
    assert choice["rows"] == []
    shown = stdout.split("TASK [Preflight | Show what was not checked]", 1)[1].split("TASK [", 1)[0]
    assert f"{REPO_ID}: quant_method modelopt on compute capability 12.1 (spark-head) has no known workaround" in shown


def test_a_model_that_is_not_quantized_gets_nothing(tmp_path: Path) -> None:
    choice = preflight(tmp_path, None)[0]
    assert choice["quantization"]["quant_method"] is None and choice["rows"] == []


def test_without_the_fit_check_nothing_is_chosen(tmp_path: Path) -> None:
    choice = preflight(tmp_path, BLOCK_FP8, None, "-e", "sparkops_model_fit_check=false")[0]
    assert choice is None


@pytest.fixture(autouse=True)
def _standin_runs() -> None:
    if not STANDIN.exists():
        pytest.fail(f"{STANDIN} is missing")
