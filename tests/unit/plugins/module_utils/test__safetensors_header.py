# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for the _safetensors_header module util: files written by the safetensors library, and broken ones."""

from __future__ import annotations

import json
import struct
import sys
import time
import typing as t
from pathlib import Path

import numpy as np
import pytest
from ansible_collections.sparkops.inference.plugins.module_utils import _safetensors_header
from ansible_collections.sparkops.inference.plugins.module_utils._safetensors_header import (
    DTYPE_BITS,
    SafetensorsHeaderError,
    parse_header,
    read_header,
)
from safetensors import SafetensorError, safe_open
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


# --- hostile headers (issue 15): each is a SafetensorsHeaderError with a short message, found fast ------------------

MAX_SECONDS = 2.0  # a hostile header is refused within this (it cost 105 s before the caps, on a 2.6 MB header)


def refused(path: Path) -> str:
    """Read the header of ``path``, which must be refused fast with a short message; return the message."""
    start = time.monotonic()
    with pytest.raises(SafetensorsHeaderError) as caught:
        read_header(path)
    seconds = time.monotonic() - start
    assert seconds < MAX_SECONDS, f"refused after {seconds:.1f}s"
    message = str(caught.value)
    assert len(message) < 600, message[:600]
    return message


def deep(levels: int) -> bytes:
    return b'{"w": ' + b"[" * levels + b"]" * levels + b"}"


@pytest.mark.parametrize(
    ("header", "data", "expected"),
    [
        # sizes like 1e400 (JSON reads them as infinity)
        (b'{"w": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}}', b"\0" * 4, "tensor 'w': shape is not a list of non-negative integers: [inf]"),
        (
            b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 1e400]}}',
            b"\0" * 4,
            "tensor 'w': data_offsets is not a list of non-negative integers: [0, inf]",
        ),
        # dims of 10**30: no 64-bit size has 31 digits (the product of 11 of them did not fit a float: OverflowError)
        (
            json.dumps({"w": tensor("F32", [10**30] * 11, 0, 4)}).encode(),
            b"\0" * 4,
            "tensor 'w': shape holds 1000000000000000000000000000000, more than 64 bits hold (the reference reads it as a usize)",
        ),
        (
            json.dumps({"w": tensor("F32", [1], 0, 10**30)}).encode(),
            b"\0" * 4,
            "tensor 'w': data_offsets holds 1000000000000000000000000000000, more than 64 bits hold",
        ),
        # 20 digits, past 2**64 - 1: the reference reads dims and offsets as usize
        (json.dumps({"w": tensor("U8", [2**64], 0, 4)}).encode(), b"\0" * 4, "tensor 'w': shape holds 18446744073709551616, more than 64 bits hold"),
        # each dim fits, the element count does not (the reference's checked_mul: ValidationOverflow)
        (
            json.dumps({"w": tensor("F32", [2**32, 2**32, 2**32], 0, 4)}).encode(),
            b"\0" * 4,
            "tensor 'w': F32 [4294967296, 4294967296, 4294967296] is more than 2**64 bits of data (the reference refuses it: ValidationOverflow)",
        ),
        (json.dumps({"w": tensor("F32", [2**62], 0, 4)}).encode(), b"\0" * 4, "is more than 2**64 bits of data"),
        # nesting 100,000 levels deep (RecursionError in the JSON parser)
        (deep(100_000), b"", "the header is nested too deeply for a JSON parser (a safetensors header is 3 levels deep)"),
        # a header length larger than the file, negative and overlapping offsets
        (b"{}", b"", "truncated in the header: 10 bytes, the header alone needs 4104"),
        ({"w": tensor("U8", [4], -4, 0)}, b"", "tensor 'w': data_offsets is not a list of non-negative integers: [-4, 0]"),
        (
            {"a": tensor("U8", [8], 0, 8), "b": tensor("U8", [4], 4, 8)},
            b"\0" * 8,
            "tensor 'b': data_offsets [4, 8] overlaps the previous tensor (expected begin 8)",
        ),
        ({"a": tensor("U8", [4], 0, 4), "b": tensor("U8", [4], 0, 4)}, b"\0" * 4, "overlaps the previous tensor (expected begin 4)"),
    ],
    ids=[
        "shape-1e400",
        "offset-1e400",
        "dims-10e30",
        "offset-10e30",
        "dim-2e64",
        "elements-overflow",
        "bits-overflow",
        "deep-100000",
        "length-past-the-file",
        "negative-offset",
        "overlap",
        "same-offsets",
    ],
)
def test_hostile_header(tmp_path: Path, header: dict[str, t.Any] | bytes, data: bytes, expected: str) -> None:
    declared = 4096 if header == b"{}" else None
    path = raw_file(tmp_path / "hostile.safetensors", header, data, declared_len=declared)
    message = refused(path)
    assert expected in message, message
    with pytest.raises(SafetensorError):  # the reference refuses each of them too
        safe_open(str(path), framework="numpy")


def test_a_huge_header_length_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """64 MiB and more: more than any real checkpoint's header (the reference allows up to 100 MB); not a byte is read."""
    length = 64 << 20
    assert length == _safetensors_header.MAX_HEADER_LEN
    path = raw_file(tmp_path / "big.safetensors", b"{}", declared_len=length)
    with path.open("r+b") as f:
        f.truncate(8 + length + 16)  # sparse: the length is not past the file
    assert refused(path) == "header length 67108864 is out of range (1 to 67108863)"


@pytest.mark.parametrize(
    "shape",
    [[10**30] * 80_000, [2**64 - 1] * 120_000],
    ids=["80000-dims-of-10e30", "120000-dims-of-2e64"],
)
def test_a_2_6_mb_header_of_huge_dims_is_refused_fast(tmp_path: Path, shape: list[int]) -> None:
    """The review's header: 2.6 MB of dims whose product took 105 s of big-integer arithmetic, then an OverflowError."""
    header = json.dumps({"w": tensor("F32", shape, 0, 4)}).encode()
    assert len(header) > 2_500_000
    message = refused(raw_file(tmp_path / "dims.safetensors", header, b"\0" * 4))
    assert "more than 64 bits hold" in message or "is more than 2**64 bits of data" in message


def test_a_2_6_mb_header_of_many_hostile_entries_is_refused_fast(tmp_path: Path) -> None:
    """8,000 entries, each of the 11 dims of 10**30 that made an OverflowError."""
    header = json.dumps({f"t{i}": tensor("F32", [10**30] * 11, 0, 4) for i in range(8_000)}).encode()
    assert len(header) > 2_500_000
    assert refused(raw_file(tmp_path / "many.safetensors", header, b"\0" * 4)).startswith(
        "tensor 't0': shape holds 1000000000000000000000000000000, more than 64 bits hold"
    )


def test_more_tensors_than_the_cap_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cap on entries (2**19 at full size; lowered here so that the test writes a small file)."""
    monkeypatch.setattr(_safetensors_header, "MAX_TENSORS", 1000)
    header = {f"t{i}": tensor("U8", [1], i, i + 1) for i in range(1001)}
    assert refused(raw_file(tmp_path / "many.safetensors", header, b"\0" * 1001)) == (
        "the header lists 1001 tensors, more than 1000: no real checkpoint file comes near"
    )
    del header["t1000"]
    assert len(read_header(raw_file(tmp_path / "cap.safetensors", header, b"\0" * 1000)).tensors) == 1000


def test_a_name_of_megabytes_is_cut_short_in_the_message(tmp_path: Path) -> None:
    name = "x" * 3_000_000
    message = refused(raw_file(tmp_path / "name.safetensors", {name: {"shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4))
    assert message.startswith("tensor 'xxxxx") and message.endswith("': no dtype")


def test_the_caps_are_far_above_a_real_dense_shard(tmp_path: Path) -> None:
    """A 5 GB NVFP4 shard of a 512-expert MoE lists ~30,000 tensors in ~3.5 MB of header: it is read, not refused."""
    header: dict[str, t.Any] = {}
    offset = 0
    for i in range(30_000):
        name = f"model.layers.{i // 600}.mlp.experts.{i % 600 // 4}.down_proj.weight_scale_{i % 4}"
        header[name] = tensor("F32", [], offset, offset + 4)
        offset += 4
    path = raw_file(tmp_path / "dense.safetensors", header, b"\0" * offset)
    assert 3_000_000 < path.stat().st_size - offset < _safetensors_header.MAX_HEADER_LEN
    info = read_header(path)
    assert len(info.tensors) == 30_000 and info.data_bytes == 120_000
    with safe_open(str(path), framework="numpy") as f:
        assert len(list(f.keys())) == 30_000


@pytest.mark.parametrize("limit", [4300, 0], ids=["python-limit", "no-python-limit"])
def test_a_number_of_many_digits_is_refused_fast(tmp_path: Path, limit: int) -> None:
    """Reading an n-digit number costs n**2: Python refuses more than 4300 digits; without that limit (lifted with 0, or
    a Python before 3.8.14, 3.9.14 or 3.10.7) the reader refuses more than 20 itself."""
    if not hasattr(sys, "set_int_max_str_digits"):
        pytest.skip("this Python has no limit on the digits of a number")
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        for digits in (31, 5000, 2_000_000):
            header = b'{"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1' + b"0" * (digits - 1) + b"]}}"
            message = refused(raw_file(tmp_path / f"{digits}.safetensors", header, b"\0"))
            if limit == 0:
                assert message.startswith(f"the header holds a {digits}-digit number (100000000000000000000000...), more than 64 bits hold"), message
            elif digits == 31:
                assert message == f"tensor 'w': data_offsets holds 1{'0' * 30}, more than 64 bits hold (the reference reads it as a usize)"
            else:
                assert message.startswith("the header is not valid JSON: Exceeds the limit (4300 digits) for integer string conversion"), message
    finally:
        sys.set_int_max_str_digits(previous)
