"""transformers' mask checks on stand-ins: answered as an unpadded input, restored after."""

from __future__ import annotations

import torch

from pytest_modelprof._compat import FakeTensorMode
from pytest_modelprof.capture.hf_masks import has_padding, unpadded_masks


def test_has_padding_reads_the_mask_and_the_positions() -> None:
    ids = torch.zeros(2, 6, dtype=torch.long)
    ones = torch.ones(2, 6, dtype=torch.long)
    padded = ones.clone()
    padded[1, 0] = 0
    assert not has_padding(((ids,), {}))
    assert not has_padding(((), {"input_ids": ids, "attention_mask": ones}))
    assert has_padding(((), {"input_ids": ids, "attention_mask": padded}))
    plain = torch.arange(6).expand(2, -1)
    packed = torch.tensor([0, 1, 2, 0, 1, 2]).expand(2, -1)
    assert not has_padding(((), {"position_ids": plain}))
    assert has_padding(((), {"position_ids": packed}))
    # values unknown: no padding assumed
    assert not has_padding(((), {"attention_mask": padded.to("meta")}))


def test_checks_are_answered_inside_and_restored_after() -> None:
    import transformers.masking_utils as masks

    before = (masks.is_tracing, masks.find_packed_sequence_indices)
    with FakeTensorMode():
        positions = torch.arange(8).unsqueeze(0)
        assert masks.find_packed_sequence_indices(positions) is not None  # fake: "tracing"
        with unpadded_masks() as checks:
            assert masks.find_packed_sequence_indices(positions) is None  # as on real values
        assert checks.answered == 1
    assert (masks.is_tracing, masks.find_packed_sequence_indices) == before
