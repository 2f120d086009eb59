"""The video GRPO loop (trainers.grpo_video): its loss is TRL's, it trains end to end,
survives a kill, and refuses impossible configs before any work."""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from trainers.grpo_config import GRPOConfig as Args
from rlvr_envs.core.groups import group_advantages
from trainers.grpo_video import grpo_loss, rloo_advantages, rloo_loss

REPO = Path(__file__).resolve().parents[1]


class _OneProcess:
    """The accelerator of a single process, as TRL's loss functions use it."""

    num_processes = 1
    sync_gradients = True

    def reduce(self, x, reduction="sum"):
        return x

    def gather(self, x):
        return x

    gather_for_metrics = gather


def _trl_loss(loss_type, logps, old, ref, advantages, mask, clip, beta, max_len):
    """TRL 1.16's own `GRPOTrainer._compute_loss` on a fixed batch (model forward stubbed)."""
    from trl import GRPOTrainer

    fake = types.SimpleNamespace(
        top_entropy_quantile=1.0, aux_loss_enabled=False, off_policy_mask_threshold=None,
        importance_sampling_level="token", beta=beta, loss_type=loss_type, epsilon_low=clip, epsilon_high=clip,
        use_vllm=False, vllm_importance_sampling_correction=False, model=types.SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1, max_completion_length=max_len, accelerator=_OneProcess(),
        _entropy_bonus_enabled=False, _metrics=collections.defaultdict(lambda: collections.defaultdict(list)),
        args=types.SimpleNamespace(use_bias_correction_kl=False, delta=None, steps_per_generation=1),
        _get_per_token_logps_and_entropies=lambda *a, **k: (logps, torch.zeros_like(logps), None))
    batch, length = logps.shape
    inputs = {"prompt_ids": torch.zeros(batch, 3, dtype=torch.long), "prompt_mask": torch.ones(batch, 3),
              "completion_ids": torch.zeros(batch, length, dtype=torch.long), "completion_mask": mask.float(),
              "advantages": advantages, "old_per_token_logps": old, "ref_per_token_logps": ref,
              "num_items_in_batch": mask.sum()}
    return GRPOTrainer._compute_loss(fake, None, inputs)


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
def test_loss_equals_trls_on_a_fixed_batch(loss_type):
    generator = torch.Generator().manual_seed(0)
    batch, length = 6, 9
    logps = -torch.rand(batch, length, generator=generator) * 3
    old = logps + 0.3 * torch.randn(batch, length, generator=generator)  # ratios on both sides of the clip
    ref = logps + 0.2 * torch.randn(batch, length, generator=generator)
    advantages = torch.randn(batch, generator=generator)
    mask = torch.ones(batch, length)
    mask[:, 4:6] = 0  # forced action tokens carry no loss
    mask[0, 7:] = 0
    ours, _ = grpo_loss(logps, old, ref, advantages, mask, clip=0.2, beta=0.04, loss_type=loss_type, max_len=length)
    theirs = _trl_loss(loss_type, logps, old, ref, advantages, mask, 0.2, 0.04, length)
    torch.testing.assert_close(ours, theirs)


def test_rloo_loss_equals_trls_on_a_fixed_batch():
    """TRL 1.16's own `RLOOTrainer._compute_loss` (model forward stubbed): sequence-level ratio."""
    from trl import RLOOTrainer

    generator = torch.Generator().manual_seed(1)
    batch, length = 6, 9
    logps = -torch.rand(batch, length, generator=generator) * 3
    old = logps + 0.12 * torch.randn(batch, length, generator=generator)  # ratios on both sides of the clip
    advantages = torch.randn(batch, generator=generator)
    mask = torch.ones(batch, length)
    mask[:, 4:6] = 0
    mask[0, 7:] = 0
    fake = types.SimpleNamespace(
        aux_loss_enabled=False, epsilon_low=0.2, epsilon_high=0.2, model=types.SimpleNamespace(training=True),
        accelerator=_OneProcess(), _metrics=collections.defaultdict(lambda: collections.defaultdict(list)),
        _get_per_token_logps_and_entropies=lambda *a, **k: (logps, torch.zeros_like(logps), None))
    inputs = {"prompt_ids": torch.zeros(batch, 3, dtype=torch.long), "prompt_mask": torch.ones(batch, 3),
              "completion_ids": torch.zeros(batch, length, dtype=torch.long), "completion_mask": mask,
              "advantages": advantages, "old_logps": (old * mask).sum(1)}
    theirs = RLOOTrainer._compute_loss(fake, None, inputs)
    ours, stats = rloo_loss(logps, old, advantages, mask, clip=0.2)
    torch.testing.assert_close(ours, theirs)
    assert 0.0 < stats["clip_fraction"] < 1.0  # the batch exercises the clip


def test_rloo_advantages_are_leave_one_out_with_the_kl_in_the_reward():
    rewards = torch.tensor([[1.0, 2.0, 3.0, 6.0], [0.5, 0.5, 0.5, 0.5]])
    kl = torch.tensor([[0.0, 1.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]])
    plain = rloo_advantages(rewards)
    torch.testing.assert_close(plain[0, 0], torch.tensor(1.0 - (2.0 + 3.0 + 6.0) / 3))
    assert torch.equal(plain[1], torch.zeros(4))
    penalised = rloo_advantages(rewards, kl, beta=0.5)
    shaped = rewards - 0.5 * kl
    torch.testing.assert_close(penalised[0, 3], shaped[0, 3] - shaped[0, :3].mean())
    with pytest.raises(ValueError, match="KL"):
        rloo_advantages(rewards, None, beta=0.5)


def test_group_advantages_match_trl_and_zero_spread_groups_get_none():
    rewards = torch.tensor([[1.0, 2.0, 3.0, 6.0], [0.5, 0.5, 0.5, 0.5]])
    scaled = group_advantages(rewards)
    expected = (rewards[0] - rewards[0].mean()) / (rewards[0].std() + 1e-4)  # TRL: unbiased std + 1e-4
    torch.testing.assert_close(scaled[0], expected)
    assert torch.equal(scaled[1], torch.zeros(4))
    torch.testing.assert_close(group_advantages(rewards, scale=False)[0], rewards[0] - rewards[0].mean())


@pytest.mark.parametrize("change, message", [
    ({"group_size": 1}, "group_size must be >= 2"),
    ({"loss_type": "ppo"}, "loss_type must be one of"),
    ({"env_kwargs": ("reward",)}, "key=value"),
    ({"beta": -1.0}, "beta must be a finite number >= 0"),
    ({"algorithm": "ppo"}, "algorithm must be one of"),
    ({"algorithm": "rloo", "loss_type": "dapo"}, "GRPO only"),
])
def test_impossible_configs_fail_before_any_work(change, message):
    with pytest.raises(ValueError, match=message):
        Args(**change).validate()


def test_env_kwargs_parse_json_values():
    assert Args(env_kwargs=("reward=mae", "size=40", "frame_offsets=[0,1]")).kwargs() == {
        "reward": "mae", "size": 40, "frame_offsets": [0, 1]}


@pytest.fixture(scope="module")
def tiny_setup(tmp_path_factory):
    """A tiny world model over the PushT single-step vocabulary, and PushT data (the
    embedded held-out set's episodes, split train/test by index)."""
    from rlvr_envs.core.factory import build_task
    from rlvr_envs.video.task import embedded_heldout_dir
    from rlvr_envs.video.world_model import build_world_model

    task = build_task("rlvr_envs.video.task:VideoPredictionTask", layout="single", reward="mae")
    directory = tmp_path_factory.mktemp("tiny_wm")
    build_world_model(task.vocab, task.max_prompt_len + task.max_response_len, preset="tiny").save_pretrained(directory)
    return str(directory), embedded_heldout_dir(task.config.episodes, task.tokenizer.config.resolution[0])


def _command(model, data, out, steps, extra=()):
    return [sys.executable, "-m", "trainers.grpo", "--env-id", "RLVRWorld/PushT-SingleStep-v0", "--env-kwargs",
            "reward=mae", f"data_dir={data}", "size=24", "--model", model, "--out", str(out), "--steps", str(steps),
            "--prompts-per-step", "2", "--group-size", "3", "--eval-windows", "4", "--eval-every", "100",
            "--checkpoint-every", "1", "--threads", "1", *extra]


def _env():
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}


@pytest.mark.slow
def test_killed_run_resumes_from_its_last_checkpoint_and_finishes(tiny_setup, tmp_path):
    model, data = tiny_setup
    out = tmp_path / "run"
    process = subprocess.Popen(_command(model, data, out, 8), cwd=REPO, env=_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while time.time() < deadline and process.poll() is None:
        state = out / "checkpoint" / "state.pt"
        if state.is_file() and torch.load(state, weights_only=True)["step"] >= 2:
            break
        time.sleep(0.5)
    assert process.poll() is None, "the run ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = torch.load(out / "checkpoint" / "state.pt", weights_only=True)["step"]
    assert 2 <= killed_at < 8

    finished = subprocess.run(_command(model, data, out, 8, ["--resume"]), cwd=REPO, env=_env(),
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert f"resuming {out / 'checkpoint'} at step {killed_at}" in finished.stdout
    card = json.loads((out / "card.json").read_text())
    assert card["steps"] == 8 and card["reward_failures"] == 0
    steps = [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 9))  # every step logged once: the killed run's steps after its checkpoint dropped
    from transformers import LlamaForCausalLM

    LlamaForCausalLM.from_pretrained(out)  # the result loads as any causal LM


def test_model_whose_vocabulary_is_not_the_tasks_fails_naming_both(tmp_path):
    from rlvr_envs.video.layout import VideoVocabulary
    from rlvr_envs.video.world_model import build_world_model
    from trainers.grpo import main

    build_world_model(VideoVocabulary(frame_codes=10), 64, preset="tiny").save_pretrained(tmp_path / "m")
    args = Args(env_kwargs=("reward=mae",), model=str(tmp_path / "m"), out=str(tmp_path / "out"), train_episodes=1)
    with pytest.raises(ValueError, match=r"vocabulary size 269 .* needs"):
        main(args)


@pytest.mark.parametrize("extra", [(), ("--lora-r", "4"), ("--algorithm", "rloo")], ids=["full", "lora", "rloo"])
def test_two_steps_end_to_end_write_a_card_and_a_plain_model(tiny_setup, tmp_path, extra):
    """A short run in-process: a card with start and final held-out metrics, and a model
    that loads as a plain causal LM (LoRA merged)."""
    from transformers import LlamaForCausalLM

    from trainers.grpo import main, parse_args

    model, data = tiny_setup
    args = parse_args(_command(model, data, tmp_path / "run", 2, extra)[3:])
    card = main(args)
    assert card["steps"] == 2
    assert card["command"].startswith("python -m trainers.grpo --env-kwargs reward=mae data_dir=")
    assert " ".join(extra) in card["command"] and ("--lora-r" in card["command"]) == ("--lora-r" in extra)
    loaded = LlamaForCausalLM.from_pretrained(tmp_path / "run")
    assert not any("lora" in name for name, _ in loaded.named_parameters())
    for key in ("start", "final"):
        assert set(card[key]) == {"greedy", "sampled"}
        assert np.isfinite(card[key]["sampled"]["mae"])
    rows = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert all(0.0 <= r["zero_spread"] <= 1.0 for r in rows)
    assert not (tmp_path / "run" / "checkpoint").exists()  # the final model replaces the checkpoint


def test_run_folder_contract_refuses_in_one_line(tmp_path, capsys):
    """A finished run is never trained over, with or without --resume (the message names the model to
    start a new run from); a started run needs --resume; --resume needs a run; --out must be writable."""
    from trainers.grpo import parse_args

    finished, started, empty = tmp_path / "finished", tmp_path / "started", tmp_path / "empty"
    for folder in (finished, started, empty):
        folder.mkdir()
    (finished / "card.json").write_text("{}")
    (started / "log.jsonl").write_text("")
    cases = {(finished, False): rf"finished run \(card.json\).*--model {finished} --out NEW",
             (finished, True): "finished run .*never overwritten or extended in place",
             (started, False): "already holds a run .*pass --resume",
             (empty, True): "holds no run to continue",
             (Path("/proc/rlvr-world/run"), False): "cannot write into /proc"}
    for (out, resume), message in cases.items():
        with pytest.raises(SystemExit) as caught:
            parse_args(["--out", str(out), *(["--resume"] if resume else [])])
        err = capsys.readouterr().err
        assert caught.value.code == 2 and re.search(message, err) and err.count("error:") == 1, err
    assert parse_args(["--out", str(started), "--resume"]).resume  # an unfinished run resumes
    assert parse_args(["--out", str(empty)]).out == str(empty)  # an empty folder takes a new run
