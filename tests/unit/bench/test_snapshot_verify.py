"""bench/snapshot_verify.py: the sparse snapshots it times `quick` on."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.sparkops.inference.bench import snapshot_verify as sv
from ansible_collections.sparkops.inference.plugins.module_utils._hf_snapshot import check_snapshot
from ansible_collections.sparkops.inference.plugins.module_utils._safetensors_header import read_header

TINY = sv.Fp8Layout(hidden=64, layers=2, experts=4, block=16)


@pytest.mark.parametrize(("sizes", "shards"), [([5, 5, 5, 5], 2), ([1] * 10, 3), ([100, 1, 1, 1], 4), ([3, 7, 2, 9, 4, 4, 1], 3)])
def test_split_shards_contiguous_and_non_empty(sizes: list[int], shards: int) -> None:
    owner = sv.split_shards(sizes, shards)
    assert owner == sorted(owner)
    assert set(owner) == set(range(shards))


def test_split_shards_refuses_more_shards_than_it_can_fill() -> None:
    with pytest.raises(ValueError, match="non-empty shards"):
        sv.split_shards([1, 1], 3)


def test_layout_fits_the_size() -> None:
    width = sv.Fp8Layout().fit(120_000_000_000)
    assert abs(sv.Fp8Layout().data_bytes(width) - 120e9) < 120e9 / 1000
    with pytest.raises(ValueError, match="too small"):
        TINY.fit(TINY.min_bytes() - 1)


def test_sparse_shard_has_a_valid_header(tmp_path: Path) -> None:
    tensors = [("a.weight", "F8_E4M3", (40, 64)), ("a.weight_scale_inv", "F32", (3, 4)), ("norm.weight", "BF16", (64,))]
    data = sv.write_sparse_shard(tmp_path / "x.safetensors", tensors)
    header = read_header(tmp_path / "x.safetensors")
    assert data == header.data_bytes == 40 * 64 + 3 * 4 * 4 + 64 * 2
    assert header.header_len % 8 == 0
    assert {name: (info.dtype, info.shape) for name, info in header.tensors.items()} == {name: (dtype, dims) for name, dtype, dims in tensors}


def test_sparse_snapshot_passes_quick(tmp_path: Path) -> None:
    text = {name: b"{}\n" for name in sv.TEXT_FILES}
    snap = sv.build_sparse_snapshot(tmp_path, "acme/sparse", 20_000_000, 5, text, layout=TINY)
    report = check_snapshot("acme/sparse", cache_dir=str(tmp_path), mode="quick")
    assert report.complete, report.problems
    assert report.shards == snap.shards == 5
    assert report.architectures == ["Qwen3MoeForCausalLM"]
    assert report.tensor_bytes == report.index_total_size == TINY.data_bytes(snap.expert_width)
    assert abs(snap.total_bytes - 20_000_000) < 200_000
    assert snap.tensors == len(TINY.tensors(snap.expert_width))
    if sv.supports_sparse(tmp_path):
        assert snap.allocated_bytes < snap.total_bytes / 10


def test_split_shards_about_equal() -> None:
    owner = sv.split_shards([1] * 390, 39)
    assert [owner.count(shard) for shard in range(39)] == [10] * 39


def test_wrap_keeps_tables_and_sizes_whole() -> None:
    table = "| measurement | s |\n|---|---:|\n| " + "x " * 40 + "| 1.0 |"
    out = sv.wrap(["word " * 11 + "at 120.0 GB now", "- " + "item " * 12, table], width=60)
    assert out.splitlines()[:2] == ["word word word word word word word word word word word at", "120.0 GB now"]
    assert out.splitlines()[2:4] == ["- item item item item item item item item item item item", "  item"]
    assert out.endswith(table)
