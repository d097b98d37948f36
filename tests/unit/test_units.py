"""Units: ``format_count``/``format_bytes`` (SI prefixes, 3 significant figures) and parsing."""

from __future__ import annotations

import pytest

from pytest_modelprof.units import format_bytes, format_count, parse_bytes, parse_quantity


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (0, "MACs", "0 MACs"),
        (1, "MACs", "1 MACs"),
        (999, "FLOPs", "999 FLOPs"),
        (1000, "FLOPs", "1 KFLOPs"),
        # resnet50 at 224x224: 4_089_184_256 MACs, the model-card figure "4.09 G".
        (4_089_184_256, "MACs", "4.09 GMACs"),
        (8_238_000_000, "FLOPs", "8.24 GFLOPs"),
        (25_557_032, "params", "25.6 Mparams"),
        (12.345, "MACs", "12.3 MACs"),
        (0.5, "MACs", "0.5 MACs"),
        (2.5e12, "FLOPs", "2.5 TFLOPs"),
        (3e15, "FLOPs", "3 PFLOPs"),
        # No unit: no trailing blank.
        (123_456, "", "123 K"),
        (7, "", "7"),
    ],
)
def test_format_count(value: float, unit: str, expected: str) -> None:
    assert format_count(value, unit) == expected


def test_format_count_negative_keeps_the_sign_and_the_prefix() -> None:
    assert format_count(-2_500_000, "MACs") == "-2.5 MMACs"
    assert format_count(-999, "B") == "-999 B"


def test_format_count_digits() -> None:
    assert format_count(1_234_567, "FLOPs", digits=5) == "1.2346 MFLOPs"
    assert format_count(1_234_567, "FLOPs", digits=2) == "1.2 MFLOPs"


def test_format_count_rounding_up_below_a_prefix_never_prints_scientific() -> None:
    # 999.96 to 3 significant figures is 1e+03: it prints as the next prefix, never as 1e+03.
    assert format_count(999.96, "MACs") == "1 KMACs"
    assert "e" not in format_count(99.96, "x")
    assert format_count(99.96, "") == "100"


def test_format_count_rounding_up_moves_to_the_next_prefix() -> None:
    assert format_count(999_960, "MACs") == "1 MMACs"
    assert format_count(999_999_999, "FLOPs") == "1 GFLOPs"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, "0 B"), (512, "512 B"), (97_500_000, "97.5 MB"), (102_228_128, "102 MB"), (1e9, "1 GB")],
)
def test_format_bytes_is_decimal(value: float, expected: str) -> None:
    assert format_bytes(value) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9G", 9e9),
        ("4.1 GFLOPs", 4.1e9),
        ("5 MMACs", 5e6),
        ("120MB", 120e6),
        ("  3 k ", 3e3),
        (".5G", 0.5e9),
        ("1e9", 1e9),
        ("1.5e3", 1.5e3),
        ("9 ops", 9.0),
        ("1.2 TFLOPs", 1.2e12),
        (42, 42.0),
        (0.25, 0.25),
    ],
)
def test_parse_quantity(text: str | float, expected: float) -> None:
    assert parse_quantity(text) == pytest.approx(expected)


def test_parse_quantity_round_trips_format_count() -> None:
    for value in (7, 12_300, 4_090_000_000, 2.5e12):
        assert parse_quantity(format_count(value, "FLOPs")) == pytest.approx(value, rel=5e-3)


@pytest.mark.parametrize("text", ["", "G", "abc", "9X", "-3G", "9Gbits", "1,000"])
def test_parse_quantity_rejects_garbage_with_an_example(text: str) -> None:
    with pytest.raises(ValueError, match="cannot read|unknown unit"):
        parse_quantity(text)


def test_parse_quantity_rejects_non_numbers() -> None:
    with pytest.raises(ValueError, match="expected a number"):
        parse_quantity(True)
    with pytest.raises(ValueError, match="expected a number"):
        parse_quantity(None)  # type: ignore[arg-type]


def test_parse_quantity_unit_words_that_start_like_a_prefix() -> None:
    assert parse_quantity("9 MACs") == 9.0
    assert parse_quantity("100 params") == 100.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("120MB", 120e6),
        ("3 kB", 3e3),
        ("2 B", 2.0),
        ("1 KiB", 1024.0),
        ("1.5GiB", 1.5 * 1024**3),
        ("2 mib", 2 * 1024**2),
        (9, 9.0),
    ],
)
def test_parse_bytes(text: str | int, expected: float) -> None:
    assert parse_bytes(text) == pytest.approx(expected)


def test_parse_bytes_rejects_other_units() -> None:
    with pytest.raises(ValueError, match="unknown unit"):
        parse_bytes("5 furlongs")


def test_one_minus_sign_in_all_output() -> None:
    """Text output writes a negative change with the ASCII ``-`` (the sign terminals show and
    ``grep`` finds), never U+2212: the history, the compare rows and the layer tables alike."""
    from pathlib import Path

    import pytest_modelprof
    from pytest_modelprof.baseline.change import delta_text
    from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
    from pytest_modelprof.history.view import signed
    from pytest_modelprof.report._format import signed_count

    flops = BUILTIN_METRICS.by_name("flops")
    shown = [
        signed(flops, -300_000),
        signed_count(-2_000, "FLOPs", None),
        delta_text(flops, 700_000, 1_000_000),
    ]
    assert [s[0] for s in shown] == ["-", "-", "-"], shown
    from pytest_modelprof.units import sign

    assert (sign(-1), sign(0), sign(2)) == ("-", "", "+")
    # Every renderer and template: no other minus sign is written anywhere.
    root = Path(pytest_modelprof.__file__).parent
    files = [*root.rglob("*.py"), *(root.parent / "templates").rglob("*")]
    other = [
        str(f.relative_to(root.parent))
        for f in files
        if f.is_file() and ("\u2212" in f.read_text() or "\\u2212" in f.read_text())
    ]
    assert other == []


def test_every_byte_figure_shown_is_decimal() -> None:
    """One unit convention (docs/conventions.md): every byte figure a person reads is written
    by ``format_bytes`` with decimal prefixes (1 GB = 10**9 B), memory capacities included; a
    binary unit (GiB) is accepted as input only. No module writes KiB/MiB/GiB itself."""
    import re
    from pathlib import Path

    import pytest_modelprof
    from pytest_modelprof.machines import MACHINES

    # The H200's 143,771 MiB (nvidia-smi's total; NVIDIA's "141 GB") reads 151 GB.
    assert MACHINES["h200"].memory_bytes == 143_771 * 2**20
    assert format_bytes(MACHINES["h200"].memory_bytes) == "151 GB"
    root = Path(pytest_modelprof.__file__).parent
    writers = [
        str(f.relative_to(root.parent))
        for f in root.rglob("*.py")
        if re.search(r"[\"'(, ](KiB|MiB|GiB|TiB)[\"')]", f.read_text())
    ]
    assert writers == []
