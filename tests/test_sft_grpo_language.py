"""The language training pipeline end to end on a CPU, with a from-scratch micro LLaMA on the
shipped MiniTextWorld tokenizer: SFT (and its resume), GRPO (and its resume), held-out
changed/unchanged accuracy, impossible configs failing before training, and the same GRPO
under `accelerate launch` with 2 processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.samples import gold_for_first_samples

REPO = Path(__file__).resolve().parents[1]
ENV_ID = "RLVRWorld/MiniTextWorld-v0"
ENV_KWARGS = ("size=8",)


def sft_args(out: Path, **overrides):
    from trainers.sft import Args

    base = dict(env_id=ENV_ID, env_kwargs=ENV_KWARGS, from_scratch=True, preset="micro", out=str(out), steps=1,
                batch_size=4, warmup_steps=0, lr=1e-3, balance=True, train_size=8, eval_size=2, eval_every=1,
                checkpoint_every=1, max_new_tokens=8, threads=1)
    return Args(**{**base, **overrides})


def grpo_args(model: str, out: Path, **overrides):
    from trainers.grpo_config import GRPOConfig as Args

    base = dict(env_id=ENV_ID, env_kwargs=ENV_KWARGS, model=model, out=str(out), steps=1, prompts_per_step=2,
                group_size=2, max_completion_len=8, eval_every=1, eval_windows=2, checkpoint_every=1, threads=1)
    return Args(**{**base, **overrides})


def _refuses_finished_then_resumes_unfinished(main, out: Path, args) -> None:
    """A finished run is never retrained, with or without --resume (its final model is named as the way
    on); once it looks killed after its checkpoint (no summary, no final model), it needs --resume."""
    for resume in (False, True):
        with pytest.raises(ValueError, match=f"finished run .*--model {out / 'final'} --out NEW"):
            main(args(resume=resume))
    (out / "results.json").unlink()
    shutil.rmtree(out / "final")
    with pytest.raises(ValueError, match="pass --resume"):
        main(args())


@pytest.fixture(scope="module")
def sft_model(tmp_path_factory) -> Path:
    """1 SFT step, then (as if killed after that checkpoint) resumed to 2: the model GRPO starts from."""
    from trainers.sft import main

    out = tmp_path_factory.mktemp("sft")
    first = main(sft_args(out))
    assert first["steps"] == 1 and first["resumed_from"] is None
    # a fresh model is not evaluated before training (it scores 0 and generates to the full budget)
    assert [e["step"] for e in first["eval"]] == [1]
    _refuses_finished_then_resumes_unfinished(main, out, lambda **kw: sft_args(out, steps=2, **kw))
    second = main(sft_args(out, steps=2, resume=True))
    assert second["steps"] == 2 and second["resumed_from"].endswith("checkpoint-1")
    return out


def test_sft_writes_model_checkpoints_and_split_accuracy(sft_model):
    results = json.loads((sft_model / "results.json").read_text())
    assert (sft_model / "final" / "model.safetensors").exists() and (sft_model / "final" / "tokenizer.json").exists()
    assert (sft_model / "checkpoint-2").is_dir()
    evals = results["eval"]
    assert [e["step"] for e in evals] == [1, 2]  # the resumed run: at its start and its end
    for record in evals:
        assert {"eval/accuracy", "eval/accuracy_changed", "eval/accuracy_unchanged"} <= set(record)
        assert record["eval/n_changed"] + record["eval/n_unchanged"] == record["eval/n"] == 2
    logged = [json.loads(line) for line in (sft_model / "log.jsonl").read_text().splitlines()]
    assert any("loss" in entry for entry in logged)


def test_sft_dataset_trains_on_the_answer_only():
    from rlvr_envs.registration import task_from_env_id
    from trainers.sft import sft_dataset

    task = task_from_env_id(ENV_ID, split="train", size=8)
    row = sft_dataset(task, [3])[0]
    prompt, target = task.prompt_ids(3).tolist(), task.target_ids(3).tolist()
    assert row["input_ids"] == prompt + target + [task.eos_token_id]
    assert row["completion_mask"] == [0] * len(prompt) + [1] * (len(target) + 1)


@pytest.mark.parametrize("prompt_loss", [False, True])
def test_prompt_loss_decides_whether_prompt_tokens_carry_labels(prompt_loss, tmp_path):
    from trl import SFTTrainer

    from rlvr_envs.registration import task_from_env_id
    from trainers.sft import build_text_model, sft_config, sft_dataset

    task = task_from_env_id(ENV_ID, split="train", size=8)
    args = sft_args(tmp_path, prompt_loss=prompt_loss).validate()
    trainer = SFTTrainer(model=build_text_model(task.tokenizer, "micro"), args=sft_config(args),
                         train_dataset=sft_dataset(task, [3]), processing_class=task.tokenizer)
    labels = trainer.data_collator([trainer.train_dataset[0]])["labels"][0].tolist()
    prompt = len(task.prompt_ids(3))
    answer = task.target_ids(3).tolist() + [task.eos_token_id]
    assert labels[prompt:] == answer  # the answer is always trained on
    assert all(label == -100 for label in labels[:prompt]) != prompt_loss
    if prompt_loss:
        assert labels[:prompt] == task.prompt_ids(3).tolist()


def test_fixed_length_batches_have_one_shape_and_the_same_loss(tmp_path):
    """What a compiled SFT model sees (one shape, padded to the longest example): the padding carries
    no label, so the loss on a batch is the plain batch's."""
    import torch
    from trl import SFTTrainer

    from rlvr_envs.registration import task_from_env_id
    from trainers.sft import build_text_model, sft_config, sft_dataset

    task = task_from_env_id(ENV_ID, split="train", size=8)
    longest = task.max_prompt_len + task.max_response_len + 1
    model = build_text_model(task.tokenizer, "micro").eval()
    losses, shapes = [], []
    for fixed in (False, True):
        args = sft_args(tmp_path / str(fixed), fixed_length=fixed).validate()
        trainer = SFTTrainer(model=model, args=sft_config(args, longest=longest),
                             train_dataset=sft_dataset(task, [1, 3, 5]), processing_class=task.tokenizer)
        batch = trainer.data_collator([trainer.train_dataset[i] for i in range(3)])
        shapes.append(tuple(batch["input_ids"].shape))
        with torch.no_grad():
            losses.append(model(**{k: batch[k] for k in ("input_ids", "attention_mask", "labels")}).loss.item())
    assert shapes[1] == (3, longest) and shapes[0][1] < longest
    assert losses[1] == pytest.approx(losses[0], rel=1e-5)


def test_grpo_language_runs_and_resumes(sft_model, tmp_path):
    from trainers.grpo import main

    model = str(sft_model / "final")
    first = main(grpo_args(model, tmp_path))
    assert first["steps"] == 1 and first["processes"] == 1 and first["reward_failures"] == 0
    assert 0.0 <= first["frac_zero_spread_groups"] <= 1.0
    assert {"eval/accuracy_changed", "eval/accuracy_unchanged"} <= set(first["eval"][-1])
    _refuses_finished_then_resumes_unfinished(main, tmp_path, lambda **kw: grpo_args(model, tmp_path, steps=2, **kw))
    second = main(grpo_args(model, tmp_path, steps=2, resume=True))
    assert second["steps"] == 2 and second["resumed_from"].endswith("checkpoint-1")
    assert (tmp_path / "final" / "model.safetensors").exists()
    logged = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    train_logs = [entry for entry in logged if "frac_reward_zero_std" in entry]
    assert [entry["step"] for entry in train_logs] == [1, 2]
    assert all("MiniTextWorld-v0/metrics/exact" in entry for entry in train_logs)  # verifier components logged


def test_grpo_language_with_lora_saves_a_merged_model(sft_model, tmp_path):
    from trainers.grpo import main

    results = main(grpo_args(str(sft_model / "final"), tmp_path, lora_r=2, beta=0.0, eval_windows=1))
    assert results["steps"] == 1
    assert (tmp_path / "final" / "model.safetensors").exists()
    assert not (tmp_path / "final" / "adapter_config.json").exists()  # merged: loads as a plain model


def test_rloo_runs_through_trls_rloo_trainer(sft_model, tmp_path):
    from trainers.grpo import main

    results = main(grpo_args(str(sft_model / "final"), tmp_path, algorithm="rloo", eval_windows=1))
    assert results["steps"] == 1 and results["reward_failures"] == 0 and results["args"]["algorithm"] == "rloo"
    logged = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert any("frac_reward_zero_std" in entry for entry in logged)


def test_impossible_configs_fail_before_training(sft_model, tmp_path, monkeypatch):
    from transformers import AutoTokenizer

    from rlvr_envs.core.tokenizers import load_tokenizer
    from trainers.grpo import main
    from trainers.grpo_language import build
    from trainers.sft import build_text_model

    with pytest.raises(ValueError, match="--model"):
        main(grpo_args("", tmp_path / "a"))
    with pytest.raises(ValueError, match="group_size"):
        main(grpo_args(str(sft_model / "final"), tmp_path / "b", group_size=1))

    # a model whose embedding is smaller than the task's vocabulary
    small = build_text_model(load_tokenizer("minitextworld"), "micro")
    small.resize_token_embeddings(512)
    small.save_pretrained(tmp_path / "small")
    with pytest.raises(ValueError, match="vocabulary mismatch"):
        build(grpo_args(str(tmp_path / "small"), tmp_path / "c"))

    # a model saved with another tokenizer of the same size (the web BPE) against the text-game task
    other = tmp_path / "other"
    build_text_model(load_tokenizer("minitextworld"), "micro").save_pretrained(other)
    load_tokenizer("miniweb").save_pretrained(other)
    with pytest.raises(ValueError, match="vocabulary mismatch"):
        build(grpo_args(str(other), tmp_path / "d", env_kwargs=ENV_KWARGS + ("tokenizer=minitextworld",)))
    assert len(AutoTokenizer.from_pretrained(other)) == len(load_tokenizer("minitextworld"))

    # samples per step that cannot be split over the processes
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(ValueError, match="processes"):
        build(grpo_args(str(sft_model / "final"), tmp_path / "e"))
    for out in "abcde":
        assert not (tmp_path / out / "log.jsonl").exists()


def test_grpo_balance_draws_changed_and_unchanged_prompts_equally_and_changed_only_one_kind(sft_model, tmp_path):
    from trainers.grpo import main
    from trainers.grpo_language import build

    plain = build(grpo_args(str(sft_model / "final"), tmp_path / "a"))["dataset"]
    balanced = build(grpo_args(str(sft_model / "final"), tmp_path / "b", balance=True))["dataset"]
    assert len(plain) == 8 and plain["index"] == list(range(8))
    changed = balanced["changed"]
    assert 0 < sum(plain["changed"]) < 8, "the fixture needs both kinds of transition"
    assert changed.count(True) == changed.count(False) == max(plain["changed"].count(True),
                                                             plain["changed"].count(False))
    only = build(grpo_args(str(sft_model / "final"), tmp_path / "d", changed_only=True))["dataset"]
    assert only["changed"] == [True] * plain["changed"].count(True)
    assert only["index"] == [i for i, c in zip(plain["index"], plain["changed"]) if c]
    for flag in ("balance", "changed_only"):
        with pytest.raises(ValueError, match="are for language tasks"):
            main(grpo_args("", tmp_path / "c", env_id="RLVRWorld/PushT-SingleStep-v0", env_kwargs=(), **{flag: True}))
    with pytest.raises(ValueError, match="exclude each other"):
        grpo_args("", tmp_path / "e", balance=True, changed_only=True).validate()


def test_sft_rejects_model_and_from_scratch_together(tmp_path):
    with pytest.raises(ValueError, match="exactly one"):
        sft_args(tmp_path, model="some/model").validate()


@pytest.mark.slow
def test_grpo_language_under_accelerate_with_two_processes(sft_model, tmp_path):
    """`--multi_gpu --num_processes 2` on a CPU runs 2 gloo processes (`--cpu` runs 1)."""
    out = tmp_path / "grpo2"
    command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
               "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
               "-m", "trainers.grpo", "--env-id", ENV_ID, "--env-kwargs", *ENV_KWARGS,
               "--model", str(sft_model / "final"), "--out", str(out), "--steps", "1", "--prompts-per-step", "2",
               "--group-size", "2", "--max-completion-len", "8", "--eval-windows", "2", "--threads", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["processes"] == 2 and results["steps"] == 1
    assert (out / "final" / "model.safetensors").exists()


def test_bf16_autocast_only_on_cpus_with_native_bf16():
    from rlvr_envs.core.device import cpu_has_native_bf16

    assert cpu_has_native_bf16("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile\n")
    assert cpu_has_native_bf16("flags\t\t: fpu amx_bf16 amx_tile\n")
    # AVX512 without BF16 emulates it (2x slower than fp32 here): train in fp32
    assert not cpu_has_native_bf16("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512bw avx512vl\n")
    assert not cpu_has_native_bf16("")


def test_time_limit_stops_training_and_records_the_step():
    from types import SimpleNamespace

    from rlvr_envs.integrations.hf import TimeLimit

    state, control = SimpleNamespace(global_step=3, is_world_process_zero=True), SimpleNamespace(
        should_training_stop=False)
    unlimited = TimeLimit(0)
    unlimited.on_train_begin(None, state, control)
    unlimited.on_step_end(None, state, control)
    assert not control.should_training_stop and unlimited.stopped_at is None
    generous = TimeLimit(3600)
    generous.on_train_begin(None, state, control)
    generous.on_step_end(None, state, control)
    assert not control.should_training_stop
    spent = TimeLimit(1e-9)
    spent.on_train_begin(None, state, control)
    spent.on_step_end(None, state, control)
    assert control.should_training_stop and spent.stopped_at == 3


def test_time_limit_times_the_first_step_apart_from_the_steady_ones(monkeypatch):
    """A compiled model compiles in its first step: the steady rate leaves it out (fake clock)."""
    from types import SimpleNamespace

    import rlvr_envs.integrations.hf as hf

    now = [100.0]
    monkeypatch.setattr(hf.time, "time", lambda: now[0])  # the run clock's (rlvr_envs.core.run_clock)
    state, control = SimpleNamespace(global_step=0, is_world_process_zero=True), SimpleNamespace(
        should_training_stop=False)
    limit = hf.TimeLimit(0)
    limit.on_train_begin(None, state, control)
    assert limit.steady_rate() is None
    for spent in (30.0, 0.5, 0.5, 0.5, 0.5):  # the first step compiles
        now[0] += spent
        limit.on_step_end(None, state, control)
    assert limit.first_step_seconds == 30.0 and limit.steps == 5
    assert limit.steady_rate() == pytest.approx(2.0)  # 4 steps in 2 s after the first


def test_dr_grpo_also_leaves_advantages_unscaled_as_the_video_loop_does(sft_model, tmp_path):
    from trainers.grpo_language import build

    for loss_type, scale in (("grpo", "group"), ("dr_grpo", "none"), ("dapo", "group")):
        config = build(grpo_args(str(sft_model / "final"), tmp_path / loss_type, loss_type=loss_type))["config"]
        assert config.loss_type == loss_type and config.scale_rewards == scale


def test_prompt_filter_keeps_prompts_with_a_reward_spread_and_resumes_after_a_kill(sft_model, tmp_path, monkeypatch):
    import rlvr_envs.integrations.hf as hf
    from trainers.prompt_filter import Args, main

    def args(**overrides):
        base = dict(env_id=ENV_ID, env_kwargs=ENV_KWARGS, model=str(sft_model / "final"), out=str(tmp_path / "p.json"),
                    samples=3, batch_size=6, max_completion_len=8, threads=1)
        return Args(**{**base, **overrides})

    calls: list[list[int]] = []
    monkeypatch.setattr(hf, "generate", gold_for_first_samples(lambda i: i % 4, calls))  # 0, 1, 2, 3 of 3 solved
    report = main(args())
    assert report["solved"] == {str(i): min(i % 4, 3) for i in range(8)}
    assert report["indices"] == [i for i in range(8) if i % 4 in (1, 2)]
    assert (report["never_solved"], report["always_solved"]) == (2, 2)
    assert all(len(c) == 6 for c in calls) and len(calls) == 4  # 2 prompts x 3 samples per batch

    # killed after its first batch: the saved file holds that batch, and a rerun does only the rest
    (tmp_path / "p.json").unlink()

    def dies_on_second_batch(model, task, indices, **kwargs):
        if calls:
            raise KeyboardInterrupt
        return gold_for_first_samples(lambda i: i % 4, calls)(model, task, indices)
    calls.clear()
    monkeypatch.setattr(hf, "generate", dies_on_second_batch)
    with pytest.raises(KeyboardInterrupt):
        main(args())
    partial = json.loads((tmp_path / "p.json").read_text())
    assert partial["candidates"] == 2 and not (tmp_path / "p.json.tmp").exists()
    calls.clear()
    monkeypatch.setattr(hf, "generate", gold_for_first_samples(lambda i: i % 4, calls))
    assert main(args()) == report
    assert sorted(i for c in calls for i in set(c)) == list(range(2, 8))

    with pytest.raises(SystemExit, match="other settings"):
        main(args(samples=4))
    only = main(args(changed_only=True, out=str(tmp_path / "changed.json")))
    from trainers.prompt_filter import training_task
    task = training_task(ENV_ID, str(sft_model / "final"), ENV_KWARGS)
    assert [int(i) for i in only["solved"]] == [i for i in range(8) if task.transition(i).changed]
    rest = main(args(unchanged_only=True, out=str(tmp_path / "unchanged.json")))
    assert [int(i) for i in rest["solved"]] == [i for i in range(8) if task.transition(i).changed is False]
    for bad in (dict(samples=1), dict(temperature=0.0), dict(model=""), dict(changed_only=True, unchanged_only=True)):
        with pytest.raises(ValueError):
            args(**bad).validate()


def test_grpo_draws_training_prompts_from_a_prompt_filter_file(sft_model, tmp_path, monkeypatch, capsys):
    import rlvr_envs.integrations.hf as hf
    from trainers.grpo import main, parse_args
    from trainers.grpo_language import build
    from trainers.prompt_filter import Args as FilterArgs
    from trainers.prompt_filter import main as prompt_filter

    monkeypatch.setattr(hf, "generate", gold_for_first_samples(lambda i: i % 3, []))
    kept = prompt_filter(FilterArgs(env_id=ENV_ID, env_kwargs=ENV_KWARGS, model=str(sft_model / "final"),
                                    out=str(tmp_path / "p.json"), samples=2, max_completion_len=8, threads=1))
    assert kept["indices"] == [1, 4, 7]
    dataset = build(grpo_args(str(sft_model / "final"), tmp_path / "a", prompts=(str(tmp_path / "p.json"),)))["dataset"]
    assert dataset["index"] == [1, 4, 7]
    # several files train on the union of what they kept (here: changed and unchanged transitions filtered apart)
    files = {kind: prompt_filter(FilterArgs(env_id=ENV_ID, env_kwargs=ENV_KWARGS, model=str(sft_model / "final"),
                                            out=str(tmp_path / f"{kind}.json"), samples=2, max_completion_len=8,
                                            threads=1, **{f"{kind}_only": True}))
             for kind in ("changed", "unchanged")}
    both = sorted(set(files["changed"]["indices"]) | set(files["unchanged"]["indices"]))
    assert both == [1, 4, 7] and files["changed"]["indices"] and files["unchanged"]["indices"]
    paths = tuple(str(tmp_path / f"{kind}.json") for kind in ("changed", "unchanged"))
    assert build(grpo_args(str(sft_model / "final"), tmp_path / "u", prompts=paths))["dataset"]["index"] == both

    with pytest.raises(ValueError, match="training prompts; this run trains"):  # made for another training set
        build(grpo_args(str(sft_model / "final"), tmp_path / "b", env_kwargs=("size=12",),
                        prompts=(str(tmp_path / "p.json"),)))
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a trainers.prompt_filter file"):
        build(grpo_args(str(sft_model / "final"), tmp_path / "c", prompts=(str(tmp_path / "broken.json"),)))
    with pytest.raises(ValueError, match="exclude each other"):
        grpo_args("", tmp_path / "d", balance=True, prompts=(str(tmp_path / "p.json"),)).validate()
    # a file that kept nothing, or that is no filter file, fails before any model loads: one line, exit 1 (data)
    (tmp_path / "none.json").write_text(json.dumps({**json.loads((tmp_path / "p.json").read_text()), "indices": []}))
    for bad, said in (("none.json", "keeps no prompt"), ("broken.json", "not a trainers.prompt_filter file")):
        with pytest.raises(SystemExit) as stop:
            parse_args(["--env-id", ENV_ID, "--model", str(sft_model / "final"), "--prompts", str(tmp_path / bad),
                        "--out", str(tmp_path / "f")])
        assert stop.value.code == 1 and said in capsys.readouterr().err
    with pytest.raises(ValueError, match="are for language tasks"):
        main(grpo_args("", tmp_path / "e", env_id="RLVRWorld/PushT-SingleStep-v0", env_kwargs=(),
                       prompts=(str(tmp_path / "p.json"),)))


#: a GRPO run that kills itself with SIGKILL right after logging step 3 (its checkpoint is step 2)
KILLED_RUN = """
import os, signal, sys
from rlvr_envs.integrations import hf
logged = hf.JsonlLog.on_log
def on_log(self, args, state, control, logs=None, **kwargs):
    logged(self, args, state, control, logs=logs, **kwargs)
    if state.global_step == 3 and logs and "loss" in logs:
        os.kill(os.getpid(), signal.SIGKILL)
hf.JsonlLog.on_log = on_log
from trainers.grpo import main, parse_args
main(parse_args(sys.argv[1:]))
"""


def test_a_killed_and_resumed_grpo_run_logs_each_step_once_in_strict_json(sft_model, tmp_path):
    """kill -9 after step 3 with the last checkpoint at step 2, then --resume to 4 steps: steps 1-4
    logged once each (training and evaluation records), every line strict JSON (NaN as null)."""
    argv = ["--env-id", ENV_ID, "--env-kwargs", *ENV_KWARGS, "--model", str(sft_model / "final"),
            "--out", str(tmp_path), "--steps", "4", "--prompts-per-step", "2", "--group-size", "2",
            "--max-completion-len", "8", "--eval-every", "1", "--eval-windows", "2", "--checkpoint-every", "2",
            "--threads", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    killed = subprocess.run([sys.executable, "-c", KILLED_RUN, *argv], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=600)
    assert killed.returncode == -9, killed.stderr[-2000:]
    before = (tmp_path / "log.jsonl").read_text().splitlines()
    assert any(json.loads(line)["step"] == 3 for line in before)  # step 3 was logged before the kill
    from trainers.grpo import main, parse_args

    resumed = main(parse_args([*argv, "--resume"]))
    assert resumed["resumed_from"].endswith("checkpoint-2") and resumed["steps"] == 4

    def strict(line: str):
        return json.loads(line, parse_constant=lambda name: pytest.fail(f"non-JSON constant {name} in {line}"))

    records = [strict(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    train = [r["step"] for r in records if "loss" in r]
    evals = [r["step"] for r in records if "eval/accuracy" in r]
    assert train == [1, 2, 3, 4] and evals == [0, 1, 2, 3, 4], records


def test_log_lines_are_strict_json_with_nan_as_null(tmp_path):
    from rlvr_envs.core.files import json_line, keep_log_until
    from rlvr_envs.integrations.hf import append_jsonl

    import numpy as np

    append_jsonl(tmp_path / "log.jsonl", {"step": 1, "reward_std": float("nan"), "x": [np.float32("inf"), 1.5],
                                          "n": np.int64(3)})
    line = (tmp_path / "log.jsonl").read_text()
    assert json.loads(line) == {"step": 1, "reward_std": None, "x": [None, 1.5], "n": 3} and "NaN" not in line
    assert json_line({"a": float("-inf")}) == '{"a": null}\n'
    (tmp_path / "log.jsonl").write_text(line + json_line({"step": 2}) + '{"step": 3, "lo')  # a kill cut line 3
    keep_log_until(tmp_path / "log.jsonl", 2)
    assert [json.loads(x)["step"] for x in (tmp_path / "log.jsonl").read_text().splitlines()] == [1, 2]
