"""``modelprof memory``: the document, the fit verdicts, the largest batch, bad input."""

from __future__ import annotations

import json

import pytest

from pytest_modelprof.cli import main
from pytest_modelprof.fit import StepOptions, estimate_memory
from pytest_modelprof.fit.verdict import MAX_BATCH, largest_batch
from pytest_modelprof.machines import GPU_MEMORY, resolve_capacity


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["memory", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_keys_and_the_largest_batch_is_exact(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "resnet18",
        "--input-shape",
        "2,3,32,32",
        "--train",
        "--optimizer",
        "sgd-momentum",
        "--gpu",
        "400MB",
        "--json",
    )
    assert code == 0
    doc = json.loads(out)
    memory = doc["memory"]
    assert memory["peak_bytes"] == sum(memory["breakdown"].values())
    for key in ("parameters", "gradients", "optimizer_state", "activations"):
        assert key in memory["breakdown"]
    fit = memory["fits"]["400 MB"]
    assert fit["capacity_bytes"] == 400_000_000
    assert fit["headroom_bytes"] == 400_000_000 - memory["peak_bytes"]
    best = fit["largest_batch"]
    opts = StepOptions(optimizer="sgd-momentum")

    def peak(batch: int) -> int:
        return estimate_memory("resnet18", input_shape=(batch, 3, 32, 32), options=opts).peak_bytes

    assert best > 1
    assert peak(best) <= 400_000_000 < peak(best + 1)


def test_text_names_the_peak_and_every_preset(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "resnet18", "--input-shape", "1,3,32,32", "--no-largest-batch")
    assert code == 0
    assert "inference" in out and "peak" in out and " at aten::" in out
    assert all(name in out for name in GPU_MEMORY)


def test_arch_pairs_separated_by_commas_and_zero3(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "hf:llama",
        "--arch",
        "num_hidden_layers=2,hidden_size=64,intermediate_size=128,num_attention_heads=4",
        "--arch",
        "num_key_value_heads=2,vocab_size=256",
        "--train",
        "--precision",
        "bf16-mixed",
        "--seq-len",
        "32",
        "--devices",
        "8",
        "--shard",
        "zero3",
        "--no-largest-batch",
        "--json",
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["settings"]["shard"] == "zero3" and doc["settings"]["input_shapes"] == [[1, 32]]
    assert doc["memory"]["peak_bytes"] < doc["memory"]["single_device_peak_bytes"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("--optimizer", "adamx"), "did you mean 'adam' or 'adamw'?"),
        (("--optimizer", "adamw:fuse"), "did you mean 'fused'?"),
        (("--precision", "bf16mixed"), "did you mean 'bf16-mixed'"),
        (("--train", "--shard", "zero4", "--devices", "2"), "did you mean 'zero3'"),
        (("--gpu", "h100"), "did you mean 'h100-80gb'"),
        (("--shard", "zero2", "--devices", "2"), "an inference estimate has none"),
        (("--train", "--devices", "4"), "without --shard"),
    ],
)
def test_bad_input_says_what_to_do(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], expected: str
) -> None:
    code, out, err = _run(capsys, "resnet18", "--input-shape", "1,3,32,32", *argv)
    assert code == 2 and out == ""
    assert expected in err


def test_unknown_model_gets_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "resnet5O")
    assert code == 2 and "resnet50" in err


def test_capacity_accepts_names_and_sizes() -> None:
    assert resolve_capacity("h100-80gb") == ("h100-80gb", 81_559 * 2**20)
    assert resolve_capacity("24GB") == ("24 GB", 24 * 10**9)
    assert resolve_capacity("22GiB")[1] == 22 * 2**30
    with pytest.raises(ValueError, match="did you mean 'a100-80gb'"):
        resolve_capacity("a100-80")


def test_largest_batch_search_on_a_curve_that_is_not_a_line() -> None:
    calls: list[int] = []

    def peak(batch: int) -> int:  # fixed 100, then 10 per sample, and a jump past 50
        calls.append(batch)
        return 100 + 10 * batch + (500 if batch > 50 else 0)

    assert largest_batch(peak, 1000) == 50  # the line predicts 90; the search corrects it
    assert largest_batch(peak, 105) == 0
    assert largest_batch(lambda b: 7, 10) == MAX_BATCH
    assert largest_batch(lambda b: 100 + 10 * b, 1000) == 90
    assert largest_batch(lambda b: 100 + 10 * b, 1000, start=95) == 90  # searched downwards


def test_batch_norm_in_training_needs_two_samples(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "resnet18", "--input-shape", "1,3,32,32", "--train")
    assert code == 2
    assert "Expected more than 1 value per channel when training" in err
    assert "Check the inputs" in err


def test_the_default_batch_is_estimated_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The search for the largest batch starts at the model's own batch, which the first
    # estimate has just run: the 70B example (batch 1 fits no preset) needs one step, not two.
    from pytest_modelprof.fit import estimate

    batches: list[int | None] = []
    real = estimate.estimate_memory

    def counted(*args: object, **kwargs: object) -> object:
        batches.append(kwargs.get("batch"))  # type: ignore[arg-type]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(estimate, "estimate_memory", counted)
    code, out, _ = _run(capsys, "resnet18", "--input-shape", "1,3,32,32", "--gpu", "1MB", "--json")
    assert code == 0
    assert json.loads(out)["memory"]["fits"]["1 MB"]["largest_batch"] == 0  # 46 MB of weights
    assert batches == [None]  # not [None, 1]: batch 1 is the input's own


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_it_was(capsys: pytest.CaptureFixture[str], enabled: bool) -> None:
    # The command keeps the cyclic collector off while torch and the model load (speed);
    # whoever called it in-process gets it back as it was.
    import gc

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        code, _, _ = _run(capsys, "resnet18", "--input-shape", "1,3,32,32", "--no-largest-batch")
        assert code == 0
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_checkpointing_a_decoder_prints_no_cache_warning() -> None:
    """transformers warns that ``use_cache`` is incompatible with checkpointing, a line the user
    cannot act on; the estimate turns the cache off first and stderr stays clean."""
    import subprocess
    import sys

    arch = "num_hidden_layers=2,hidden_size=64,intermediate_size=128,num_attention_heads=4,"
    arch += "num_key_value_heads=2,vocab_size=256"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_modelprof.cli", "memory", "hf:llama", "--arch", arch,
         "--train", "--checkpointing", "--seq-len", "16", "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["memory"]["peak_bytes"] > 0
    assert "use_cache" not in done.stderr, done.stderr


SMALL_LLAMA = (
    "hf:llama",
    "--arch",
    "num_hidden_layers=2,hidden_size=64,intermediate_size=128,num_attention_heads=4,"
    "num_key_value_heads=2,vocab_size=256",
    "--train",
    "--seq-len",
    "16",
    "--no-largest-batch",
)


def test_json_has_the_model_states_and_the_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    """The peak's breakdown is one moment (at the end of the forward no gradient exists yet);
    the model states are what the step holds whatever the moment, as DeepSpeed counts them."""
    argv = (*SMALL_LLAMA, "--precision", "bf16-master", "--devices", "8", "--shard", "zero2")
    code, out, _ = _run(capsys, *argv, "--json")
    assert code == 0
    doc = json.loads(out)
    n = doc["parameter_count"]
    tensors = 2 + 9 * 2 + 1
    states = doc["memory"]["model_states"]
    # bf16 weights 2 B, bf16 gradients 2 B / 8, fp32 master weights and AdamW's moments 12 B / 8
    assert states == {
        "parameters": 2 * n,
        "gradients": -(-2 * n // 8),
        "optimizer_state": -(-(12 * n + 4 * tensors) // 8),
    }
    assert doc["memory"]["model_states_bytes"] == sum(states.values())
    assert doc["settings"]["recipe"].startswith("master weights")
    code, text, _ = _run(capsys, *argv)
    assert "model states" in text and "master weights" in text


def test_zero3_on_one_device_warns(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, *SMALL_LLAMA, "--shard", "zero3", "--json")
    assert code == 0
    assert "warning" in err and "--devices 1" in err and "zero3" in err
    code, _, err = _run(capsys, *SMALL_LLAMA, "--shard", "zero3", "--devices", "2", "--json")
    assert "warning" not in err
