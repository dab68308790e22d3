#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: openai_endpoint
short_description: Wait until an OpenAI-compatible endpoint (vLLM) serves a model and answers a chat completion
version_added: 1.0.0
description:
  - Polls an OpenAI-compatible HTTP endpoint, such as C(vllm serve), until it is ready or O(timeout) seconds have
    passed. The first attempt is made at once, the next ones O(interval) seconds after the previous one ended.
  - "Each attempt asks three things in turn: C(GET /health), for information only (vLLM answers 200 when healthy and
    503 when its engine is dead; a server without it answers 404, which is fine); C(GET /v1/models), which must answer
    200 and list O(model) in C(data[].id); and, with O(smoke_test), C(POST /v1/chat/completions) with O(prompt), which
    must answer 200 with C(usage.completion_tokens) above 0."
  - A reasoning model that answers with C(message.content) null or empty and the text in C(message.reasoning) (or the
    older C(message.reasoning_content)), for example when O(max_tokens) runs out while it thinks
    (C(finish_reason=length)), is ready; both texts are returned.
  - "Not ready, and polled again: a refused or failed connection (vLLM opens its port only once the model is
    loaded), an HTTP error, O(model) missing from C(/v1/models) (a server can still be adding LoRA adapters), the API
    key refused or missing (HTTP 401 or 403), a failing completion while C(/health) answers (a wedged engine), and a
    completion without tokens. Without O(smoke_test), a C(/health) answering 5xx is not ready either."
  - When O(timeout) passes before the endpoint is ready, fails (unless O(fail_on_timeout=false)) with a message that
    gives the last state of each of the three requests and, for a refused API key, a missing model or a wedged
    engine, says so. Every return value is there in the failure too.
  - Never changes anything; it only reads, in check mode too.
extends_documentation_fragment:
  - sparkops.inference._attributes
  - sparkops.inference._attributes.info_module
options:
  url:
    description:
      - The base URL of the server, for example V(http://192.168.200.11:8000).
      - A trailing V(/) or V(/v1) is removed, so the URL an OpenAI client takes (V(http://192.168.200.11:8000/v1)) works too.
    type: str
    required: true
  model:
    description:
      - The served model name that C(/v1/models) must list (C(vllm serve --served-model-name), by default the model
        path or repo id), and that the smoke test asks.
    type: str
    required: true
  api_key:
    description:
      - "The API key of the server (C(vllm serve --api-key)), sent as C(Authorization: Bearer <api_key>) to C(/v1/models)
        and C(/v1/chat/completions) only, and never to a redirect's target."
      - It is not returned, and is masked in everything returned should the server echo it, also JSON-escaped
        (V(\\/), V(\\u002f)), split by whitespace, or cut by the 300-character excerpt of a body (a start of it of
        8 characters or more that ends an excerpt is masked).
    type: str
  timeout:
    description:
      - How many seconds to wait in all for the endpoint to be ready.
      - No attempt starts after that, the pause between attempts never goes past it and each request waits at most
        for the time left, so the module returns soon after O(timeout) even when the server does not answer.
      - V(0) makes one attempt, each request waiting up to O(request_timeout).
    type: int
    default: 900
  interval:
    description:
      - Seconds to wait between the end of an attempt and the start of the next.
    type: float
    default: 2
  request_timeout:
    description:
      - Seconds each HTTP request waits for the server (connecting, then each read).
      - A completion that takes longer fails the attempt; raise it, or lower O(max_tokens), for a slow model.
    type: float
    default: 30
  smoke_test:
    description:
      - Whether to ask for a chat completion. With V(false), the endpoint is ready once C(/v1/models) lists O(model)
        and C(/health) does not answer 5xx.
    type: bool
    default: true
  prompt:
    description:
      - The user message of the smoke test.
    type: str
    default: Say hello.
  max_tokens:
    description:
      - The C(max_tokens) of the smoke test. A reasoning model may spend them all thinking, which is fine.
    type: int
    default: 32
  chat_template_kwargs:
    description:
      - "Passed as C(chat_template_kwargs) in the smoke test's request, for example V({enable_thinking: false}) for the
        Qwen3 family so that the answer is in C(content) rather than C(reasoning)."
    type: dict
  validate_certs:
    description:
      - Whether to validate the server's TLS certificate, for an V(https) O(url).
    type: bool
    default: true
  use_proxy:
    description:
      - Whether to go through the proxy that the environment of the module sets (C(http_proxy), C(https_proxy),
        C(all_proxy), C(no_proxy)).
      - Off by default, so that the requests go straight to O(url), since a proxy would get O(api_key) in the
        C(Authorization) header (in clear text for an V(http) O(url)). Turn it on only for a proxy you trust with the key.
    type: bool
    default: false
  unit:
    description:
      - The systemd unit that runs the server on the host the module runs on, for example V(sparkops-vllm.service).
      - "After each attempt that is not ready, the unit's state is read (RV(unit_state)). C(ActiveState=failed)
        (systemd gave up starting it: its start limit hit, or it is not restarted) ends the wait at once, not ready,
        with RV(gave_up=true), since the server will not answer, rather than waiting out O(timeout). A unit restarting
        after a crash is C(activating), and is waited for."
      - A unit systemd does not know, or a host without systemd, is waited for as without O(unit).
    type: str
    version_added: 1.1.0
  fail_on_timeout:
    description:
      - Fail the task when the endpoint is not ready after O(timeout), or when O(unit) gave up.
      - With V(false), return RV(ready=false) with the last states and do not fail, for example to wait in short calls
        that each print the progress.
    type: bool
    default: true
notes:
  - Needs nothing but Python on the host it runs on; it uses Ansible's own HTTP client. Run it where the endpoint can
    be reached from (the head node, or the controller with C(delegate_to=localhost)).
  - vLLM opens its HTTP port only once the model is loaded, so a starting server refuses connections rather than
    answering 503; a multi-node load of a large model can take 15 minutes or more.
  - The result's RV(state) is the last attempt's, unless the deadline cut that one short, in which case it is the
    attempt before it.
  - The requests ignore the proxies of the environment unless O(use_proxy=true); before this, the default was to use
    them, and O(api_key) went to the proxy.
  - The body of an HTTP 401 or 403 answer is never shown, since it may echo the credentials; RV(steps) gives only the
    status.
seealso:
  - name: vLLM OpenAI-compatible server
    description: The endpoints C(vllm serve) offers.
    link: https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html
  - name: vLLM reasoning outputs
    description: The C(reasoning) field of a reasoning model's message.
    link: https://docs.vllm.ai/en/latest/features/reasoning_outputs.html
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Wait up to 30 minutes for the model to answer
  sparkops.inference.openai_endpoint:
    url: http://192.168.200.11:8000
    model: qwen3.5-122b
    api_key: "{{ sparkops_vllm_api_key }}"
    timeout: 1800
    chat_template_kwargs:
      enable_thinking: false
  register: endpoint

- name: Show the answer
  ansible.builtin.debug:
    msg: "{{ endpoint.content or endpoint.reasoning }} ({{ endpoint.usage.completion_tokens }} tokens in {{ endpoint.elapsed }} s)"

- name: Only check that the model is listed, once
  sparkops.inference.openai_endpoint:
    url: http://192.168.200.11:8000/v1
    model: qwen3.5-122b
    smoke_test: false
    timeout: 0
  delegate_to: localhost

- name: Wait in one-minute steps, printing each step's state, 30 steps at most
  sparkops.inference.openai_endpoint:
    url: http://192.168.200.11:8000
    model: qwen3.5-122b
    timeout: 60
    fail_on_timeout: false
  register: endpoint_step
  until: endpoint_step.ready
  retries: 30
  delay: 0
"""

RETURN = r"""
ready:
  description: Whether the endpoint listed O(model) and, with O(smoke_test), answered the completion with tokens.
  returned: always
  type: bool
  sample: true
state:
  description:
    - The reported attempt's verdict, one word.
    - "V(ready); V(refused) (connection refused: nothing listens yet); V(unreachable) (another connection failure, such
      as no route to the host, a name that does not resolve, a TLS error or a connection closed without an answer);
      V(timeout) (C(/v1/models) did not answer in time, or no time was left for a request); V(loading) (C(/v1/models)
      answered 503, or without O(smoke_test) C(/health) answered 5xx); V(http_error) (C(/v1/models) answered another
      error status); V(bad_response) (C(/v1/models) answered something else than a model list); V(unauthorized)
      (HTTP 401 or 403: the API key is refused or missing); V(model_missing) (C(/v1/models) does not list O(model));
      V(completion_failed) (the completion answered an error status, did not answer in time or answered without a
      message); V(no_tokens) (the completion answered with no completion tokens)."
  returned: always
  type: str
  sample: ready
url:
  description: The base URL used, O(url) without a trailing V(/) or V(/v1).
  returned: always
  type: str
  sample: http://192.168.200.11:8000
model:
  description: O(model).
  returned: always
  type: str
  sample: qwen3.5-122b
elapsed:
  description: The seconds the module waited.
  returned: always
  type: float
  sample: 412.618
attempts:
  description: How many attempts were made.
  returned: always
  type: int
  sample: 197
health_status:
  description: The HTTP status of C(/health) in the reported attempt; null when it did not answer.
  returned: always
  type: int
  sample: 200
models:
  description: The served model ids C(/v1/models) listed in the reported attempt; empty when it did not list them.
  returned: always
  type: list
  elements: str
  sample: [qwen3.5-122b]
steps:
  description:
    - "The outcome of each request of the reported attempt, in words, such as V(connection refused), V(HTTP 503),
      V(lists qwen3.5-122b) or V(HTTP 500: <the first 300 characters of the body>). A request that was not made
      says V(not tried) and, when it is so, why."
    - "An HTTP 401 or 403 answer is shown without its body, as V(HTTP 401 (body dropped: it may echo credentials\\))."
  returned: always
  type: dict
  contains:
    health:
      description: The outcome of C(GET /health).
      type: str
      returned: always
      sample: HTTP 200
    models:
      description: The outcome of C(GET /v1/models).
      type: str
      returned: always
      sample: lists qwen3.5-122b
    completion:
      description: The outcome of C(POST /v1/chat/completions).
      type: str
      returned: always
      sample: "HTTP 200: 32 tokens, finish_reason length"
  sample:
    health: HTTP 200
    models: lists qwen3.5-122b
    completion: "HTTP 200: 32 tokens, finish_reason length"
content:
  description: The smoke test's answer, C(message.content); null when there is none (a reasoning model may answer only in RV(reasoning)).
  returned: always
  type: str
  sample: Hello! How can I help you today?
reasoning:
  description: The smoke test's reasoning text, C(message.reasoning) or else the older C(message.reasoning_content); null when there is none.
  returned: always
  type: str
  sample: The user wants a greeting.
finish_reason:
  description: The smoke test's C(finish_reason), such as V(stop) or V(length); null when there is none.
  returned: always
  type: str
  sample: stop
usage:
  description: The smoke test's C(usage); empty when there is none.
  returned: always
  type: dict
  sample: {prompt_tokens: 12, completion_tokens: 32, total_tokens: 44}
gave_up:
  description:
    - Whether the wait ended early because O(unit) failed (systemd gave up starting it); RV(msg) then says so.
  returned: always
  type: bool
  sample: false
  version_added: 1.1.0
unit_state:
  description:
    - "O(unit)'s state as read after the last attempt, when the endpoint is not ready: C(systemctl show)'s
      C(ActiveState), C(SubState), C(Result) and C(NRestarts), one C(Name=value) a line."
    - Empty when the endpoint is ready, without O(unit), or when C(systemctl) could not read it.
  returned: always
  type: str
  sample: "ActiveState=activating\nSubState=auto-restart\nResult=exit-code\nNRestarts=2"
  version_added: 1.1.0
msg:
  description:
    - What happened in words. When not ready, C(<url> not ready after <timeout> s (<n> attempts)) (after the seconds
      waited when O(unit) gave up), then the last state of each request (RV(steps)), then what it likely means or that
      O(unit) gave up.
  returned: always
  type: str
  sample: "http://192.168.200.11:8000 not ready after 900 s (437 attempts): health: connection refused; models: not tried; completion: not tried"
"""

# Imports follow the documentation, as validate-modules requires.
from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.sparkops.inference.plugins.module_utils._openai_endpoint import (  # noqa: E402
    DEFAULT_MAX_TOKENS,
    DEFAULT_PROMPT,
    DEFAULT_REQUEST_TIMEOUT,
    EndpointConfig,
    EndpointError,
    UnitWatch,
    ansible_opener,
    normalise_url,
    wait_ready,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "model": {"type": "str", "required": True},
            "api_key": {"type": "str", "no_log": True},
            "timeout": {"type": "int", "default": 900},
            "interval": {"type": "float", "default": 2.0},
            "request_timeout": {"type": "float", "default": DEFAULT_REQUEST_TIMEOUT},
            "smoke_test": {"type": "bool", "default": True},
            "prompt": {"type": "str", "default": DEFAULT_PROMPT},
            "max_tokens": {"type": "int", "default": DEFAULT_MAX_TOKENS, "no_log": False},
            "chat_template_kwargs": {"type": "dict"},
            "validate_certs": {"type": "bool", "default": True},
            "use_proxy": {"type": "bool", "default": False},
            "unit": {"type": "str"},
            "fail_on_timeout": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    for name, least in (("timeout", 0), ("interval", 0), ("max_tokens", 1)):
        if p[name] < least:
            module.fail_json(msg=f"{name} must be at least {least}, not {p[name]}")
    if p["request_timeout"] <= 0:
        module.fail_json(msg=f"request_timeout must be above 0, not {p['request_timeout']}")
    try:
        url = normalise_url(p["url"])
    except EndpointError as exc:
        module.fail_json(msg=str(exc))
    config = EndpointConfig(
        url=url,
        model=p["model"],
        api_key=p["api_key"] or None,
        smoke_test=p["smoke_test"],
        prompt=p["prompt"],
        max_tokens=p["max_tokens"],
        chat_template_kwargs=p["chat_template_kwargs"],
        request_timeout=p["request_timeout"],
    )
    opener = ansible_opener(validate_certs=p["validate_certs"], use_proxy=p["use_proxy"])
    watch = UnitWatch(p["unit"], module.run_command) if p["unit"] else None
    outcome = wait_ready(config, timeout=p["timeout"], interval=p["interval"], opener=opener, gave_up=watch)
    result = {**outcome.as_dict(), "unit_state": "" if outcome.ready or watch is None else watch.state}
    if not outcome.ready and p["fail_on_timeout"]:
        module.fail_json(msg=outcome.message(), changed=False, **result)
    module.exit_json(msg=outcome.message(), changed=False, **result)


if __name__ == "__main__":
    main()
