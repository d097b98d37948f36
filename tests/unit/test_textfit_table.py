"""The one table layout every command's text output uses (``textfit.layout_table``)."""

from __future__ import annotations

from pytest_modelprof.textfit import ELLIPSIS, Column, cut_test_id, layout_table

ROWS = [
    ["tests/test_models.py::test_network", "FLOPs", "+1.1 MFLOPs", "torch 2.14 -> 2.15"],
    ["tests/test_models.py::test_other[large]", "params", "-200", ""],
]
COLUMNS = [
    Column("test", cut=cut_test_id),
    Column("metric"),
    Column("delta", ">"),
    Column("environment", drop=0),
]


def test_a_table_that_fits_is_left_as_it_is() -> None:
    table = layout_table(COLUMNS, ROWS, 120)
    assert table.left_out == []
    assert table.lines[1] == (
        "tests/test_models.py::test_network       FLOPs   +1.1 MFLOPs  torch 2.14 -> 2.15"
    )


def test_names_shrink_first_then_columns_go_and_give_their_room_back() -> None:
    table = layout_table(COLUMNS, ROWS, 64, shrink=((0, 24),))
    assert table.left_out == ["environment"]
    assert all(len(line) <= 64 for line in table.lines)
    # The environment's room went back to the test column: the whole id fits again.
    assert table.lines[1].startswith("tests/test_models.py::test_network ")
    assert table.lines[2].rstrip().endswith("-200")


def test_a_name_is_cut_in_its_middle_and_keeps_its_end() -> None:
    table = layout_table(COLUMNS[:3], [row[:3] for row in ROWS], 36, shrink=((0, 16),))
    assert all(len(line) <= 36 for line in table.lines)
    cell = table.lines[2].split()[0]
    assert ELLIPSIS in cell and cell.startswith("test") and cell.endswith("rge]")


def test_nothing_left_to_give_is_cut_at_the_width() -> None:
    table = layout_table([Column("a"), Column("b")], [["x" * 10, "y" * 80]], 50)
    assert [len(line) for line in table.lines] == [11, 50]  # "a" shrank to 8 first
    assert table.lines[1].endswith(ELLIPSIS)
