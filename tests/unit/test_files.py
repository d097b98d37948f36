"""``write_text_atomic``: the permissions ``open()`` would give, the process umask untouched."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from pytest_modelprof._files import write_text_atomic


def test_writes_never_change_the_process_umask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Any thread creating a file while the umask is changed gets the wrong permissions, so a
    # write may read the umask but must not set it (beyond one probe per process, where the OS
    # offers no other way to read it).
    real_umask = os.umask
    changes: list[int] = []

    def spy(mask: int) -> int:
        changes.append(threading.get_ident())
        return real_umask(mask)

    monkeypatch.setattr(os, "umask", spy)
    for i in range(5):
        write_text_atomic(tmp_path / f"f{i}.json", "{}\n")
    assert len(changes) <= 2, f"os.umask called {len(changes)} times by 5 writes"


def test_new_files_get_the_umask_permissions(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "new.json", "{}\n")
        (tmp_path / "plain.json").write_text("{}\n")
    finally:
        os.umask(old)
    plain = stat.S_IMODE((tmp_path / "plain.json").stat().st_mode)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == plain


def test_a_failed_write_leaves_the_old_file_whole_and_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    write_text_atomic(path, '{"flops": 1}\n')
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(path, '{"name": "\ud800"}\n')  # a lone surrogate: no UTF-8 for it
    assert path.read_text(encoding="utf-8") == '{"flops": 1}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]
