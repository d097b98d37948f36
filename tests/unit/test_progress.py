"""Long phases say on stderr what runs and for how long, while they run."""

from __future__ import annotations

import io
import re
import threading

from pytest_modelprof.progress import format_elapsed, heartbeat


def test_a_long_phase_reports_its_elapsed_time_while_it_runs() -> None:
    """A phase that outlasts several beats (it ends only once three progress lines are out)."""
    stream = io.StringIO()
    seen = threading.Event()

    class Watched(io.StringIO):
        def write(self, text: str) -> int:
            n = stream.write(text)
            if stream.getvalue().count("elapsed") >= 3:
                seen.set()
            return n

    with heartbeat(
        "modelprof bench tiny", "starting valgrind", every=0.01, stream=Watched()
    ) as phase:
        assert seen.wait(60), stream.getvalue()
        stream.seek(0)
        stream.truncate(0)
        seen.clear()
        phase("counting forward, backward and training step")
        assert seen.wait(60), stream.getvalue()
    lines = stream.getvalue().splitlines()
    beats = [line for line in lines if "elapsed" in line]
    assert beats and all(
        re.fullmatch(r"modelprof bench tiny: [a-z ,]+ \.\.\. \d+ s elapsed", line) for line in beats
    ), beats
    assert beats[-1].startswith("modelprof bench tiny: counting forward, backward and training")
    assert re.fullmatch(r"modelprof bench tiny: done in \d+ s", lines[-1]), lines[-1]


def test_elapsed_time_reads_in_minutes_past_one() -> None:
    assert [format_elapsed(s) for s in (0.4, 59.6, 61, 2987)] == [
        "0 s",
        "1 min 00 s",
        "1 min 01 s",
        "49 min 47 s",
    ]
