# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for sparklab.hf_model (the lab's Hugging Face model builder) and spark_lab.py seed-model.

The caches are checked against independent computations (hashes, the safetensors format, the Qwen3-MoE tensor
shapes) and against huggingface_hub's own reading of a cache. No podman: the seed-model tests record the
commands instead of running them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import subprocess
import typing as t
from pathlib import Path

import numpy as np
import pytest
import spark_lab
from safetensors import safe_open
from sparklab import hf_model
from sparklab.hf_model import INDEX, SnapshotInfo, build_hub_cache, parse_size, read_hub_snapshot, shard_name, write_hub_snapshot
from sparklab.run import LabError

REPO = "sparkops-lab/tiny-moe"
FOLDER = "models--sparkops-lab--tiny-moe"
MB = 1_000_000
TEXT_FILES = ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"]
ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4}


def build(root: Path, size: int = 3 * MB, shards: int = 3, **kwargs: t.Any) -> SnapshotInfo:
    return build_hub_cache(root, REPO, total_bytes=size, shards=shards, **kwargs)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> SnapshotInfo:
    """One 3 MB, 3-shard model, shared by the read-only tests."""
    return build(tmp_path_factory.mktemp("hub"))


def read_header(path: Path) -> tuple[dict[str, t.Any], int]:
    """The JSON header of a safetensors file, and where its data starts (read by hand, not with safetensors)."""
    with path.open("rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(length)), 8 + length


def tree(root: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry under ``root``: ('link', target), ('file', content) or ('dir', '')."""
    entries: dict[str, tuple[str, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            entries[rel] = ("link", os.readlink(path))
        elif path.is_file():
            entries[rel] = ("file", path.read_bytes())
        else:
            entries[rel] = ("dir", "")
    return entries


# --- layout ----------------------------------------------------------------------------------------------


def test_layout_is_the_hub_cache(model: SnapshotInfo) -> None:
    repo = model.cache_dir / FOLDER
    assert sorted(p.name for p in model.cache_dir.iterdir()) == [FOLDER]  # no staging left behind
    assert sorted(p.name for p in repo.iterdir()) == ["blobs", "refs", "snapshots"]
    assert [p.name for p in (repo / "snapshots").iterdir()] == [model.commit]
    assert (repo / "refs" / "main").read_bytes() == model.commit.encode()  # no newline, as huggingface_hub writes it
    shards = [shard_name(i, 3) for i in (1, 2, 3)]
    assert sorted(f.path for f in model.files) == sorted([*TEXT_FILES, INDEX, *shards])
    assert sorted(p.name for p in model.snapshot_path.iterdir()) == sorted(f.path for f in model.files)
    assert sorted(p.name for p in (repo / "blobs").iterdir()) == sorted(f.etag for f in model.files)


def test_links_are_relative_and_named_by_the_hash_of_their_content(model: SnapshotInfo) -> None:
    for item in model.files:
        link = model.snapshot_path / item.path
        target = os.readlink(link)
        assert target == f"../../blobs/{item.etag}"
        data = link.read_bytes()  # resolves
        assert link.resolve() == (model.repo_dir / "blobs" / item.etag).resolve()
        if item.path.endswith(".safetensors"):
            assert item.etag == hashlib.sha256(data).hexdigest()
        else:
            assert item.etag == hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        assert item.size == len(data)
    assert model.total_bytes == sum(f.size for f in model.files)


def test_commit_is_40_hex_derived_from_the_content(model: SnapshotInfo) -> None:
    listing = "".join(f"{f.path}\0{f.etag}\n" for f in sorted(model.files, key=lambda f: f.path))
    assert model.commit == hashlib.sha1(listing.encode()).hexdigest()


def test_read_back_equals_what_was_written(model: SnapshotInfo) -> None:
    assert read_hub_snapshot(model.cache_dir, REPO) == model
    assert read_hub_snapshot(model.cache_dir, REPO, model.commit) == model
    with pytest.raises(FileNotFoundError):
        read_hub_snapshot(model.cache_dir, REPO, "v9")


def test_huggingface_hub_sees_one_repo_with_one_revision(model: SnapshotInfo) -> None:
    from huggingface_hub import scan_cache_dir

    info = scan_cache_dir(model.cache_dir)
    assert info.warnings == []
    (repo,) = info.repos
    assert (repo.repo_id, repo.repo_type) == (REPO, "model")
    (revision,) = repo.revisions
    assert revision.commit_hash == model.commit
    assert "main" in revision.refs
    assert revision.nb_files == len(model.files)
    assert revision.size_on_disk == model.total_bytes
    assert sorted(f.file_name for f in revision.files) == sorted(f.path for f in model.files)


def test_write_hub_snapshot_with_commit_refs_nested_and_shared_files(tmp_path: Path) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    files: dict[str, bytes | Path] = {"config.json": b"{}\n", "copy.json": b"{}\n", "original/params.json": b'{"dim": 8}\n'}
    info = write_hub_snapshot(tmp_path, REPO, files, commit=commit, refs=("main", "v1.0", "refs/pr/1"))
    assert info.commit == commit
    assert os.readlink(info.link("original/params.json")).startswith("../../../blobs/")
    assert info.etags["config.json"] == info.etags["copy.json"]
    assert len(list((info.repo_dir / "blobs").iterdir())) == 2
    assert read_hub_snapshot(tmp_path, REPO, "refs/pr/1").refs == ("main", "refs/pr/1", "v1.0")
    with pytest.raises(ValueError, match="not a path relative to the repo"):
        write_hub_snapshot(tmp_path, REPO, {"../x": b""})
    with pytest.raises(ValueError, match="is not 40 lowercase hex digits"):
        write_hub_snapshot(tmp_path, REPO, files, commit="main")


# --- determinism and size --------------------------------------------------------------------------------


def test_same_arguments_give_a_byte_identical_cache(tmp_path: Path, model: SnapshotInfo) -> None:
    again = build(tmp_path / "again")
    assert again.commit == model.commit
    assert tree(tmp_path / "again") == tree(model.cache_dir)


def test_another_seed_gives_other_weights_same_config(tmp_path: Path, model: SnapshotInfo) -> None:
    other = build(tmp_path, seed=1)
    assert other.commit != model.commit
    assert other.etags["config.json"] == model.etags["config.json"]
    for name in (shard_name(i, 3) for i in (1, 2, 3)):
        assert other.etags[name] != model.etags[name]


@pytest.mark.parametrize(("size", "shards"), [("1.6MB", 1), ("2MB", 2), ("5MB", 3), ("12MiB", 5), ("40MB", 4)])
def test_size_within_5_percent(tmp_path: Path, size: str, shards: int) -> None:
    wanted = parse_size(size)
    info = build(tmp_path, wanted, shards)
    assert abs(info.total_bytes - wanted) <= wanted * 0.05, (info.total_bytes, wanted)
    assert sum(p.stat().st_size for p in (info.repo_dir / "blobs").iterdir()) == info.total_bytes


@pytest.mark.parametrize("shards", [1, 2, 7])
def test_shard_count_and_names(tmp_path: Path, shards: int) -> None:
    info = build(tmp_path, 2 * MB, shards)
    names = sorted(f.path for f in info.files if f.path.endswith(".safetensors"))
    assert names == [f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
    index = json.loads(info.link(INDEX).read_bytes())
    assert sorted(set(index["weight_map"].values())) == names  # every shard holds tensors


def test_shards_are_about_equal(tmp_path: Path) -> None:
    info = build(tmp_path, 20 * MB, 4)
    sizes = [f.size for f in info.files if f.path.endswith(".safetensors")]
    assert max(sizes) < 1.5 * min(sizes), sizes


# --- the files are a real model --------------------------------------------------------------------------


def test_index_agrees_with_the_shards(model: SnapshotInfo) -> None:
    index = json.loads(model.link(INDEX).read_bytes())
    found: dict[str, str] = {}
    data_bytes = 0
    for name in sorted(set(index["weight_map"].values())):
        path = model.link(name)
        header, start = read_header(path)
        assert header.pop("__metadata__") == {"format": "pt"}
        for tensor, entry in header.items():
            begin, end = entry["data_offsets"]
            assert end - begin == math.prod(entry["shape"]) * ITEMSIZE[entry["dtype"]]
            found[tensor] = name
            data_bytes += end - begin
        assert start + max(e["data_offsets"][1] for e in header.values()) == path.stat().st_size
    assert found == index["weight_map"]
    assert index["metadata"]["total_size"] == data_bytes


def expected_shapes(config: dict[str, t.Any]) -> dict[str, list[int]]:
    """The weights of transformers' Qwen3MoeForCausalLM for ``config`` (untied embeddings, every layer MoE)."""
    h, hd, inter = config["hidden_size"], config["head_dim"], config["moe_intermediate_size"]
    q, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    shapes = {"model.embed_tokens.weight": [config["vocab_size"], h], "model.norm.weight": [h], "lm_head.weight": [config["vocab_size"], h]}
    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        shapes |= {
            p + "self_attn.q_proj.weight": [q, h],
            p + "self_attn.k_proj.weight": [kv, h],
            p + "self_attn.v_proj.weight": [kv, h],
            p + "self_attn.o_proj.weight": [h, q],
            p + "self_attn.q_norm.weight": [hd],
            p + "self_attn.k_norm.weight": [hd],
            p + "mlp.gate.weight": [config["num_experts"], h],
            p + "input_layernorm.weight": [h],
            p + "post_attention_layernorm.weight": [h],
        }
        for e in range(config["num_experts"]):
            shapes |= {f"{p}mlp.experts.{e}.{w}.weight": [inter, h] for w in ("gate_proj", "up_proj")}
            shapes[f"{p}mlp.experts.{e}.down_proj.weight"] = [h, inter]
    return shapes


@pytest.mark.parametrize("total", [3 * MB, 40 * MB])
def test_config_is_a_qwen3_moe_whose_tensors_match_it(tmp_path: Path, total: int, model: SnapshotInfo) -> None:
    info = model if total == 3 * MB else build(tmp_path, total, 4)
    config = json.loads(info.link("config.json").read_bytes())
    assert config["architectures"] == ["Qwen3MoeForCausalLM"] and config["model_type"] == "qwen3_moe"
    assert config["num_experts"] > config["num_experts_per_tok"] >= 1 and config["torch_dtype"] == "bfloat16"
    assert config["num_attention_heads"] % config["num_key_value_heads"] == 0
    for key in ("num_attention_heads", "num_key_value_heads", "moe_intermediate_size"):
        assert config[key] % 2 == 0, f"{key} splits over tensor parallelism 2"
    index = json.loads(info.link(INDEX).read_bytes())
    shapes: dict[str, list[int]] = {}
    for name in set(index["weight_map"].values()):
        header, _start = read_header(info.link(name))
        shapes |= {k: v["shape"] for k, v in header.items() if k != "__metadata__"}
    assert shapes == expected_shapes(config)


def test_tokenizer_and_generation_config(model: SnapshotInfo) -> None:
    tokenizer = json.loads(model.link("tokenizer.json").read_bytes())
    vocab = tokenizer["model"]["vocab"]
    assert tokenizer["model"]["type"] == "BPE" and len(vocab) == 256 and sorted(vocab.values()) == list(range(256))
    added = {a["content"]: a["id"] for a in tokenizer["added_tokens"]}
    assert added == {"<|endoftext|>": 256, "<|im_start|>": 257, "<|im_end|>": 258}
    config = json.loads(model.link("config.json").read_bytes())
    assert max(added.values()) < config["vocab_size"]
    tokenizer_config = json.loads(model.link("tokenizer_config.json").read_bytes())
    assert tokenizer_config["eos_token"] in added and "<|im_start|>" in tokenizer_config["chat_template"]
    generation = json.loads(model.link("generation_config.json").read_bytes())
    assert set(generation["eos_token_id"]) <= set(added.values())


@pytest.mark.parametrize("dtype", ["F16", "F32"])
def test_safe_open_reads_every_tensor(tmp_path: Path, dtype: hf_model.Dtype) -> None:
    info = build(tmp_path, 4 * MB, 2, dtype=dtype)
    assert json.loads(info.link("config.json").read_bytes())["torch_dtype"] == {"F16": "float16", "F32": "float32"}[dtype]
    index = json.loads(info.link(INDEX).read_bytes())
    for name in sorted(set(index["weight_map"].values())):
        with safe_open(str(info.link(name)), framework="numpy") as f:
            for tensor in f.keys():  # noqa: SIM118 (safe_open is not a mapping)
                array = f.get_tensor(tensor)
                assert array.dtype == {"F16": np.float16, "F32": np.float32}[dtype]
                assert index["weight_map"][tensor] == name
                assert np.isfinite(array).all()
                if tensor.endswith("norm.weight"):
                    assert (array == 1).all()
                else:
                    assert float(np.abs(array).min()) >= 2**-7 and float(np.abs(array).max()) < 0.125
                    assert float(array.std()) > 0


def test_safe_open_reads_bf16_shards(model: SnapshotInfo) -> None:
    """numpy has no bfloat16: safetensors gives dtype and shape, the values are read from the bits."""
    index = json.loads(model.link(INDEX).read_bytes())
    for name in sorted(set(index["weight_map"].values())):
        header, start = read_header(model.link(name))
        raw = model.link(name).read_bytes()
        with safe_open(str(model.link(name)), framework="numpy") as f:
            assert sorted(f.keys()) == sorted(k for k in header if k != "__metadata__")
            for tensor in f.keys():  # noqa: SIM118
                view = f.get_slice(tensor)
                assert view.get_dtype() == "BF16" and view.get_shape() == header[tensor]["shape"]
                begin, end = header[tensor]["data_offsets"]
                values = (np.frombuffer(raw[start + begin : start + end], dtype="<u2").astype("<u4") << 16).view("<f4")
                assert np.isfinite(values).all()
                assert (values == 1).all() if tensor.endswith("norm.weight") else float(np.abs(values).max()) < 0.125


# --- arguments -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("40MB", 40 * MB),
        ("1GB", 10**9),
        ("1GiB", 2**30),
        ("512KiB", 512 * 1024),
        ("1.5GB", 1_500_000_000),
        ("40M", 40 * MB),
        ("1000", 1000),
        (" 2 mb ", 2 * MB),
    ],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "MB", "1iB", "-1MB", "1XB", "1 GBs"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="is not a size"):
        parse_size(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"total_bytes": 100_000}, "too small for the model"),
        ({"shards": 0}, "shards must be 1 to"),
        ({"shards": 100_000}, "shards must be 1 to"),
        ({"revision": "0123456789abcdef0123456789abcdef01234567"}, "looks like a commit"),
        ({"dtype": "F8"}, "dtype must be one of"),
        ({"repo_id": "a/b/c"}, "is not a Hugging Face repo id"),
        ({"repo_id": "a--b/c"}, "is not a Hugging Face repo id"),
    ],
)
def test_bad_arguments(tmp_path: Path, kwargs: dict[str, t.Any], message: str) -> None:
    args: dict[str, t.Any] = {"repo_id": REPO, "total_bytes": 2 * MB, "shards": 2} | kwargs
    with pytest.raises(ValueError, match=message):
        build_hub_cache(tmp_path, **args)


# --- the store and seeding a node ------------------------------------------------------------------------


def test_ensure_model_builds_once_then_reuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = hf_model.ensure_model(tmp_path, REPO, total_bytes=2 * MB, shards=2)
    home = first.cache_dir.parent
    assert home.parent == tmp_path and home.name.startswith("sparkops-lab--tiny-moe-2000000-2-")
    assert json.loads((home / "build.json").read_text())["commit"] == first.commit
    assert sorted(p.name for p in tmp_path.iterdir()) == [home.name]  # no temporary folder left

    def no_build(*args: t.Any, **kwargs: t.Any) -> SnapshotInfo:
        raise AssertionError("rebuilt a model that is in the store")

    monkeypatch.setattr(hf_model, "build_hub_cache", no_build)
    assert hf_model.ensure_model(tmp_path, REPO, total_bytes=2 * MB, shards=2) == first
    with pytest.raises(AssertionError, match="rebuilt"):
        hf_model.ensure_model(tmp_path, REPO, total_bytes=2 * MB, shards=2, seed=1)


def test_tar_pipe_keeps_the_links(tmp_path: Path, model: SnapshotInfo) -> None:
    """The seed commands' tar | tar, run locally: the copy is the same cache, huggingface_hub agrees."""
    from huggingface_hub import scan_cache_dir

    dest = tmp_path / "node-cache"
    dest.mkdir()
    tar_out, tar_in = hf_model.seed_commands("spark-head", model.cache_dir, REPO, str(dest))[-2:]
    assert tar_in[:4] == ["podman", "exec", "-i", "spark-head"]
    hf_model.pipe(tar_out, tar_in[4:])
    assert tree(dest) == tree(model.cache_dir)
    ((repo,),) = [scan_cache_dir(dest).repos]
    assert [r.commit_hash for r in repo.revisions] == [model.commit]


def test_pipe_reports_the_failing_side(tmp_path: Path) -> None:
    out = tmp_path / "out"
    hf_model.pipe(["printf", "abc"], ["sh", "-c", f"cat > {out}"])
    assert out.read_text() == "abc"
    with pytest.raises(LabError, match=r"command failed \(rc=3\): sh -c cat >/dev/null; exit 3"):
        hf_model.pipe(["printf", "abc"], ["sh", "-c", "cat >/dev/null; exit 3"])
    with pytest.raises(LabError, match=r"command failed \(rc=1\): false"):
        hf_model.pipe(["false"], ["cat"])


class FakePodman:
    """Records what seed-model runs; ``cat`` of a ref answers what the host's copy holds."""

    def __init__(self, exists: bool = True, ref: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.exists = exists
        self.ref = ref
        self.source: Path | None = None
        self.refs: dict[str, str] = {}  # what the host's copy held when it was piped

    def run(self, argv: t.Sequence[str], *, check: bool = True, capture: bool = False, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        rc, stdout = 0, ""
        if argv[:3] == ["podman", "container", "exists"]:
            rc = 0 if self.exists else 1
        elif argv[3:4] == ["cat"]:  # podman exec NODE cat <cache>/<folder>/refs/<revision>
            stdout = self.ref if self.ref is not None else self.refs[argv[4].split("/refs/", 1)[1]]
        return subprocess.CompletedProcess(list(argv), rc, stdout, "")

    def pipe(self, producer: t.Sequence[str], consumer: t.Sequence[str]) -> None:
        self.calls.append(["PIPE", *producer, "|", *consumer])
        self.source = Path(producer[2])
        refs = self.source / FOLDER / "refs"
        self.refs = {p.relative_to(refs).as_posix(): p.read_text() for p in refs.rglob("*") if p.is_file()}


@pytest.fixture
def podman(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakePodman:
    fake = FakePodman()
    monkeypatch.setattr(hf_model, "run", fake.run)
    monkeypatch.setattr(hf_model, "pipe", fake.pipe)
    monkeypatch.setattr(spark_lab, "STATE", tmp_path / "state")
    return fake


SEED = ["seed-model", "--node", "spark-head", "--repo", REPO, "--size", "2MB", "--shards", "2"]


def test_seed_model_cli(podman: FakePodman, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert spark_lab.main(SEED) == 0
    commit, size = capsys.readouterr().out.split()
    (home,) = (tmp_path / "state" / "models").iterdir()
    host = home / "hub"
    cache = "/var/lib/sparkops/huggingface/hub"
    assert podman.calls == [
        ["podman", "container", "exists", "spark-head"],
        ["podman", "exec", "spark-head", "rm", "-rf", f"{cache}/{FOLDER}"],
        ["podman", "exec", "spark-head", "mkdir", "-p", cache],
        ["PIPE", "tar", "-C", str(host), "-cf", "-", FOLDER, "|", "podman", "exec", "-i", "spark-head", "tar", "-C", cache, "--no-same-owner", "-xf", "-"],
        ["podman", "exec", "spark-head", "cat", f"{cache}/{FOLDER}/refs/main"],
    ]
    built = read_hub_snapshot(host, REPO)
    assert (commit, int(size)) == (built.commit, built.total_bytes)
    podman.calls.clear()
    assert spark_lab.main(SEED) == 0  # the second time from the store
    assert capsys.readouterr().out.split() == [commit, size]
    assert [p.name for p in (tmp_path / "state" / "models").iterdir()] == [home.name]


def test_seed_model_cli_options(podman: FakePodman, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*SEED, "--node", "spark-worker1", "--cache-dir", "/srv/hf", "--revision", "v1", "--no-store", "--dtype", "F16"]
    assert spark_lab.main(argv) == 0
    assert podman.calls[1] == ["podman", "exec", "spark-worker1", "rm", "-rf", f"/srv/hf/{FOLDER}"]
    source = podman.source
    assert source is not None and source.name == "hub" and not source.exists()  # built in a temporary folder, gone
    assert podman.calls[2:4] == [
        ["podman", "exec", "spark-worker1", "mkdir", "-p", "/srv/hf"],
        [
            "PIPE",
            "tar",
            "-C",
            str(source),
            "-cf",
            "-",
            FOLDER,
            "|",
            "podman",
            "exec",
            "-i",
            "spark-worker1",
            "tar",
            "-C",
            "/srv/hf",
            "--no-same-owner",
            "-xf",
            "-",
        ],
    ]
    assert podman.calls[4] == ["podman", "exec", "spark-worker1", "cat", f"/srv/hf/{FOLDER}/refs/v1"]
    assert not (tmp_path / "state").exists()  # nothing kept
    commit, size = capsys.readouterr().out.split()
    assert commit == podman.refs["v1"] and int(size) > 0


@pytest.mark.parametrize(
    ("fake", "argv", "message"),
    [
        (FakePodman(exists=False), SEED, "node spark-head does not exist"),
        (FakePodman(ref="0" * 40), SEED, "refs/main holds '" + "0" * 40 + "' after seeding"),
        (FakePodman(), [*SEED[:-4], "--size", "1kB"], "too small for the model"),
        (FakePodman(), [*SEED, "--size", "big"], "'big' is not a size"),
        (FakePodman(), [*SEED, "--cache-dir", "relative/hub"], "must be an absolute path"),
    ],
)
def test_seed_model_cli_failures(
    fake: FakePodman, argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(hf_model, "run", fake.run)
    monkeypatch.setattr(hf_model, "pipe", fake.pipe)
    monkeypatch.setattr(spark_lab, "STATE", tmp_path / "state")
    assert spark_lab.main(argv) == 1
    *_logs, error = capsys.readouterr().err.strip().splitlines()
    assert error.startswith("spark-lab: ") and message in error
    if not fake.exists:
        assert fake.calls == [["podman", "container", "exists", "spark-head"]]
