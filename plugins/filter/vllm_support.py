# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: vllm_support
short_description: Say whether the vLLM build the vllm_serve settings give a host can run there
version_added: 1.0.0
author:
  - sparkops.inference developers (@sparkops)
description:
  - Takes the role R(sparkops.inference.vllm_serve,ansible_collections.sparkops.inference.vllm_serve_role) settings that
    decide which vLLM a host runs and the host's architecture (C(ansible_facts.architecture)). Returns the problems
    that refuse the run, each naming the variable and its value, and notes to show.
  - "Everywhere: C(vllm_serve_runtime=docker) with C(vllm_serve_backend=ray) is refused (vLLM in its own container
    cannot attach to the Ray container's raylet); the docker runtime needs a pinned image; the mp backend needs vLLM
    0.11.1 or later; with the venv runtime C(vllm_serve_version) is one exact release, and with
    C(vllm_serve_backend=ray) one up to 0.34.0, the newest whose Ray executor the check knows (from PyPI or any
    index)."
  - "On aarch64 (a DGX Spark: GB10, sm_121, CUDA 13) with the venv runtime and PyPI: releases before 0.12.0 and 0.21.0
    have no aarch64 wheel, and 0.12.0 to 0.19.x pull PyPI's CPU-only aarch64 torch, so they are refused; 0.20.0 and
    later run (torch cu130) with a note that the wheels carry sm_120 kernels and none for sm_121 (checked up to
    0.34.0; a newer release gets a second note). With a custom index
    (C(vllm_serve_pip_index_url), or C(--index-url), C(--extra-index-url), C(--find-links) or C(--no-index) in
    C(vllm_serve_pip_extra_args)) nothing is refused for the source; a note says what it must hold."
  - Any other architecture is not a Spark (the lab is x86_64 with vLLM's CPU build) and gets only the checks that hold
    everywhere.
  - The docker runtime's vLLM version is known for NVIDIA's C(nvcr.io/nvidia/vllm:<YY.MM>-py3) releases in the table
    and for C(vllm/vllm-openai:v<X.Y.Z>); any other image gets a note instead of the version checks.
  - The value of C(vllm_serve_pip_index_url) is never shown (it may carry credentials).
options:
  _input:
    description:
      - The settings, by the role's variable names C(vllm_serve_runtime), C(vllm_serve_backend), C(vllm_serve_version),
        C(vllm_serve_image), C(vllm_serve_pip_index_url) and C(vllm_serve_pip_extra_args), each a string.
      - Unset ones take the role's defaults, so a play that runs before the role (the preflight) can pass only what
        the inventory sets.
    type: dict
    required: true
  architecture:
    description: The host's architecture, C(ansible_facts.architecture) (C(aarch64) on a DGX Spark).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Refuse a vLLM build this host cannot run
  ansible.builtin.assert:
    that:
      - verdict.problems | length == 0
    fail_msg: "{{ verdict.problems | join('; ') }}"
  vars:
    verdict: "{{ {'vllm_serve_version': '0.15.1'} | sparkops.inference.vllm_support(ansible_facts['architecture']) }}"

# Only the settings the host has, so unset ones take the role's defaults.
- name: Check the settings the inventory gives
  ansible.builtin.debug:
    msg: "{{ dict(names | zip(query('ansible.builtin.vars', *names))) | sparkops.inference.vllm_support(ansible_facts['architecture']) }}"
  vars:
    names: "{{ query('ansible.builtin.varnames', '^vllm_serve_(runtime|backend|version|image|pip_index_url|pip_extra_args)$') }}"
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    problems:
      description: Why the run is refused, each naming the variable and its value; empty when it can go ahead.
      type: list
      elements: str
    notes:
      description: What to know about the build (what it lacks for the GB10, what a custom index or image must hold).
      type: list
      elements: str
    spark:
      description: Whether the host is aarch64, taken to be a DGX Spark.
      type: bool
    vllm_version:
      description: The vLLM version the host runs (C(vllm_serve_version), or the image's when known); null when unknown.
      type: str
    source:
      description: Where vLLM comes from, C(PyPI), C(custom index) or C(image); empty when the settings are refused before.
      type: str
"""

import typing as t
from collections.abc import Callable

from ansible.errors import AnsibleFilterError


def vllm_support_filter(settings: t.Any, architecture: t.Any) -> dict[str, t.Any]:
    # Imported when called, not at the top (docs/architecture.md, tests/unit/plugins/filter/test_filter_module_imports.py).
    from ansible_collections.sparkops.inference.plugins.plugin_utils._vllm_support import Settings, SupportSettingsError, check

    if not isinstance(architecture, str):
        raise AnsibleFilterError(
            f"sparkops.inference.vllm_support: architecture must be a string (ansible_facts.architecture), not {type(architecture).__name__}"
        )
    try:
        parsed = Settings.from_mapping(settings)
    except SupportSettingsError as exc:
        raise AnsibleFilterError(f"sparkops.inference.vllm_support: {exc}") from None
    return check(parsed, architecture).as_dict()


class FilterModule:
    """sparkops.inference vLLM build checks."""

    def filters(self) -> dict[str, Callable[..., t.Any]]:
        return {"vllm_support": vllm_support_filter}
