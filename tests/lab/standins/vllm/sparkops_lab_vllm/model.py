# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Find the model as vLLM 0.30.0 does with huggingface_hub and no network, and derive its context length.

With ``HF_HUB_OFFLINE`` set, ``EngineArgs.__post_init__`` replaces a repo id by its cached snapshot folder
(``engine/arg_utils.py:840-863``, ``transformers_utils/repo_utils.py:279-297``: ``snapshot_download`` with
``local_files_only``, in the hub cache: ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``; ``--download-dir`` plays no
part). Then ``ModelConfig`` reads the folder's ``config.json`` (``transformers_utils/config.py:767-800``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .logs import Fatal, log
from .pydantic_errors import value_error

# The config.json keys vLLM derives the context length from (the smallest one present wins).
MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length", "max_sequence_length", "max_seq_length", "seq_len")
DEFAULT_MAX_LEN = 2048  # vLLM's fallback when the config names none
COMMIT = re.compile(r"[0-9a-f]{40}")
TRUE = ("1", "ON", "YES", "TRUE")  # huggingface_hub constants.py:12-19
# huggingface_hub 2.4.0 _snapshot_download.py:381-386 (local_files_only=True, as get_model_path passes it)
NOT_CACHED = (
    "Cannot find an appropriate cached snapshot folder for the specified revision on the local disk and outgoing traffic has been "
    "disabled. To enable repo look-ups and downloads online, pass 'local_files_only=False' as input."
)
LONG_WARNING = (  # config/model.py:2525-2532
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position encoding (RoPE), positions "
    "exceeding derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding "
    "derived_max_model_len will cause a CUDA array out-of-bounds error."
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


def hub_cache() -> Path:
    """huggingface_hub constants.py:160-181: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface")
    return Path(home) / "hub"


def offline() -> bool:
    """huggingface_hub constants.py:194: HF_HUB_OFFLINE, else TRANSFORMERS_OFFLINE."""
    return (os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or "").upper() in TRUE


def offline_path(model: str, revision: str | None) -> str:
    """get_model_path: an existing path as it is; a repo id as its cached snapshot folder, or LocalEntryNotFoundError."""
    if os.path.exists(model):
        return model
    wanted = revision or "main"
    repo = hub_cache() / ("models--" + model.replace("/", "--"))
    ref = repo / "refs" / wanted
    commit = ref.read_text().strip() if ref.is_file() else wanted
    folder = repo / "snapshots" / commit
    if not folder.is_dir():
        raise Fatal("huggingface_hub.errors.LocalEntryNotFoundError", NOT_CACHED)
    log("INFO", "arg_utils.py:848", f"HF_HUB_OFFLINE is True, replace model_id [{model}] to model_path [{folder}]")
    return str(folder)


def invalid_model(model: str) -> Fatal:
    """transformers_utils/config.py:787-800 (the message ends with a newline), in ModelConfig's ValidationError."""
    message = (
        f"Invalid repository ID or local directory specified: '{model}'.\n"
        "Please verify the following requirements:\n"
        "1. Provide a valid Hugging Face repository ID.\n"
        "2. Specify a local directory that contains a recognized configuration file.\n"
        "   - For Hugging Face models: ensure the presence of a 'config.json'.\n"
        "   - For Mistral models: ensure the presence of a 'params.json'.\n"
    )
    return value_error("ModelConfig", message, "model", model)


def config_folder(model: str, revision: str | None) -> Path:
    """get_config's look-up: a local folder with config.json; without a network a repo id is found only when its
    config.json is in the hub cache (repo_utils.py:255-276 try_to_load_from_cache)."""
    local = Path(model)
    if local.exists():
        if not (local / "config.json").is_file():
            raise invalid_model(model)
        return local
    repo = hub_cache() / ("models--" + model.replace("/", "--"))
    wanted = revision or "main"
    ref = repo / "refs" / wanted
    commit = ref.read_text().strip() if ref.is_file() else wanted
    folder = repo / "snapshots" / commit
    if not COMMIT.fullmatch(commit) or not (folder / "config.json").is_file():
        raise invalid_model(model)
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
    """--chat-template (a file, or the template itself: the CLI checked it), else the tokenizer's
    (chat_template.jinja, tokenizer_config.json's chat_template; a list of named ones: "default", else the first)."""
    if given:
        return Path(given).read_text(encoding="utf-8") if Path(given).is_file() else given
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    tokenizer_config = folder / "tokenizer_config.json"
    if tokenizer_config.is_file():
        template = read_json(tokenizer_config).get("chat_template")
        if isinstance(template, list) and template:
            named = {entry.get("name"): entry.get("template") for entry in template if isinstance(entry, dict)}
            template = named.get("default") or next(iter(named.values()), None)
        if isinstance(template, str):
            return template
    return None


def resolve(model: str, revision: str | None, chat_template: str | None) -> Model:
    """EngineArgs' offline replacement, then ModelConfig's config look-up; ``model`` as given stays the API's root."""
    path = offline_path(model, revision) if offline() else model
    folder = config_folder(path, revision)
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
    """--max-model-len checked against the derived one (config/model.py:2535-2546; VLLM_ALLOW_LONG_MAX_MODEL_LEN, envs.py:1097-1100)."""
    if requested is None or requested == -1:
        return model.derived_max_len
    model_max_length = model.config.get("model_max_length")
    if requested > model.derived_max_len and (model_max_length is None or requested > model_max_length):
        message = (
            f"User-specified max_model_len ({requested}) is greater than the derived max_model_len "
            f"({model.derived_key or 'max_model_len'}={model.derived_max_len} or model_max_length={model_max_length} in model's config.json)."
        )
        if os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "0").strip().lower() in ("1", "true"):
            log("WARNING", "config.py:2538", f"{message} {LONG_WARNING}")
            return requested
        raise value_error(
            "ModelConfig", f"{message} To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. {LONG_WARNING}", "model", model.name
        )
    return requested
