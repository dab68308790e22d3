# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _safetensors_header module util: files written by the safetensors library, and broken ones."""

from __future__ import annotations

import json
import struct
import typing as t
from pathlib import Path

import numpy as np
import pytest
from ansible_collections.sparkops.inference.plugins.module_utils._safetensors_header import (
    DTYPE_BITS,
    SafetensorsHeaderError,
    parse_header,
    read_header,
)
from safetensors import safe_open
from safetensors.numpy import save_file


def raw_file(path: Path, header: dict[str, t.Any] | bytes, data: bytes = b"", declared_len: int | None = None, pad: int = 0) -> Path:
    """Write a safetensors file by hand: the u64 length, the header (a dict as JSON, or raw bytes), the data."""
    body = header if isinstance(header, bytes) else json.dumps(header).encode()
    body += b" " * pad
    path.write_bytes(struct.pack("<Q", len(body) if declared_len is None else declared_len) + body + data)
    return path


def tensor(dtype: str, shape: list[int], begin: int, end: int) -> dict[str, t.Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def test_reads_a_file_of_the_safetensors_library(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    arrays = {
        "embed.weight": np.arange(24, dtype=np.float16).reshape(4, 6),
        "norm.weight": np.ones(6, dtype=np.float32),
        "scale": np.array(3, dtype=np.int64),
        "mask": np.array([True, False, True]),
    }
    save_file(arrays, str(path), metadata={"format": "pt", "note": "tiny"})
    info = read_header(path)
    assert info.metadata == {"format": "pt", "note": "tiny"}
    assert info.file_size == path.stat().st_size == 8 + info.header_len + info.data_bytes
    assert info.data_bytes == sum(a.nbytes for a in arrays.values()) == 48 + 24 + 8 + 3
    with safe_open(str(path), framework="numpy") as f:
        assert sorted(info.tensors) == sorted(f.keys())
        for name in f.keys():  # noqa: SIM118 - safe_open is not a mapping
            assert list(info.tensors[name].shape) == list(f.get_slice(name).get_shape())
    assert info.tensors["embed.weight"].dtype == "F16"
    assert info.tensors["embed.weight"].nbytes == 48
    assert info.tensors["scale"].shape == ()
    assert info.tensors["mask"].dtype == "BOOL"


@pytest.mark.parametrize(
    "dtype",
    [np.float16, np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.bool_, np.complex64],
)
def test_every_numpy_dtype_of_the_library_is_size_checked(tmp_path: Path, dtype: t.Any) -> None:
    path = tmp_path / "x.safetensors"
    save_file({"t": np.zeros((3, 5), dtype=dtype)}, str(path))
    info = read_header(path)
    assert info.tensors["t"].dtype in DTYPE_BITS
    assert DTYPE_BITS[info.tensors["t"].dtype] * 15 == info.tensors["t"].nbytes * 8


def test_an_empty_file_of_the_library_has_no_data(tmp_path: Path) -> None:
    path = tmp_path / "empty.safetensors"
    save_file({}, str(path))
    info = read_header(path)
    assert info.tensors == {}
    assert info.data_bytes == 0


@pytest.mark.parametrize(
    ("dtype", "shape", "nbytes"),
    [
        ("F8_E4M3", [4, 2], 8),
        ("F8_E5M2", [3], 3),
        ("BF16", [2, 3], 12),
        ("F4", [4], 2),
        ("F6_E2M3", [4], 3),
        ("F8_E8M0", [5], 5),
        ("X9_UNKNOWN", [3], 5),  # an unknown dtype is not size-checked
    ],
)
def test_dtypes_numpy_cannot_write(tmp_path: Path, dtype: str, shape: list[int], nbytes: int) -> None:
    path = raw_file(tmp_path / "f.safetensors", {"w": tensor(dtype, shape, 0, nbytes)}, b"\0" * nbytes, pad=5)
    assert read_header(path).tensors["w"].nbytes == nbytes


def test_gpt_style_padding_and_zero_size_tensors(tmp_path: Path) -> None:
    header = {"__metadata__": {"format": "pt"}, "a": tensor("F32", [0, 4], 0, 0), "b": tensor("F32", [2], 0, 8), "c": tensor("I8", [], 8, 9)}
    info = read_header(raw_file(tmp_path / "p.safetensors", header, b"\1" * 9, pad=7))
    assert info.data_bytes == 9
    assert sorted(info.tensors) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("header", "data", "declared", "message"),
    [
        (b"", b"", 0, "header length 0 is out of range"),
        (b"{}", b"", 100_000_000, "header length 100000000 is out of range"),
        (b"{}", b"", 64, "truncated in the header: 10 bytes, the header alone needs 72"),
        (b"[]", b"", None, "does not start with '{' but with '[]'"),
        (b" {}", b"", None, "does not start with '{'"),
        (b'{"a": ', b"", None, "the header is not valid JSON"),
        (b"{\xff}", b"", None, "the header is not UTF-8"),
        ({"__metadata__": {"format": 1}}, b"", None, "__metadata__ is not a map of strings to strings"),
        ({"w": "F32"}, b"", None, "tensor 'w': the header entry is not an object"),
        ({"w": {"shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4, None, "tensor 'w': no dtype"),
        ({"w": tensor("F32", [-1], 0, 4)}, b"\0" * 4, None, "tensor 'w': shape is not a list of non-negative integers"),
        ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}, b"", None, "tensor 'w': data_offsets [0] is not [begin, end]"),
        ({"w": tensor("F32", [1], 4, 0)}, b"", None, "tensor 'w': data_offsets [4, 0] is not [begin, end] with begin <= end"),
        ({"w": tensor("F32", [2, 2], 0, 12)}, b"\0" * 12, None, "tensor 'w': 12 bytes of data for F32 [2, 2], which needs 16"),
        ({"w": tensor("F4", [3], 0, 2)}, b"\0" * 2, None, "tensor 'w': 2 bytes of data for F4 [3], which needs 1.5"),
        ({"w": tensor("U8", [4], 4, 8)}, b"\0" * 8, None, "tensor 'w': data_offsets [4, 8] leaves a gap after the previous tensor (expected begin 0)"),
        (
            {"a": tensor("U8", [4], 0, 4), "b": tensor("U8", [4], 2, 6)},
            b"\0" * 6,
            None,
            "tensor 'b': data_offsets [2, 6] overlaps the previous tensor (expected begin 4)",
        ),
        ({"w": tensor("U8", [8], 0, 8)}, b"\0" * 5, None, "truncated: "),
        ({"w": tensor("U8", [8], 0, 8)}, b"\0" * 9, None, "has trailing bytes: "),
    ],
)
def test_broken_files(tmp_path: Path, header: dict[str, t.Any] | bytes, data: bytes, declared: int | None, message: str) -> None:
    path = raw_file(tmp_path / "bad.safetensors", header, data, declared_len=declared)
    with pytest.raises(SafetensorsHeaderError) as caught:
        read_header(path)
    assert message in str(caught.value)


def test_too_short_for_the_length(tmp_path: Path) -> None:
    path = tmp_path / "stub.safetensors"
    path.write_bytes(b"\1\0\0")
    with pytest.raises(SafetensorsHeaderError, match=r"^3 bytes, too short for the 8-byte header length$"):
        read_header(path)


def test_truncated_library_file_names_the_sizes(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    save_file({"w": np.zeros(100, dtype=np.float32)}, str(path))
    full = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(full - 100)
    header_len = struct.unpack("<Q", path.read_bytes()[:8])[0]
    with pytest.raises(SafetensorsHeaderError) as caught:
        read_header(path)
    assert str(caught.value) == f"truncated: {full - 100} bytes, the header says {full} (8 + {header_len} + 400)"


def test_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_header(tmp_path / "absent.safetensors")


def test_parse_header_splits_metadata() -> None:
    tensors, metadata = parse_header(b'{"__metadata__": {"format": "pt"}, "x": {"dtype": "I32", "shape": [2], "data_offsets": [0, 8]}}   ')
    assert metadata == {"format": "pt"}
    assert tensors["x"].dtype == "I32"
    assert (tensors["x"].begin, tensors["x"].end) == (0, 8)
