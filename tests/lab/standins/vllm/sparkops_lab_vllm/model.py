# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Find the model as vLLM does through huggingface_hub with no network, and derive its context length.

MODEL is a local folder holding config.json, or a repo id looked up in the hub cache
(``--download-dir``, else ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``):
``models--<org>--<name>/refs/<revision>`` names the commit, ``snapshots/<commit>/config.json`` must exist.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .logs import Fatal, log

# The config.json keys vLLM derives the context length from (the smallest one present wins).
MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length", "max_sequence_length", "max_seq_length", "seq_len")
DEFAULT_MAX_LEN = 2048  # vLLM's fallback when the config names none
COMMIT = re.compile(r"[0-9a-f]{40}")
JINJA_CHARS = "{}\n"
OFFLINE_ERROR = (
    "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and outgoing traffic "
    "has been disabled. To enable hf.co look-ups and downloads online, set 'HF_HUB_OFFLINE=0' as environment variable."
)
NETWORK_ERROR = (
    "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub and we "
    "cannot find the requested files in the local cache. Please check your connection and try again or make sure your "
    "Internet connection is on."
)


@dataclass
class Model:
    name: str  # MODEL as given: /v1/models' root
    path: Path  # the snapshot (or local) folder
    config: dict[str, Any]
    derived_max_len: int
    derived_key: str  # the config key it came from ("" when none: vLLM's default)
    chat_template: str | None
    has_weights: bool


def hub_cache(download_dir: str | None) -> Path:
    if download_dir:
        return Path(download_dir)
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
    return Path(home) / "hub"


def offline() -> bool:
    return any(os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE") for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def invalid_model(model: str, cause: str = "") -> Fatal:
    """vLLM's error when neither the Hub (here: its cache) nor a local folder gives a config."""
    message = (
        f"Invalid repository ID or local directory specified: '{model}'.\n"
        "Please verify the following requirements:\n"
        "1. Provide a valid Hugging Face repository ID.\n"
        "2. Specify a local directory that contains a recognized configuration file.\n"
        "   - For Hugging Face models: ensure the presence of a 'config.json'.\n"
        "   - For Mistral models: ensure the presence of a 'params.json'.\n"
        "3. For GGUF: pass the local path of the GGUF checkpoint.\n"
        "   Loading GGUF from a remote repo directly is not yet supported."
    )
    return Fatal("ValueError", message, cause)


def snapshot_folder(model: str, revision: str | None, download_dir: str | None) -> Path:
    """The folder of MODEL: a local folder, or the cached snapshot of the repo id at ``revision``."""
    local = Path(model).expanduser()
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise invalid_model(model)
        return local
    cause = OFFLINE_ERROR if offline() else NETWORK_ERROR
    if model.startswith(("/", "./", "../", "~")) or model.count("/") > 1:
        raise invalid_model(model, cause)
    repo = hub_cache(download_dir) / ("models--" + model.replace("/", "--"))
    wanted = revision or "main"
    ref = repo / "refs" / wanted
    commit = ref.read_text().strip() if ref.is_file() else wanted
    folder = repo / "snapshots" / commit
    if not COMMIT.fullmatch(commit) or not (folder / "config.json").is_file():
        log("WARNING", "config.py:610", f"Repo {model} (revision {wanted}) not found in the cache {repo.parent}: {cause.split(': ', 1)[1]}")
        raise invalid_model(model, cause)
    return folder


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise Fatal("OSError", f"It looks like the config file at '{path}' is not a valid JSON file. ({exc})") from None
    if not isinstance(data, dict):
        raise Fatal("OSError", f"It looks like the config file at '{path}' is not a valid JSON file.")
    return data


def load_chat_template(folder: Path, given: str | None) -> str | None:
    """--chat-template (a file, or the template itself), else the tokenizer's (tokenizer_config.json, chat_template.jinja)."""
    if given:
        try:
            return Path(given).read_text(encoding="utf-8")
        except OSError as exc:
            if not any(char in given for char in JINJA_CHARS):
                raise Fatal("ValueError", f"The supplied chat template ({given}) looks like a file path, but it failed to be opened. Reason: {exc}") from None
            return given
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    tokenizer_config = folder / "tokenizer_config.json"
    if tokenizer_config.is_file():
        template = read_json(tokenizer_config).get("chat_template")
        if isinstance(template, list) and template:  # named templates: the "default" one, else the first
            named = {entry.get("name"): entry.get("template") for entry in template if isinstance(entry, dict)}
            template = named.get("default") or next(iter(named.values()), None)
        if isinstance(template, str):
            return template
    return None


def resolve(model: str, revision: str | None, download_dir: str | None, chat_template: str | None) -> Model:
    folder = snapshot_folder(model, revision, download_dir)
    config = read_json(folder / "config.json")
    found = [(int(config[key]), key) for key in MAX_LEN_KEYS if isinstance(config.get(key), int) and not isinstance(config.get(key), bool)]
    derived, key = min(found) if found else (DEFAULT_MAX_LEN, "")
    if not found:
        log(
            "WARNING",
            "config.py:3611",
            "The model's config.json does not contain any of the following keys to determine the original maximum length of the model: "
            f"{list(MAX_LEN_KEYS)}. Assuming the model's maximum length is {DEFAULT_MAX_LEN}.",
        )
    weights = any(path.suffix in (".safetensors", ".bin", ".pt") for path in folder.iterdir())
    return Model(model, folder, config, derived, key, load_chat_template(folder, chat_template), weights)


def max_model_len(model: Model, requested: int | None) -> int:
    """--max-model-len checked against the derived one as vLLM checks it (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 allows more)."""
    if requested is None or requested == -1:
        return model.derived_max_len
    if requested > model.derived_max_len:
        model_max_length = model.config.get("model_max_length")
        where = f"{model.derived_key or 'max_model_len'}={model.derived_max_len} or model_max_length={model_max_length}"
        if os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "").strip().lower() in ("1", "true"):
            log(
                "WARNING",
                "config.py:3680",
                f"User-specified max_model_len ({requested}) is greater than the derived max_model_len ({where} in model's config.json). "
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution.",
            )
            return requested
        # vLLM checks it in a pydantic validator of ModelConfig, whose error wraps the message.
        raise Fatal(
            "pydantic_core._pydantic_core.ValidationError",
            "1 validation error for ModelConfig\n"
            f"  Value error, User-specified max_model_len ({requested}) is greater than the derived max_model_len ({where} in model's "
            "config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN "
            "must be used with extreme caution. If the model uses relative position encoding (RoPE), positions exceeding "
            "derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding derived_max_model_len "
            f"will cause a CUDA array out-of-bounds error. [type=value_error, input_value=ArgsKwargs((), {{'model': '{model.name}', ...}}), "
            "input_type=ArgsKwargs]\n"
            "    For further information visit https://errors.pydantic.dev/2.11/v/value_error",
        )
    return requested
