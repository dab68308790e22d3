# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_serve role's ``vllm_serve_speculative`` as ``vllm serve``'s ``--speculative-config`` (its JSON).

The mapping's keys are vLLM's own (``SpeculativeConfig``, vllm/config/speculative.py: ``method``,
``num_speculative_tokens``, ``prompt_lookup_max``, ...): which methods and values the pinned engine takes is its own
check's job (the role's ``sparkops-vllm-args-check`` builds vLLM's ``SpeculativeConfig`` from it before the unit
changes). What is refused here, naming the variable, is what cannot be that JSON at all and what would give vLLM two
speculative configurations. A draft model (``model``, with ``revision``: ``draft_model``, ``eagle``, ``eagle3``,
...) must be a Hugging Face repository id: site.yml fetches and distributes it as it does the model (model_sync, a
second time), the preflight's fit check counts it, and vLLM finds it in the same cache (:func:`draft_model`).

Note that this plugin util is **PRIVATE** to the collection. It can have breaking changes at any time.
"""

from __future__ import annotations

import json
import re
import typing as t
from collections.abc import Mapping, Sequence

NAME = "vllm_serve_speculative"
# vLLM's spellings of the flag (0.32 vllm/engine/arg_utils.py: "--speculative-config", "-sc"; its parser reads
# "_" as "-" in long flags).
FLAGS = ("--speculative-config", "-sc")
# A Hugging Face repository id (``org/name``), as huggingface_hub validates one: no local path, no URL.
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


class SpeculativeConfigError(ValueError):
    """``vllm_serve_speculative`` cannot be ``--speculative-config``; the message names the variable."""


def _json_value(value: t.Any, where: str) -> None:
    if value is None or isinstance(value, (bool, int, float, str)):
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise SpeculativeConfigError(f"{where} has a key that is not a string: {key!r}")
            _json_value(item, f"{where}.{key}")
        return
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        for index, item in enumerate(value):
            _json_value(item, f"{where}[{index}]")
        return
    raise SpeculativeConfigError(f"{where} must hold JSON values (strings, numbers, booleans, lists, mappings), got {value!r}")


def speculative_flag_in(extra_args: Sequence[str]) -> str | None:
    """The extra argument that gives vLLM a speculative configuration of its own, if any."""
    for arg in extra_args:
        flag = arg.split("=", 1)[0]
        if flag in FLAGS or flag.replace("_", "-") == FLAGS[0]:
            return arg
    return None


def speculative_config_json(value: t.Any, extra_args: Sequence[str] = ()) -> str | None:
    """``--speculative-config``'s value for ``vllm_serve_speculative`` (compact JSON, keys sorted), or None when it is
    empty or null (no speculation). Raises :class:`SpeculativeConfigError` on a value that is not a mapping of JSON
    values, a mapping without a ``method``, a draft model that is not a repository id, or ``--speculative-config`` also
    in ``extra_args``."""
    if value is None or (isinstance(value, Mapping) and not value):
        return None
    if not isinstance(value, Mapping):
        raise SpeculativeConfigError(f"{NAME} must be a mapping of vLLM's speculative settings (method, num_speculative_tokens, ...), got {value!r}")
    _json_value(value, NAME)
    method = value.get("method")
    if not isinstance(method, str) or not method.strip():
        raise SpeculativeConfigError(f"{NAME}.method must name vLLM's speculative method (for example ngram or mtp), got {method!r}")
    draft_model(value)
    flag = speculative_flag_in(extra_args)
    if flag is not None:
        raise SpeculativeConfigError(f"{NAME} and {flag!r} in vllm_serve_extra_args both give vLLM a speculative configuration: keep one")
    return json.dumps(dict(value), sort_keys=True, separators=(",", ":"))


def draft_model(value: t.Any) -> dict[str, t.Any] | None:
    """The draft model ``vllm_serve_speculative`` names (its ``model``): ``repo_id``, ``revision`` (``main`` when not
    given, as vLLM reads the cache) and ``tensor_parallel_size`` (``draft_tensor_parallel_size``; None: vLLM's
    default, the model's own); None without one. Raises :class:`SpeculativeConfigError` on a ``model`` that is not a
    Hugging Face repository id (a local path or a URL: the collection fetches and distributes the draft model as it
    does the model) or a ``revision`` that is not a string."""
    if not isinstance(value, Mapping) or value.get("model") is None:
        if isinstance(value, Mapping) and value.get("revision") is not None:
            raise SpeculativeConfigError(f"{NAME}.revision is set without {NAME}.model, the draft model it is the revision of")
        return None
    repo = value["model"]
    if not isinstance(repo, str) or not REPO_ID.match(repo):
        raise SpeculativeConfigError(
            f"{NAME}.model must be the draft model's Hugging Face repository id (org/name), which site.yml fetches and "
            f"distributes as it does the model, got {repo!r}"
        )
    revision = value.get("revision")
    if revision is not None and (not isinstance(revision, str) or not revision.strip()):
        raise SpeculativeConfigError(f"{NAME}.revision must be the draft model's branch, tag or commit, got {revision!r}")
    tp = value.get("draft_tensor_parallel_size")
    return {"repo_id": repo, "revision": revision or "main", "tensor_parallel_size": tp if isinstance(tp, int) and not isinstance(tp, bool) else None}
