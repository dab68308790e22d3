#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: serve_wait
short_description: Wait for a served OpenAI-compatible endpoint in steps, saying after each where it and its unit stand
version_added: 1.1.0
description:
  - An action plugin over M(sparkops.inference.openai_endpoint). It asks the endpoint in steps of at most
    O(report_every) seconds (or what is left of O(timeout)), each step a run of that module on the host, the first at
    once.
  - "After each step that is not ready it prints one line while the task runs, with O(unit)'s state (C(systemctl show
    --property ActiveState,SubState,Result,NRestarts), as the probe read it after its last attempt: its
    RV(sparkops.inference.openai_endpoint#module:unit_state)), for example
    C(spark-head: vLLM not ready after 120 s (ActiveState=active, SubState=running, Result=success, NRestarts=0):
    refused; health: connection refused; models: not tried; completion: not tried). The lines are also returned."
  - The wait ends when the endpoint is ready, when O(unit) failed for good (C(ActiveState=failed), its start limit
    hit, so it will not answer), or when O(timeout) has passed. The probe reads O(unit)'s state after each of its
    attempts (M(sparkops.inference.openai_endpoint)'s O(sparkops.inference.openai_endpoint#module:unit)), so a unit
    that gave up ends the wait within an attempt, not at the end of its step. It never fails for an endpoint that is not ready; it
    returns RV(ready) and RV(ended_by), and the play decides (the C(vllm_serve) role fails with the unit's journal).
  - It fails at once when the probe module itself fails (its arguments refused).
  - Never changes anything.
extends_documentation_fragment:
  - sparkops.inference._attributes
  - sparkops.inference._attributes.info_module
  - sparkops.inference._attributes.actiongroup_controller
options:
  url:
    description: The endpoint's base URL, as M(sparkops.inference.openai_endpoint) takes it.
    type: str
    required: true
  model:
    description: The model the endpoint must list and answer with (the served model name).
    type: str
    required: true
  api_key:
    description: "The API key, sent as C(Authorization: Bearer); never returned or shown."
    type: str
  timeout:
    description: Seconds to wait in all. V(0) asks once.
    type: int
    default: 900
  report_every:
    description: Seconds a step takes at most; a line is printed after each step that is not ready.
    type: int
    default: 30
  interval:
    description: Seconds between two attempts within a step (the module's O(sparkops.inference.openai_endpoint#module:interval)).
    type: float
    default: 1.0
  smoke_test:
    description: Ask for a chat completion too (the module's O(sparkops.inference.openai_endpoint#module:smoke_test)).
    type: bool
    default: true
  unit:
    description:
      - The systemd unit that serves the endpoint, whose state each progress line gives; a failed one ends the wait
        (within an attempt of the probe, about a second).
      - Unset, no unit is read.
    type: str
seealso:
  - module: sparkops.inference.openai_endpoint
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Wait up to 15 minutes for vLLM on the head, a line every 30 s
  sparkops.inference.serve_wait:
    url: "http://{{ sparkops_cluster.head_fabric_ip }}:8000"
    model: qwen3.5-122b
    api_key: "{{ vllm_api_key }}"
    timeout: 900
    report_every: 30
    unit: sparkops-vllm.service
  register: served

- name: Fail when it did not serve
  ansible.builtin.fail:
    msg: "{{ served.msg }} (unit: {{ served.unit_state }})"
  when: not served.ready
"""

RETURN = r"""
ready:
  description: Whether the endpoint served the model (and answered the completion, with O(smoke_test)).
  returned: always
  type: bool
  sample: true
ended_by:
  description: What ended the wait.
  returned: always
  type: str
  choices: [ready, unit_failed, timeout, probe_failed]
  sample: ready
waited:
  description: Seconds the wait took.
  returned: always
  type: float
  sample: 42.3
unit_state:
  description: The last state of O(unit) read, C(Name=value) lines; empty when every step was ready or without O(unit).
  returned: always
  type: str
  sample: "ActiveState=active\nSubState=running\nResult=success\nNRestarts=0"
reports:
  description: The progress lines printed, one per step that was not ready.
  returned: always
  type: list
  elements: str
  sample: ["spark-head: vLLM not ready after 30 s (ActiveState=active, SubState=running, Result=success, NRestarts=0): refused; ..."]
state:
  description: The last step's state, as M(sparkops.inference.openai_endpoint) returns it.
  returned: always
  type: str
  sample: ready
msg:
  description: The last step's message, as M(sparkops.inference.openai_endpoint) returns it.
  returned: always
  type: str
  sample: "http://192.168.200.11:8000 serves qwen3.5-122b"
steps:
  description: The last step's three requests in words, as M(sparkops.inference.openai_endpoint) returns them.
  returned: always
  type: dict
url:
  description: The endpoint asked.
  returned: always
  type: str
content:
  description: The smoke test's answer (null for a reasoning model that only thought).
  returned: when ready with O(smoke_test)
  type: str
reasoning:
  description: The smoke test's reasoning text, when the model gave one.
  returned: when ready with O(smoke_test)
  type: str
finish_reason:
  description: The smoke test's C(finish_reason).
  returned: when ready with O(smoke_test)
  type: str
usage:
  description: The smoke test's token counts.
  returned: when ready with O(smoke_test)
  type: dict
"""
