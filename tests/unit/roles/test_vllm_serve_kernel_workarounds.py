# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_serve role's GB10 workarounds as Ansible renders them: the head's choice (made as the preflight makes it,
with the kernel_workarounds filter) in every node's engine environment and record, the inventory's switches, and an
unknown row refused by the role's settings check before anything changes."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

from ansible_run import play, run_playbook
from vllm_serve_inventory import inventory

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "vllm_serve"
METADATA = {"config": {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}}}
GB10_RECON = {"spark-head": {"gpu": {"compute_caps": ["12.1"]}}, "spark-worker1": {"gpu": {"compute_caps": ["12.1"]}}}

PLAYBOOK = """
- name: Choose on the head as the preflight does
  hosts: spark_head
  gather_facts: false
  tasks:
    - name: Choose the workarounds
      ansible.builtin.set_fact:
        sparkops_kernel_workarounds: >-
          {{{{ metadata | sparkops.inference.kernel_workarounds(recon, vllm_version=version, model=sparkops_model_repo) }}}}
      when: choose | bool

- name: Render what the role writes on each node
  hosts: all
  gather_facts: false
  vars_files:
    - {role}/defaults/main.yml
    - {role}/vars/main.yml
  tasks:
    - name: Check the settings as the role does first
      ansible.builtin.import_tasks: {role}/tasks/settings_check.yml
    - name: Write the engine's environment and the record
      ansible.builtin.copy:
        content: "{{{{ {{'env': __vllm_serve_env, 'record': __vllm_serve_kernel_workarounds}} | to_json }}}}"
        dest: "{out}/{{{{ inventory_hostname }}}}.json"
        mode: "0644"
"""


def render(tmp_path: Path, choose: bool = True, version: str = "0.32.0", **extra: t.Any) -> dict[str, dict[str, t.Any]]:
    out = tmp_path / "out"
    out.mkdir(parents=True)
    variables = {"metadata": METADATA, "recon": GB10_RECON, "version": version, "choose": choose, **extra}
    run_playbook(tmp_path, inventory(), PLAYBOOK.format(role=ROLE, out=out), variables)
    return {path.stem: json.loads(path.read_text()) for path in out.iterdir()}


def test_every_node_gets_the_heads_choice(tmp_path: Path) -> None:
    files = render(tmp_path)
    assert sorted(files) == ["spark-head", "spark-worker1"]
    for rendered in files.values():
        env, record = rendered["env"], rendered["record"]
        assert env["VLLM_DISABLED_KERNELS"] == "CutlassFp8BlockScaledMMKernel"
        assert env["VLLM_USE_DEEP_GEMM"] == "0"
        assert env["HF_HUB_OFFLINE"] == "1"  # the role's own environment is still there
        assert [row["name"] for row in record["applied"]] == ["cutlass_fp8_block_scaled", "deep_gemm_fp8"]
        assert record["note"] == "2 applied, 0 skipped"


def test_vllm_030_has_no_deep_gemm_row(tmp_path: Path) -> None:
    env = render(tmp_path, version="0.30.0")["spark-worker1"]["env"]
    assert env["VLLM_DISABLED_KERNELS"] == "CutlassFp8BlockScaledMMKernel"
    assert "VLLM_USE_DEEP_GEMM" not in env


def test_off_skip_and_the_inventorys_value_win(tmp_path: Path) -> None:
    files = render(tmp_path, vllm_serve_kernel_workarounds_skip=["cutlass_fp8_block_scaled"], vllm_serve_extra_env={"VLLM_USE_DEEP_GEMM": "1"})
    env, record = files["spark-head"]["env"], files["spark-head"]["record"]
    assert "VLLM_DISABLED_KERNELS" not in env and env["VLLM_USE_DEEP_GEMM"] == "1"
    assert sorted(row["because"] for row in record["skipped"]) == [
        "named in vllm_serve_kernel_workarounds_skip",
        "vllm_serve_extra_env sets VLLM_USE_DEEP_GEMM",
    ]
    off = render(tmp_path / "off", vllm_serve_kernel_workarounds=False)
    assert "VLLM_DISABLED_KERNELS" not in off["spark-worker1"]["env"] and off["spark-worker1"]["record"]["applied"] == []


def test_without_the_preflights_choice_none_is_set_and_the_record_says_why(tmp_path: Path) -> None:
    files = render(tmp_path, choose=False)
    assert "VLLM_DISABLED_KERNELS" not in files["spark-head"]["env"]
    assert files["spark-head"]["record"]["note"].startswith("not chosen: the preflight did not read the model's config.json")


def test_an_unknown_row_is_refused_before_anything_changes(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    variables = {"metadata": METADATA, "recon": GB10_RECON, "version": "0.32.0", "choose": True, "vllm_serve_kernel_workarounds_skip": ["deepgemm"]}
    proc = play(tmp_path, inventory(), PLAYBOOK.format(role=ROLE, out=tmp_path / "out"), variables)
    assert proc.returncode != 0
    assert "vllm_serve_kernel_workarounds_skip names deepgemm, not a row of the table (cutlass_fp8_block_scaled, deep_gemm_fp8)" in proc.stdout
    assert not list((tmp_path / "out").iterdir())
