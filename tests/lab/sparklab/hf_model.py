"""Build small but real Hugging Face models in the hub cache layout, and seed a lab node's cache with one.

The one builder of test models: the lab seeds the head's cache with it (workers have no egress, as on the real
Sparks, and get the model from the head), and tests/unit's ``hf_cache_factory`` writes its caches with it.

The layout is the one huggingface_hub writes (and ``scan_cache_dir`` reads)::

    <cache>/models--<org>--<name>/blobs/<etag>
    <cache>/models--<org>--<name>/snapshots/<commit>/<path> -> ../../blobs/<etag>   (relative symlinks)
    <cache>/models--<org>--<name>/refs/<revision>                                  (the commit, no newline)

The etag of an LFS file (``.safetensors``, ``.bin``, ``.model``) is the sha256 of its content, that of any other
file its git blob sha1.

The model (:func:`build_hub_cache`) is a small Qwen3-MoE: ``config.json`` (``Qwen3MoeForCausalLM``),
``generation_config.json``, a byte-level BPE ``tokenizer.json`` and ``tokenizer_config.json``,
``model-0000i-of-0000N.safetensors`` shards written with the safetensors library, and
``model.safetensors.index.json``. The tensor names and shapes are those of Hub Qwen3-MoE checkpoints for the
config (per-expert weights, untied embeddings); the dimensions are chosen so the files total about the requested
size (from ~1.4 MB in BF16; each shard is generated in memory). The weights are random but finite, deterministic
from the seed: the same arguments give a byte-identical cache, so its blobs and its commit are stable.

The host runs this module, never a node. Its only third-party imports are numpy and safetensors.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import typing as t
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import numpy as np
import numpy.typing as npt
from safetensors import TensorSpec, serialize_file

from .run import LabError, log, run

INDEX = "model.safetensors.index.json"
LFS_SUFFIXES = (".safetensors", ".bin", ".model")
NODE_HUB_CACHE = "/var/lib/sparkops/huggingface/hub"  # the model_sync role's default cache, the same on every node
# Bump when the generated content changes, so copies kept under .lab/models are rebuilt.
BUILDER_VERSION = 1

Dtype = t.Literal["BF16", "F16", "F32"]
DTYPES: tuple[Dtype, ...] = ("BF16", "F16", "F32")

_COMMIT = re.compile(r"[0-9a-f]{40}")
_REPO_ID = re.compile(r"(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]{0,95}")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(I?)(B?)", re.IGNORECASE)


# --- hashes and names ----------------------------------------------------------------------------------------


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data``: the etag of an LFS file."""
    return hashlib.sha256(data).hexdigest()


def git_blob_sha1(data: bytes) -> str:
    """The git blob sha1 of ``data``: the etag of a file kept in git itself."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_lfs(path: str) -> bool:
    """Whether the Hub keeps ``path`` in LFS (so its etag is a sha256)."""
    return path.endswith(LFS_SUFFIXES)


def etag_of(path: str, data: bytes) -> str:
    """The Hub's etag of a file: sha256 for an LFS file, else its git blob sha1."""
    return sha256_hex(data) if is_lfs(path) else git_blob_sha1(data)


def file_etag(path: str, file: Path) -> str:
    """:func:`etag_of` for the content of ``file``, read in chunks."""
    if is_lfs(path):
        with file.open("rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    return git_blob_sha1(file.read_bytes())


def shard_name(index: int, count: int) -> str:
    """The name of shard ``index`` (1-based) of ``count``, as transformers names them."""
    return f"model-{index:05d}-of-{count:05d}.safetensors"


def json_bytes(document: t.Any) -> bytes:
    """``document`` as transformers writes its JSON files: indented, sorted keys, a final newline."""
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()


def validate_repo_id(repo_id: str) -> None:
    """Raise ValueError unless ``repo_id`` is a Hub model id (``org/name`` or ``name``)."""
    if not _REPO_ID.fullmatch(repo_id) or "--" in repo_id or ".." in repo_id:
        raise ValueError(f"{repo_id!r} is not a Hugging Face repo id (org/name)")


def repo_folder(repo_id: str) -> str:
    """The cache folder of a model repo: ``models--<org>--<name>``."""
    validate_repo_id(repo_id)
    return "models--" + repo_id.replace("/", "--")


def content_commit(etags: Mapping[str, str]) -> str:
    """A deterministic 40-hex commit for a snapshot: the sha1 of its sorted ``path NUL etag`` lines."""
    listing = "".join(f"{path}\0{etag}\n" for path, etag in sorted(etags.items()))
    return hashlib.sha1(listing.encode()).hexdigest()


def parse_size(text: str) -> int:
    """Bytes from ``40MB``, ``1GB``, ``1.5GiB``, ``512KiB`` or ``1000000``: kB/MB/GB/TB are decimal, KiB/MiB/GiB/TiB
    binary; a bare ``K``/``M``/``G``/``T`` is decimal."""
    match = _SIZE.fullmatch(text.strip())
    if not match or (match.group(3) and not match.group(2)):
        raise ValueError(f"size {text!r} is not a size such as 40MB, 1GB or 1GiB")
    number, unit, binary, _b = match.groups()
    power = "KMGT".index(unit.upper()) + 1 if unit else 0
    return int(float(number) * (1024 if binary else 1000) ** power)


# --- the hub cache layout ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SnapshotFile:
    """One file of a snapshot: its path in the repo, its etag (= its blob's name) and its size."""

    path: str
    etag: str
    size: int


@dataclass(frozen=True)
class SnapshotInfo:
    """A snapshot in a hub cache: where it is, its commit, the refs that name it and its files."""

    cache_dir: Path
    repo_id: str
    commit: str
    refs: tuple[str, ...]
    files: tuple[SnapshotFile, ...]

    @property
    def repo_dir(self) -> Path:
        return self.cache_dir / repo_folder(self.repo_id)

    @property
    def snapshot_path(self) -> Path:
        return self.repo_dir / "snapshots" / self.commit

    @property
    def total_bytes(self) -> int:
        """The bytes of all its files."""
        return sum(f.size for f in self.files)

    @property
    def etags(self) -> dict[str, str]:
        return {f.path: f.etag for f in self.files}

    def blob(self, path: str) -> Path:
        return self.repo_dir / "blobs" / self.etags[path]

    def link(self, path: str) -> Path:
        return self.snapshot_path / path


def _check_relative(path: str, what: str) -> None:
    parts = PurePosixPath(path).parts
    if not path or path.startswith("/") or ".." in parts or "." in parts or "\\" in path:
        raise ValueError(f"{what} {path!r} is not a path relative to the repo")


def write_hub_snapshot(
    cache_dir: Path,
    repo_id: str,
    files: Mapping[str, bytes | Path],
    *,
    commit: str | None = None,
    refs: Sequence[str] = ("main",),
) -> SnapshotInfo:
    """Write a snapshot of ``repo_id`` into the hub cache ``cache_dir`` and return it.

    ``files`` maps each path in the repo to its content: bytes, or a file already written (moved into
    ``blobs/``, so a large shard is never held in memory). ``commit`` defaults to :func:`content_commit`; each of
    ``refs`` (a branch ``main``, a tag ``v1.0``, a pull request ``refs/pr/1``) is written pointing to it. Writing
    the same snapshot again replaces it in place.
    """
    if commit is not None and not _COMMIT.fullmatch(commit):
        raise ValueError(f"commit {commit!r} is not 40 lowercase hex digits")
    repo_dir = cache_dir / repo_folder(repo_id)
    blobs = repo_dir / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    written: list[SnapshotFile] = []
    for path, content in sorted(files.items()):
        _check_relative(path, "file")
        if isinstance(content, Path):
            etag, size = file_etag(path, content), content.stat().st_size
            shutil.move(content, blobs / etag)
        else:
            etag, size = etag_of(path, content), len(content)
            (blobs / etag).write_bytes(content)
        written.append(SnapshotFile(path, etag, size))
    info = SnapshotInfo(cache_dir, repo_id, commit or content_commit({f.path: f.etag for f in written}), tuple(refs), tuple(written))
    for item in written:
        link = info.link(item.path)
        link.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(link):
            link.unlink()
        os.symlink(os.path.relpath(blobs / item.etag, link.parent), link)
    for ref in refs:
        _check_relative(ref, "ref")
        ref_file = repo_dir / "refs" / ref
        ref_file.parent.mkdir(parents=True, exist_ok=True)
        ref_file.write_text(info.commit)  # huggingface_hub writes the bare hash, no newline
    return info


def read_hub_snapshot(cache_dir: Path, repo_id: str, revision: str = "main") -> SnapshotInfo:
    """Read back the snapshot that ``revision`` (a ref or a commit) names in the hub cache ``cache_dir``.

    The etag of each file is the name of the blob its link points to; the refs are those naming the commit.
    """
    repo_dir = cache_dir / repo_folder(repo_id)
    ref_file = repo_dir / "refs" / revision
    commit = ref_file.read_text().strip() if ref_file.is_file() else revision
    snapshot = repo_dir / "snapshots" / commit
    if not _COMMIT.fullmatch(commit) or not snapshot.is_dir():
        raise FileNotFoundError(f"revision {revision!r} of {repo_id} is not in the cache {cache_dir}")
    links = {p.relative_to(snapshot).as_posix(): p for p in snapshot.rglob("*") if p.is_symlink()}
    files = [SnapshotFile(path, Path(os.readlink(link)).name, link.stat().st_size) for path, link in sorted(links.items())]
    refs_dir = repo_dir / "refs"
    refs = sorted(p.relative_to(refs_dir).as_posix() for p in refs_dir.rglob("*") if p.is_file() and p.read_text().strip() == commit)
    return SnapshotInfo(cache_dir, repo_id, commit, tuple(refs), tuple(files))


# --- the model ---------------------------------------------------------------------------------------------


# Per dtype: the unsigned integer type of its bits, which bits of a random word to keep and which to set so the
# value is a normal number of magnitude in [2**-7, 2**-3) (never inf/NaN), and the bits of 1.0 (norm weights).
_BITS: dict[Dtype, tuple[str, int, int, int]] = {
    "BF16": ("<u2", 0x81FF, 0x3C00, 0x3F80),
    "F16": ("<u2", 0x87FF, 0x2000, 0x3C00),
    "F32": ("<u4", 0x81FFFFFF, 0x3C000000, 0x3F800000),
}
_DTYPE_NAME: dict[Dtype, str] = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}  # torch's, and TensorSpec's

LAYERS = 8
EXPERTS = 8
EXPERTS_PER_TOKEN = 2
VOCAB = 4096
HIDDEN_SIZES = (64, 128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")  # ids 256, 257, 258 after the 256 byte tokens
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@dataclass(frozen=True)
class MoeShape:
    """The dimensions of the generated Qwen3-MoE model."""

    hidden_size: int
    moe_intermediate_size: int
    num_hidden_layers: int = LAYERS
    num_experts: int = EXPERTS
    vocab_size: int = VOCAB

    @property
    def num_attention_heads(self) -> int:
        return max(4, self.hidden_size // 64)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def num_key_value_heads(self) -> int:
        return max(2, self.num_attention_heads // 4)

    def tensors(self) -> list[tuple[str, tuple[int, ...], bool]]:
        """``(name, shape, is_norm)`` of every weight, in transformers' state-dict order."""
        h, i, hd = self.hidden_size, self.moe_intermediate_size, self.head_dim
        q, kv = self.num_attention_heads * hd, self.num_key_value_heads * hd
        out: list[tuple[str, tuple[int, ...], bool]] = [("model.embed_tokens.weight", (self.vocab_size, h), False)]
        for layer in range(self.num_hidden_layers):
            p = f"model.layers.{layer}."
            out += [
                (p + "self_attn.q_proj.weight", (q, h), False),
                (p + "self_attn.k_proj.weight", (kv, h), False),
                (p + "self_attn.v_proj.weight", (kv, h), False),
                (p + "self_attn.o_proj.weight", (h, q), False),
                (p + "self_attn.q_norm.weight", (hd,), True),
                (p + "self_attn.k_norm.weight", (hd,), True),
                (p + "mlp.gate.weight", (self.num_experts, h), False),
            ]
            for expert in range(self.num_experts):
                e = f"{p}mlp.experts.{expert}."
                out += [(e + "gate_proj.weight", (i, h), False), (e + "up_proj.weight", (i, h), False), (e + "down_proj.weight", (h, i), False)]
            out += [(p + "input_layernorm.weight", (h,), True), (p + "post_attention_layernorm.weight", (h,), True)]
        out += [("model.norm.weight", (h,), True), ("lm_head.weight", (self.vocab_size, h), False)]
        return out

    def parameters(self) -> int:
        return sum(math.prod(shape) for _name, shape, _norm in self.tensors())

    def config(self, dtype: Dtype) -> dict[str, t.Any]:
        """``config.json`` of the model."""
        h = self.hidden_size
        return {
            "architectures": ["Qwen3MoeForCausalLM"],
            "attention_bias": False,
            "attention_dropout": 0.0,
            "bos_token_id": 256,
            "decoder_sparse_step": 1,
            "eos_token_id": 258,
            "head_dim": self.head_dim,
            "hidden_act": "silu",
            "hidden_size": h,
            "initializer_range": 0.02,
            "intermediate_size": 3 * h,
            "max_position_embeddings": 4096,
            "max_window_layers": self.num_hidden_layers,
            "mlp_only_layers": [],
            "model_type": "qwen3_moe",
            "moe_intermediate_size": self.moe_intermediate_size,
            "norm_topk_prob": True,
            "num_attention_heads": self.num_attention_heads,
            "num_experts": self.num_experts,
            "num_experts_per_tok": EXPERTS_PER_TOKEN,
            "num_hidden_layers": self.num_hidden_layers,
            "num_key_value_heads": self.num_key_value_heads,
            "output_router_logits": False,
            "rms_norm_eps": 1e-06,
            "rope_scaling": None,
            "rope_theta": 1000000.0,
            "router_aux_loss_coef": 0.001,
            "sliding_window": None,
            "tie_word_embeddings": False,
            "torch_dtype": _DTYPE_NAME[dtype],
            "transformers_version": "4.51.0",
            "use_cache": True,
            "use_sliding_window": False,
            "vocab_size": self.vocab_size,
        }


def _byte_tokens() -> list[str]:
    """GPT-2's byte-to-unicode table: the 256 base tokens of a byte-level BPE, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


def _text_files(shape: MoeShape, dtype: Dtype) -> dict[str, bytes]:
    """The model's JSON files but the index: config, generation config and a byte-level BPE tokenizer."""
    special = {256 + n: token for n, token in enumerate(SPECIAL_TOKENS)}
    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
    added = [{"id": i, "content": token, **flags} for i, token in special.items()]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    tokenizer: dict[str, t.Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {**byte_level, "use_regex": True},
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {tok: i for i, tok in enumerate(_byte_tokens())},
            "merges": [],
        },
    }
    tokenizer_config = {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": {str(i): {k: v for k, v in a.items() if k != "id"} for i, a in zip(special, added, strict=True)},
        "bos_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 4096,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": None,
    }
    generation = {"bos_token_id": 256, "eos_token_id": [258, 256], "pad_token_id": 256, "do_sample": True, "temperature": 0.7, "top_k": 20, "top_p": 0.8}
    return {
        "config.json": json_bytes(shape.config(dtype)),
        "generation_config.json": json_bytes({**generation, "transformers_version": "4.51.0"}),
        "tokenizer.json": json_bytes(tokenizer),
        "tokenizer_config.json": json_bytes(tokenizer_config),
    }


def _overhead(shape: MoeShape, shards: int, dtype: Dtype) -> int:
    """The bytes of everything but tensor data: the JSON files, the index and the shards' headers (estimated)."""
    names = [name for name, _shape, _norm in shape.tensors()]
    shard = len(shard_name(1, shards))
    index = sum(len(name) + shard + 10 for name in names) + 64
    headers = sum(len(name) + 64 for name in names) + shards * 48
    return sum(len(d) for d in _text_files(shape, dtype).values()) + index + headers


def plan_model(total_bytes: int, shards: int = 1, dtype: Dtype = "BF16") -> MoeShape:
    """The model whose files total about ``total_bytes``: the widest hidden size whose experts are at least half
    as wide, then the expert width that comes closest (a multiple of the largest power of two from 64 down to 2
    that stays within 1%, so tensor parallelism over 2 nodes splits every dimension evenly)."""
    item = np.dtype(_BITS[dtype][0]).itemsize
    for hidden in reversed(HIDDEN_SIZES):
        base = MoeShape(hidden, 0)
        budget = (total_bytes - _overhead(MoeShape(hidden, hidden), shards, dtype)) / item - base.parameters()
        width = budget / (LAYERS * EXPERTS * 3 * hidden)
        if width >= hidden / 2 or (hidden == HIDDEN_SIZES[0] and width >= 1.5):
            for step in (64, 32, 16, 8, 4, 2):
                rounded = max(step, round(width / step) * step)
                if abs(rounded - width) * LAYERS * EXPERTS * 3 * hidden * item <= total_bytes / 100:
                    break
            return MoeShape(hidden, rounded)
    smallest = MoeShape(HIDDEN_SIZES[0], 2)
    least = smallest.parameters() * item + _overhead(smallest, shards, dtype)
    raise ValueError(f"{total_bytes} bytes is too small for the model: it needs at least {least} bytes ({least / 1e6:.1f} MB)")


def split_shards(sizes: Sequence[int], shards: int) -> list[int]:
    """The shard (0-based) of each tensor: contiguous runs of about equal bytes, none empty."""
    if not 1 <= shards <= len(sizes):
        raise ValueError(f"{len(sizes)} tensors do not split into {shards} non-empty shards")
    total = sum(sizes)
    owner: list[int] = []
    current, done = 0, 0
    for n, size in enumerate(sizes):
        left_tensors, left_shards = len(sizes) - n, shards - current - 1
        if done > 0 and left_shards > 0 and (left_tensors == left_shards or done + size / 2 > (current + 1) * total / shards):
            current += 1
        owner.append(current)
        done += size
    return owner


def _random_bits(rng: np.random.Generator, count: int, dtype: Dtype) -> npt.NDArray[t.Any]:
    """``count`` random but finite, small values of ``dtype``, as its raw bits."""
    view, keep, put, _one = _BITS[dtype]
    words = np.dtype(view).itemsize // 2
    bits = rng.integers(0, 1 << 16, size=count * words, dtype=np.uint16).view(view)
    np.bitwise_and(bits, keep, out=bits)
    np.bitwise_or(bits, put, out=bits)
    return bits


def _write_shards(staging: Path, shape: MoeShape, shards: int, dtype: Dtype, seed: int) -> tuple[dict[str, Path], bytes]:
    """Write the safetensors shards into ``staging``; return them and the index's content."""
    view, _keep, _put, one = _BITS[dtype]
    item = np.dtype(view).itemsize
    tensors = shape.tensors()
    owner = split_shards([math.prod(s) * item for _n, s, _norm in tensors], shards)
    rng = np.random.default_rng(seed)
    written: dict[str, Path] = {}
    weight_map: dict[str, str] = {}
    total = 0
    for index in range(shards):
        name = shard_name(index + 1, shards)
        arrays: list[npt.NDArray[t.Any]] = []  # keep the buffers alive while safetensors reads them
        specs: dict[str, TensorSpec] = {}
        for (tensor, dims, norm), where in zip(tensors, owner, strict=True):
            if where != index:
                continue
            count = math.prod(dims)
            bits = np.full(count, one, dtype=view) if norm else _random_bits(rng, count, dtype)
            arrays.append(bits)
            specs[tensor] = TensorSpec(dtype=_DTYPE_NAME[dtype], shape=list(dims), data_ptr=bits.ctypes.data, data_len=bits.nbytes)
            weight_map[tensor] = name
            total += bits.nbytes
        serialize_file(specs, staging / name, metadata={"format": "pt"})
        written[name] = staging / name
    return written, json_bytes({"metadata": {"total_size": total}, "weight_map": weight_map})


def build_hub_cache(
    cache_dir: Path,
    repo_id: str,
    *,
    total_bytes: int,
    shards: int,
    revision: str = "main",
    seed: int = 0,
    dtype: Dtype = "BF16",
) -> SnapshotInfo:
    """Write a Qwen3-MoE model of about ``total_bytes`` (all files) in ``shards`` safetensors shards into the hub
    cache ``cache_dir`` as ``repo_id`` at ``revision`` (a branch or tag), and return its snapshot.

    The weights are random from ``seed``; the commit derives from the content (:func:`content_commit`). Shards are
    staged in a temporary folder of ``cache_dir`` and moved into ``blobs/``.
    """
    validate_repo_id(repo_id)
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if _COMMIT.fullmatch(revision):
        raise ValueError(f"revision {revision!r} looks like a commit: give a branch or tag, the commit derives from the content")
    tensors = len(MoeShape(HIDDEN_SIZES[0], 2).tensors())
    if not 1 <= shards <= tensors:
        raise ValueError(f"shards must be 1 to {tensors} (the model has {tensors} tensors), not {shards}")
    shape = plan_model(total_bytes, shards, dtype)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".staging-", dir=cache_dir) as staging:
        weights, index = _write_shards(Path(staging), shape, shards, dtype, seed)
        files: dict[str, bytes | Path] = {**_text_files(shape, dtype), INDEX: index, **weights}
        return write_hub_snapshot(cache_dir, repo_id, files, refs=(revision,))


# --- the lab: a store of built models on the host, and seeding a node ------------------------------------------


def ensure_model(
    store: Path,
    repo_id: str,
    *,
    total_bytes: int,
    shards: int,
    revision: str = "main",
    seed: int = 0,
    dtype: Dtype = "BF16",
) -> SnapshotInfo:
    """The model built by :func:`build_hub_cache`, kept under ``store/<repo>-<bytes>-<shards>-<key>/hub``.

    A copy built before with the same arguments (and builder version) is reused; otherwise it is built in a
    temporary folder and renamed into place, so a build that was interrupted is never reused.
    """
    key = {"builder": BUILDER_VERSION, "repo_id": repo_id, "total_bytes": total_bytes, "shards": shards, "revision": revision, "seed": seed, "dtype": dtype}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:8]
    home = store / f"{repo_folder(repo_id).removeprefix('models--')}-{total_bytes}-{shards}-{digest}"
    stamp = home / "build.json"
    if stamp.is_file() and json.loads(stamp.read_text()).get("key") == key:
        log(f"reusing {home}")
        return read_hub_snapshot(home / "hub", repo_id, revision)
    store.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{home.name}.", dir=store))
    try:
        info = build_hub_cache(building / "hub", repo_id, total_bytes=total_bytes, shards=shards, revision=revision, seed=seed, dtype=dtype)
        (building / "build.json").write_text(json.dumps({"key": key, "commit": info.commit, "total_bytes": info.total_bytes}, indent=2) + "\n")
        shutil.rmtree(home, ignore_errors=True)
        building.rename(home)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    log(f"built {repo_id} ({info.total_bytes} bytes, {shards} shards) in {home}")
    return replace(info, cache_dir=home / "hub")


def pipe(producer: Sequence[str], consumer: Sequence[str]) -> None:
    """Run ``producer | consumer``; raise LabError naming the command that failed."""
    src = subprocess.Popen(list(producer), stdout=subprocess.PIPE)
    try:
        dst = subprocess.Popen(list(consumer), stdin=src.stdout, stderr=subprocess.PIPE, text=True)
    except BaseException:
        src.kill()
        src.wait()
        raise
    finally:
        if src.stdout is not None:
            src.stdout.close()  # the consumer holds the pipe now: the producer sees it close if the consumer exits
    _out, err = dst.communicate()
    src_rc = src.wait()
    for argv, rc, detail in ((consumer, dst.returncode, err.strip()), (producer, src_rc, "")):
        if rc != 0:
            raise LabError(f"command failed (rc={rc}): {' '.join(argv)}" + (f"\n{detail}" if detail else ""))


def seed_commands(node: str, host_cache: Path, repo_id: str, cache_dir: str = NODE_HUB_CACHE) -> list[list[str]]:
    """The commands that copy ``repo_id`` from the host's hub cache into ``node``'s, replacing what is there.

    The last two are a pipe: tar on the host into tar in the node, which keeps the relative symlinks of the
    snapshot as they are (and makes the files root's).
    """
    folder = repo_folder(repo_id)
    return [
        ["podman", "exec", node, "rm", "-rf", f"{cache_dir}/{folder}"],
        ["podman", "exec", node, "mkdir", "-p", cache_dir],
        ["tar", "-C", str(host_cache), "-cf", "-", folder],
        ["podman", "exec", "-i", node, "tar", "-C", cache_dir, "--no-same-owner", "-xf", "-"],
    ]


def seed_node(
    node: str,
    repo_id: str,
    *,
    total_bytes: int,
    shards: int,
    cache_dir: str = NODE_HUB_CACHE,
    store: Path | None = None,
    revision: str = "main",
    seed: int = 0,
    dtype: Dtype = "BF16",
) -> SnapshotInfo:
    """Put the model :func:`build_hub_cache` makes into the hub cache ``cache_dir`` of the lab node ``node``.

    The model is built on the host, kept in ``store`` (see :func:`ensure_model`) or, without one, in a temporary
    folder removed afterwards. Any copy of ``repo_id`` already in the node's cache is replaced. Returns the
    snapshot with its paths in the node.
    """
    if not PurePosixPath(cache_dir).is_absolute():
        raise ValueError(f"cache dir {cache_dir!r} must be an absolute path in the node")
    if run(["podman", "container", "exists", node], check=False, capture=True).returncode != 0:
        raise LabError(f"node {node} does not exist (is the lab up? 'make lab-up')")
    with tempfile.TemporaryDirectory(prefix="spark-lab-model-") as scratch:
        kwargs: dict[str, t.Any] = {"total_bytes": total_bytes, "shards": shards, "revision": revision, "seed": seed, "dtype": dtype}
        info = ensure_model(store, repo_id, **kwargs) if store is not None else build_hub_cache(Path(scratch) / "hub", repo_id, **kwargs)
        remove, mkdir, tar_out, tar_in = seed_commands(node, info.cache_dir, repo_id, cache_dir)
        run(remove, capture=True)
        run(mkdir, capture=True)
        pipe(tar_out, tar_in)
    seeded = replace(info, cache_dir=Path(cache_dir))
    ref = f"{seeded.repo_dir}/refs/{revision}"
    found = run(["podman", "exec", node, "cat", ref], capture=True).stdout.strip()
    if found != info.commit:
        raise LabError(f"node {node}: {ref} holds {found!r} after seeding, expected {info.commit}")
    log(f"seeded {node}:{seeded.snapshot_path} ({info.total_bytes} bytes, {shards} shards)")
    return seeded
