# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How the stand-in behaves: /etc/sparkops-lab/vllm.json (or $SPARKOPS_LAB_VLLM_CONFIG), then environment overrides.

Every key has an environment variable: ``SPARKOPS_LAB_VLLM_`` and the key in capitals, ``_SECONDS`` shortened to
``_S`` (``load_seconds`` -> ``SPARKOPS_LAB_VLLM_LOAD_S``, ``gpu_mib`` -> ``SPARKOPS_LAB_VLLM_GPU_MIB``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields

DEFAULT_PATH = "/etc/sparkops-lab/vllm.json"
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off", "")


class ConfigError(Exception):
    """The behaviour file or an override is wrong (a lab mistake, not a vLLM error)."""


@dataclass
class Behaviour:
    load_seconds: float = 3.0  # port bound but not listening: connection refused, as while vLLM loads
    unhealthy_seconds: float = 1.0  # then listening, /health and /v1/* 503 (guessed: vLLM has no such window)
    crash_at_start: bool = False  # after load_seconds: the engine core fails to start, exit 1
    crash_at_start_version: str = ""  # a stand-in knob: crash_at_start only when the installed wheel has this version
    wedged: bool = False  # /health 200 and /v1/models fine, completions 500
    reasoning_tokens: int = 16  # tokens a reasoning model thinks before it answers
    answer_tokens: int = 24  # tokens of an answer (finish_reason "stop" when max_tokens allows them all)
    tokens_per_second: float = 200.0  # generation pace of each request
    first_token_seconds: float = 0.0  # a stand-in knob, not vLLM's: extra wait before the first token (as prefill)
    gpu_mib: int = 1024  # the GPU marker of the serving process with the uni executor (one GPU, in-process)
    worker_gpu_mib: int = 512  # the GPU marker of each Ray worker actor (RayWorkerProc)
    gpus_per_node: int = 1  # GPUs this node has (one GB10 per Spark): vLLM's device_count()
    placement_group_seconds: float = 10.0  # Ray: how long to wait for the placement group (vLLM: 1800)
    watchdog_seconds: float = 5.0  # how often the API server checks for a dead engine (vLLM: 5)


def env_name(key: str) -> str:
    return "SPARKOPS_LAB_VLLM_" + key.upper().replace("_SECONDS", "_S")


def _convert(key: str, kind: str, value: object) -> object:
    if kind == "str":
        if not isinstance(value, str):
            raise ConfigError(f"{key}: {value!r} is not a string")
        return value
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in TRUE + FALSE:
            return value.strip().lower() in TRUE
        raise ConfigError(f"{key}: {value!r} is not a boolean")
    if not isinstance(value, (int, float, str)):
        raise ConfigError(f"{key}: {value!r} is not a number")
    try:
        number = int(value) if kind == "int" else float(value)
    except ValueError:
        raise ConfigError(f"{key}: {value!r} is not a number") from None
    if isinstance(value, bool) or number < 0 or (key == "tokens_per_second" and number == 0) or (key == "gpus_per_node" and number < 1):
        raise ConfigError(f"{key}: {value!r} is out of range")
    return number


def load_behaviour(environ: dict[str, str] | None = None) -> Behaviour:
    """The behaviour from the file (absent: defaults) and the environment overrides."""
    env = dict(os.environ if environ is None else environ)
    path = env.get("SPARKOPS_LAB_VLLM_CONFIG", DEFAULT_PATH)
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object")
    kinds = {field.name: str(field.type) for field in fields(Behaviour)}
    unknown = sorted(set(data) - set(kinds))
    if unknown:
        raise ConfigError(f"{path}: unknown keys {', '.join(unknown)} (known: {', '.join(kinds)})")
    values = {key: _convert(key, kinds[key], value) for key, value in data.items()}
    for key, kind in kinds.items():
        if env_name(key) in env:
            values[key] = _convert(env_name(key), kind, env[env_name(key)])
    return Behaviour(**values)  # type: ignore[arg-type]
