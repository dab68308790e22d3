# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/preflight.yml counts speculative decoding's draft model (vllm_serve_speculative's model, issue 35) in the
fit: it reads the draft model's metadata as the model's, from a real hub cache on this machine, and passes it to the
model_fit filter; in report-only mode (playbooks/recon.yml) a draft model it cannot read is a problem naming it.

Runs ansible-playbook against this machine (local connection, nothing is changed): the preflight, then a play that
writes the head's verdict to a file."""

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
REPO_ID = "acme/tiny"
DRAFT_ID = "acme/tiny-drafter"
SHAPE = {"architectures": ["TinyLlmForCausalLM"], "num_hidden_layers": 3, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 4, "hidden_size": 8}
DRAFT_SHAPE = {**SHAPE, "num_hidden_layers": 1, "max_position_embeddings": 512}

PLAYBOOK = """
- name: The preflight
  ansible.builtin.import_playbook: {preflight}

- name: Write the head's verdict
  hosts: spark_head
  gather_facts: false
  tasks:
    - name: Write it
      ansible.builtin.copy:
        content: "{{{{ sparkops_model_fit | default(none) | to_json }}}}"
        dest: "{out}"
        mode: "0644"
"""


def preflight(tmp_path: Path, speculative: dict[str, t.Any], *, draft_cached: bool = True, report_only: bool = False) -> t.Any:
    """Run the preflight with the model (and the draft model when ``draft_cached``) in the head's cache and
    ``vllm_serve_speculative`` set to ``speculative``; the head's fit verdict."""
    files = model_files(tmp_path / "staging", shards=1)
    files["config.json"] = json.dumps({**SHAPE, "max_position_embeddings": 512}).encode()
    cache = build_cache(tmp_path / "cache", repo_id=REPO_ID, files=files)
    if draft_cached:
        draft_files = model_files(tmp_path / "draft-staging", shards=1, seed=1)
        draft_files["config.json"] = json.dumps(DRAFT_SHAPE).encode()
        assert build_cache(tmp_path / "cache", repo_id=DRAFT_ID, files=draft_files).cache_dir == cache.cache_dir
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").symlink_to(STANDIN)
    (tmp_path / "no-proc").mkdir()
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SPARKOPS_LAB_PROC": str(tmp_path / "no-proc")}
    head = ipaddress.IPv4Address(local_ipv4())
    subnet = ipaddress.IPv4Network(f"{head}/24", strict=False)
    worker = next(host for host in subnet.hosts() if host != head)
    inventory = tmp_path / "hosts.yml"
    write_inventory(inventory, subnet, {"sparkops_fabric_ip": str(head)}, {"sparkops_fabric_ip": str(worker)})
    extra = {
        "sparkops_model_repo": REPO_ID,
        "sparkops_model_fit_check": True,
        "model_sync_cache_dir": str(cache.cache_dir),
        # Nothing listens there: a draft model not in the cache cannot be read from "the Hub" either, at once.
        "model_sync_hf_endpoint": "http://127.0.0.1:9",
        "vllm_serve_speculative": speculative,
        "sparkops_preflight_report_only": report_only,
    }
    out = tmp_path / "fit.json"
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK.format(preflight=PREFLIGHT, out=out))
    proc = play_head(inventory, playbook, "-e", json.dumps(extra), env=env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


def test_the_fit_counts_the_draft_model_from_the_cache(tmp_path: Path) -> None:
    fit = preflight(tmp_path, {"method": "draft_model", "model": DRAFT_ID, "num_speculative_tokens": 3})
    assert fit["fits"] is True, fit["problems"]
    figures = fit["figures"]
    assert figures["draft_repo_id"] == DRAFT_ID and figures["draft_tensor_parallel_size"] == 2  # the model's (vLLM's default)
    assert figures["draft_kv_bytes_per_token"] == 2 * 1 * 1 * 4 * 2  # 1 layer, 2 KV heads / TP 2, head size 4, bf16
    assert figures["draft_weights_per_node_bytes"] > 0 and figures["draft_snapshot_bytes"] > 0


def test_without_a_draft_model_nothing_of_it_is_read(tmp_path: Path) -> None:
    fit = preflight(tmp_path, {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}, draft_cached=False)
    assert fit["fits"] is True, fit["problems"]
    assert not [key for key in fit["figures"] if key.startswith("draft_")]


def test_report_only_says_the_draft_model_could_not_be_read(tmp_path: Path) -> None:
    speculative = {"method": "eagle", "model": DRAFT_ID, "num_speculative_tokens": 3, "draft_tensor_parallel_size": 1}
    fit = preflight(tmp_path, speculative, draft_cached=False, report_only=True)
    assert fit["fits"] is None
    assert len(fit["problems"]) == 1 and fit["problems"][0].startswith(f"vllm_serve_speculative: the draft model {DRAFT_ID}'s metadata could not be read: ")
    assert "draft_repo_id" not in fit["figures"]  # the model's fit, without the draft model


@pytest.fixture(autouse=True)
def _standin_runs() -> None:
    if not STANDIN.exists():
        pytest.fail(f"{STANDIN} is missing")
