#!/usr/bin/python
# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: openai_benchmark
short_description: Measure an OpenAI-compatible endpoint (vLLM) with streamed chat completions at several concurrencies
version_added: 1.0.0
description:
  - Sends streamed chat completions (C(POST /v1/chat/completions) with C(stream=true) and
    C(stream_options.include_usage=true)) to O(url), level by level, with exactly O(concurrency) requests in flight at
    each level (one thread a request), and reports for each level the output tokens per second of all requests
    together, the rate of one request, the time to first token, the inter-token latency and the failures.
  - "The figures are defined as C(vllm bench serve) of vLLM 0.30.0 defines them (C(vllm/benchmarks/serve.py),
    C(calculate_metrics); C(vllm/benchmarks/lib/endpoint_request_func.py), C(async_request_openai_chat_completions)),
    so that they compare with it run with C(--max-concurrency) and C(--ignore-eos): C(output_throughput) is the output
    tokens of the completed requests over the level's duration; TTFT the time from sending a request to the first
    stream chunk with choices (a reasoning model's C(reasoning) deltas count as any other); ITL the gaps between the
    following chunks; TPOT (latency - TTFT) / (output tokens - 1); the output tokens those of the final usage chunk.
    The per-request rate, RV(levels[].per_request_output_throughput), is 1 / the mean TPOT."
  - "Each request is one user message of about O(prompt_tokens) tokens: that many common English words drawn at
    random, each one token in current models' vocabularies (the chat template adds a few; the server's count is
    RV(levels[].total_input_tokens)). Every request draws other words, so none finds another's prefix in vLLM's
    prefix cache. It asks for C(max_tokens=O(output_tokens)) and, with O(ignore_eos), vLLM's C(ignore_eos=true), so
    that every request produces exactly O(output_tokens) tokens."
  - "A failure is an HTTP status other than 200, a connection failure, a request not finished within O(timeout), an
    C(error) object in the stream, a stream without any chunk with choices, or a stream that ends without
    C(data: [DONE]). Failed requests count in RV(levels[].failed) and their first five distinct messages in
    RV(levels[].error_messages); they add no tokens."
  - With O(warmup), one request (not counted) goes first; when it fails the module fails before the levels. A level
    in which every request failed ends the sweep (RV(stopped) says which levels were not run). The module fails when
    no request of any level succeeded, and warns when some failed.
  - It loads the endpoint and changes nothing (C(changed) is always V(false)). In check mode it measures nothing,
    since a benchmark is load, and returns RV(measured=false) after checking the options.
extends_documentation_fragment:
  - sparkops.inference._attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode nothing is sent and nothing is measured; the options are checked.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - It never changes anything; the figures differ from run to run.
options:
  url:
    description:
      - The base URL of the server, for example V(http://192.168.100.10:8000).
      - A trailing V(/) or V(/v1) is removed. It must not carry credentials; give the key in O(api_key).
    type: str
    required: true
  model:
    description:
      - The served model name to ask (C(vllm serve --served-model-name)).
    type: str
    required: true
  api_key:
    description:
      - "The API key of the server (C(vllm serve --api-key)), sent as C(Authorization: Bearer <api_key>) with each
        completion. It is never returned and is masked in messages should the server echo it."
    type: str
  concurrency:
    description:
      - The concurrency levels, in the order they run; each must be at least V(1), and none repeated.
    type: list
    elements: int
    default: [1, 2, 4, 8, 16]
  requests_per_level:
    description:
      - How many requests each level sends (after the warm-up).
      - "Default: 4 rounds of the level's concurrency, at least 8 (8, 8, 16, 32, 64 for the default levels)."
    type: int
  prompt_tokens:
    description:
      - About how many tokens the user message of each request has.
    type: int
    default: 256
  output_tokens:
    description:
      - The C(max_tokens) of each request; with O(ignore_eos), how many tokens each request produces.
    type: int
    default: 128
  warmup:
    description:
      - Send one request, not counted, before the first level (it pays for what a first request may pay, such as
        compilation or a cold cache).
    type: bool
    default: true
  ignore_eos:
    description:
      - Ask vLLM to ignore the end of sequence (C(ignore_eos=true)), so that each request produces O(output_tokens)
        tokens. With V(false) the field is not sent and a request may end earlier (RV(levels[].mean_output_tokens)).
    type: bool
    default: true
  timeout:
    description:
      - Seconds each request may take in all, connecting and streaming its answer; a request that takes longer fails.
    type: float
    default: 300
  validate_certs:
    description:
      - Whether to validate the server's TLS certificate, for an V(https) O(url).
    type: bool
    default: true
notes:
  - Uses only the Python standard library on the host it runs on (C(http.client)); it connects directly, without a
    proxy, and opens one connection a request (the handshake is part of the TTFT, well under a millisecond on a LAN).
  - It runs where the task runs; delegate it to the host that should generate the load (the controller with
    C(delegate_to=localhost), or the head node when the controller cannot reach the serving address). Its own CPU
    use is small, but a loaded load generator adds to the latencies.
  - RV(server_version) is what C(GET /version) answers (vLLM serves it without the API key).
seealso:
  - module: sparkops.inference.benchmark_report
  - module: sparkops.inference.openai_endpoint
  - name: vLLM benchmark CLI
    description: C(vllm bench serve), whose definitions this module follows.
    link: https://docs.vllm.ai/en/latest/cli/bench/serve.html
author:
  - sparkops.inference developers (@sparkops)
"""

EXAMPLES = r"""
- name: Sweep 1 to 16 concurrent requests from the controller
  sparkops.inference.openai_benchmark:
    url: http://192.168.100.10:8000
    model: qwen3.5-122b
    api_key: "{{ vllm_serve_api_key }}"
  delegate_to: localhost
  register: sweep

- name: Show the aggregate output tokens per second of each level
  ansible.builtin.debug:
    msg: "{{ sweep.levels | map(attribute='output_throughput') | list }}"

- name: A short sweep with long prompts, 10 requests a level
  sparkops.inference.openai_benchmark:
    url: http://192.168.100.10:8000/v1
    model: qwen3.5-122b
    concurrency: [1, 4]
    requests_per_level: 10
    prompt_tokens: 2048
    output_tokens: 256
"""

RETURN = r"""
measured:
  description: Whether requests were sent; V(false) in check mode.
  returned: always
  type: bool
  sample: true
url:
  description: The base URL measured, O(url) without a trailing V(/) or V(/v1).
  returned: always
  type: str
  sample: http://192.168.100.10:8000
model:
  description: O(model).
  returned: always
  type: str
  sample: qwen3.5-122b
settings:
  description: The settings of the sweep, as given (O(requests_per_level) null for the default).
  returned: always
  type: dict
  sample:
    concurrency: [1, 2, 4, 8, 16]
    requests_per_level: null
    prompt_tokens: 256
    output_tokens: 128
    warmup: true
    ignore_eos: true
    timeout: 300.0
started:
  description: When the sweep started, ISO 8601 in UTC; null in check mode.
  returned: always
  type: str
  sample: "2026-12-01T18:00:00Z"
finished:
  description: When the sweep ended, ISO 8601 in UTC; null in check mode.
  returned: always
  type: str
  sample: "2026-12-01T18:03:41Z"
server_version:
  description: The server's version as C(GET /version) answers it; null when it does not.
  returned: always
  type: str
  sample: 0.30.0
warmup:
  description: The warm-up request's outcome; null without O(warmup) or in check mode.
  returned: always
  type: dict
  contains:
    success:
      description: Whether it succeeded.
      type: bool
      returned: always
    ttft_ms:
      description: Its time to first token in milliseconds; null when it failed.
      type: float
      returned: always
    e2el_ms:
      description: Its latency in milliseconds; null when it failed.
      type: float
      returned: always
    output_tokens:
      description: Its output tokens.
      type: int
      returned: always
    prompt_tokens:
      description: Its prompt tokens as the server counted them; null when the server did not say.
      type: int
      returned: always
    error:
      description: Why it failed; null when it succeeded.
      type: str
      returned: always
  sample: {success: true, ttft_ms: 412.5, e2el_ms: 5120.8, output_tokens: 128, prompt_tokens: 268, error: null}
prompt_calibration:
  description:
    - How the prompts were sized with the server's own tokenizer (from the prompt token counts of the warm-up and of one
      more request of twice its words, neither counted); null without O(warmup), or when the server reported no
      counts (then one word a token).
  returned: always
  type: dict
  contains:
    words:
      description: Words in each measured prompt.
      type: int
      returned: always
    tokens_per_word:
      description: Tokens a word of the synthetic prompts takes with this model's tokenizer.
      type: float
      returned: always
    template_tokens:
      description: Tokens the chat template adds to the user content.
      type: int
      returned: always
  sample: {words: 256, tokens_per_word: 1.0, template_tokens: 9}
levels:
  description:
    - One entry a level run, in order; the key names are those of C(vllm bench serve)'s JSON result, times in
      milliseconds, rates per second. A statistic of no values (every request failed) is null.
  returned: always
  type: list
  elements: dict
  contains:
    max_concurrency:
      description: The level's concurrency, requests in flight at once.
      type: int
      returned: always
    num_prompts:
      description: Requests sent.
      type: int
      returned: always
    completed:
      description: Requests that succeeded.
      type: int
      returned: always
    failed:
      description: Requests that failed.
      type: int
      returned: always
    duration:
      description: Seconds from before the first request was sent to after the last one ended.
      type: float
      returned: always
    total_input_tokens:
      description: The prompt tokens of the completed requests, as the server counted them.
      type: int
      returned: always
    total_output_tokens:
      description: The output tokens of the completed requests.
      type: int
      returned: always
    mean_output_tokens:
      description: The output tokens of a completed request, on average.
      type: float
      returned: always
    output_throughput:
      description: Aggregate output tokens per second, RV(levels[].total_output_tokens) / RV(levels[].duration).
      type: float
      returned: always
    per_request_output_throughput:
      description: Output tokens per second of one request once its first token is out, 1000 / RV(levels[].mean_tpot_ms).
      type: float
      returned: always
    request_throughput:
      description: Completed requests per second.
      type: float
      returned: always
    total_token_throughput:
      description: Prompt and output tokens per second.
      type: float
      returned: always
    mean_ttft_ms:
      description: Time to first token, mean (RV(levels[].median_ttft_ms) and RV(levels[].p99_ttft_ms) likewise).
      type: float
      returned: always
    median_ttft_ms:
      description: Time to first token, median.
      type: float
      returned: always
    p99_ttft_ms:
      description: Time to first token, 99th percentile.
      type: float
      returned: always
    mean_itl_ms:
      description: Inter-token latency, mean over every gap of every completed request.
      type: float
      returned: always
    median_itl_ms:
      description: Inter-token latency, median.
      type: float
      returned: always
    p99_itl_ms:
      description: Inter-token latency, 99th percentile.
      type: float
      returned: always
    mean_tpot_ms:
      description: Time per output token after the first, mean over the requests.
      type: float
      returned: always
    median_tpot_ms:
      description: Time per output token after the first, median.
      type: float
      returned: always
    p99_tpot_ms:
      description: Time per output token after the first, 99th percentile.
      type: float
      returned: always
    mean_e2el_ms:
      description: Request latency, mean.
      type: float
      returned: always
    median_e2el_ms:
      description: Request latency, median.
      type: float
      returned: always
    p99_e2el_ms:
      description: Request latency, 99th percentile.
      type: float
      returned: always
    error_kinds:
      description:
        - Failed requests by kind, V(http_status), V(connection), V(timeout), V(stream_error) (an C(error) object
          in the stream) or V(protocol) (a stream that is not what the API sends).
      type: dict
      returned: always
    error_messages:
      description: The first five distinct failure messages, such as V(HTTP 500 ...) or V(timed out after 300 s).
      type: list
      elements: str
      returned: always
    speculative:
      description:
        - What speculative decoding did during the level, from the engine's own counters (vLLM's C(/metrics), read
          before and after the level with no API key; vLLM 0.32 C(vllm/v1/spec_decode/metrics.py)) - C(drafts),
          C(draft_tokens), C(accepted_tokens), C(acceptance_rate) (accepted over draft tokens) and
          C(mean_acceptance_length) (1 + accepted over drafts; null where nothing was drafted).
        - Null when the engine does not speculate or does not answer C(/metrics). Other requests the engine served
          during the level count too.
      type: dict
      returned: always
  sample:
    - max_concurrency: 1
      num_prompts: 8
      completed: 8
      failed: 0
      duration: 41.2
      total_input_tokens: 2144
      total_output_tokens: 1024
      mean_output_tokens: 128.0
      output_throughput: 24.85
      per_request_output_throughput: 26.1
      request_throughput: 0.194
      total_token_throughput: 76.9
      mean_ttft_ms: 281.2
      median_ttft_ms: 279.9
      p99_ttft_ms: 301.4
      mean_itl_ms: 38.0
      median_itl_ms: 38.2
      p99_itl_ms: 41.9
      mean_tpot_ms: 38.3
      median_tpot_ms: 38.3
      p99_tpot_ms: 38.6
      mean_e2el_ms: 5150.0
      median_e2el_ms: 5149.1
      p99_e2el_ms: 5170.3
      error_kinds: {}
      error_messages: []
      speculative: {drafts: 412, draft_tokens: 1236, accepted_tokens: 618, acceptance_rate: 0.5, mean_acceptance_length: 2.5}
stopped:
  description: Which levels were not run because every request of a level failed; null when all ran.
  returned: always
  type: str
  sample: "every request at concurrency 8 failed: concurrency 16 not run"
msg:
  description: What was measured, in words.
  returned: always
  type: str
  sample: "http://192.168.100.10:8000 (qwen3.5-122b), output tokens/s by concurrency: 1: 24.85 tok/s; 2: 48.1 tok/s"
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkops.inference.plugins.module_utils._benchmark import (
    DEFAULT_CONCURRENCY,
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_PROMPT_TOKENS,
    DEFAULT_TIMEOUT,
    BenchmarkConfig,
    parse_url,
    run_benchmark,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "model": {"type": "str", "required": True},
            "api_key": {"type": "str", "no_log": True},
            "concurrency": {"type": "list", "elements": "int", "default": list(DEFAULT_CONCURRENCY)},
            "requests_per_level": {"type": "int"},
            "prompt_tokens": {"type": "int", "default": DEFAULT_PROMPT_TOKENS, "no_log": False},
            "output_tokens": {"type": "int", "default": DEFAULT_OUTPUT_TOKENS, "no_log": False},
            "warmup": {"type": "bool", "default": True},
            "ignore_eos": {"type": "bool", "default": True},
            "timeout": {"type": "float", "default": DEFAULT_TIMEOUT},
            "validate_certs": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    config = BenchmarkConfig(
        url=p["url"],
        model=p["model"],
        api_key=p["api_key"] or None,
        concurrency=p["concurrency"],
        requests_per_level=p["requests_per_level"],
        prompt_tokens=p["prompt_tokens"],
        output_tokens=p["output_tokens"],
        warmup=p["warmup"],
        ignore_eos=p["ignore_eos"],
        timeout=p["timeout"],
        validate_certs=p["validate_certs"],
    )
    problems = config.check()
    if problems:
        module.fail_json(msg="; ".join(problems))
    url = parse_url(config.url).base
    if module.check_mode:
        module.exit_json(
            changed=False,
            measured=False,
            msg=f"check mode: nothing was measured ({url} would be loaded with {len(config.concurrency)} levels of requests)",
            url=url,
            model=config.model,
            settings=config.settings(),
            started=None,
            finished=None,
            server_version=None,
            warmup=None,
            levels=[],
            stopped=None,
        )
    result = run_benchmark(config)
    report = result.as_dict()
    if result.warmup_failed:
        module.fail_json(msg=result.message(), changed=False, measured=True, **report)
    if result.completed == 0:
        module.fail_json(msg=f"no request succeeded: {result.message()}", changed=False, measured=True, **report)
    if result.failed:
        module.warn(f"{result.failed} request(s) failed; see levels[].error_messages")
    module.exit_json(msg=result.message(), changed=False, measured=True, **report)


if __name__ == "__main__":
    main()
