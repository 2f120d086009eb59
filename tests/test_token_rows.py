"""`trainers.token_rows`, the loop every from-scratch world model trains through: packing transitions into
fixed-length rows loses nothing (each transition gets the loss and gradients it gets alone), and the GPU
check's text SFT, through its own argument builder, memorises a handful of transitions on a CPU."""

from __future__ import annotations

import numpy as np
import pytest

ENV_ID = "RLVRWorld/MiniTextWorld-v0"


def test_packing_places_each_example_once_with_its_own_positions_and_no_label_across_a_boundary():
    from trainers.token_rows import IGNORE, auto_row_length, pack_examples

    rng = np.random.default_rng(0)
    sequences = [rng.integers(3, 50, size=n).tolist() for n in (9, 3, 7, 5, 2, 8, 4)]
    labels = [s[:] for s in sequences]
    length = auto_row_length([len(s) for s in sequences], multiple=4)
    assert length == 20  # twice the longest, rounded up
    rows = pack_examples(sequences, labels, length, pad_id=0)
    assert rows.input_ids.shape == (len(rows.input_ids), 20) and rows.examples == 7
    assert len(rows.input_ids) == 2  # 38 tokens in rows of 20: best fit needs only two
    assert rows.real_tokens().sum() == sum(map(len, sequences)) and rows.padding_share() == pytest.approx(2 / 40)
    found = []
    for ids, lab, seg, pos in zip(rows.input_ids, rows.labels, rows.segments, rows.positions):
        for k in range(int(seg.max()) + 1):
            where = np.flatnonzero(seg == k)
            assert np.array_equal(where, np.arange(where[0], where[-1] + 1))  # contiguous
            assert np.array_equal(pos[where], np.arange(len(where)))
            assert lab[where[0]] == IGNORE and np.array_equal(lab[where[1:]], ids[where[1:]])
            found.append(ids[where].tolist())
        assert (lab[seg < 0] == IGNORE).all()
    assert sorted(found) == sorted(sequences)
    again = pack_examples(sequences, labels, length, pad_id=0)  # a pure function of its inputs
    assert np.array_equal(again.input_ids, rows.input_ids)
    with pytest.raises(ValueError, match="does not fit"):
        pack_examples(sequences, labels, 8, pad_id=0)


def test_a_packed_batch_gives_the_loss_and_gradients_of_its_transitions_one_at_a_time():
    """The token-row step on packed rows (SDPA, block-diagonal mask, positions restarting per transition)
    against each transition alone in its own forward: the mean over all labelled tokens, and its gradients."""
    import torch

    from rlvr_envs.core.device import setup_device
    from rlvr_envs.registration import task_from_env_id
    from trainers.distributed import TrainRun
    from trainers.sft import build_text_model, sft_rows
    from trainers.token_rows import IGNORE, make_optimizer, training_step

    task = task_from_env_id(ENV_ID, split="train", size=8)
    indices = [0, 1, 2, 3, 4, 5]
    rows = sft_rows(task, indices, prompt_loss=False)  # answer-only labels: the prompt boundary must be right too
    assert rows.examples == 6 and len(rows.input_ids) < 6 and rows.padding_share() < 0.5
    run = TrainRun(None, setup_device("cpu", "fp32"))
    model = build_text_model(task.tokenizer, "micro", seed=0)
    model.config._attn_implementation = "sdpa"
    device_rows = rows.to(torch.device("cpu"))
    pick = np.arange(len(rows.input_ids))
    packed = {}
    for micro in (len(pick), 1):
        optimizer = make_optimizer(model, 0.0, torch.device("cpu"))
        loss = training_step(model, optimizer, run, device_rows.input_ids, device_rows.labels, pick, rows.counts(),
                             micro, device_rows.segments, device_rows.positions)
        packed[micro] = (float(loss), {n: p.grad.clone() for n, p in model.named_parameters()})
    model.zero_grad()
    total, count = torch.zeros(()), 0
    for i in indices:  # one at a time: the plain causal forward of prompt + answer + EOS
        prompt, answer = task.prompt_ids(i).tolist(), task.target_ids(i).tolist() + [task.eos_token_id]
        ids = torch.as_tensor([prompt + answer])
        labels = torch.as_tensor([[IGNORE] * len(prompt) + answer])
        logits = model(input_ids=ids).logits[0, :-1]
        total = total + torch.nn.functional.cross_entropy(logits, labels[0, 1:], ignore_index=IGNORE, reduction="sum")
        count += len(answer)
    (total / count).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # as the step does
    alone = float(total.detach() / count), {n: p.grad.clone() for n, p in model.named_parameters()}
    for loss, grads in packed.values():
        assert loss == pytest.approx(alone[0], rel=1e-5)
        assert all(torch.allclose(grads[n], alone[1][n], rtol=1e-3, atol=1e-6) for n in grads)


def test_from_scratch_sft_trains_the_prompt_by_default_and_the_check_passes_it(tmp_path):
    from benchmarks import gpu_check
    from trainers.sft import Args

    assert Args(from_scratch=True, out=str(tmp_path / "a")).trains_prompt()
    assert not Args(from_scratch=True, answer_only=True, out=str(tmp_path / "b")).trains_prompt()
    assert not Args(model="some/model", out=str(tmp_path / "c")).trains_prompt()  # pretrained: answer only
    with pytest.raises(ValueError, match="contradict"):
        Args(from_scratch=True, prompt_loss=True, answer_only=True, out=str(tmp_path / "d")).validate()
    args = gpu_check.text_sft_args(gpu_check.Sizes(), steps=600, seconds=100.0, out=tmp_path / "e", device="cuda",
                                   threads=2, compiled=True)
    assert args.from_scratch and args.prompt_loss and args.trains_prompt() and args.preset == "medium"
    assert (args.device, args.no_compile, args.lr) == ("cuda", False, 1e-3)


@pytest.mark.slow
def test_the_check_s_text_sft_memorises_8_transitions_on_a_cpu(tmp_path):
    """Through the GPU check's own argument builder (prompt loss, learning-rate rule, warmup, balance, packing):
    100 steps of the tiny model on 8 MiniTextWorld transitions answer at least 6 of them exactly (greedy)."""
    from benchmarks import gpu_check

    result = gpu_check.memorise(tmp_path / "sft", device="cpu", threads=1, steps=100)
    assert result["trainer"] == "token_rows" and result["prompt_loss"] and result["steps"] == 100
    assert result["exact"] >= 6, result
