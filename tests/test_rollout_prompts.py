"""GRPO prompts from a world model's own rollouts (trainers.rollout_prompts): each prompt is
the simulator's context after its own predictions, the truth is the real simulator's, and
GRPO trains on them through `VideoPredictionTask.with_windows`."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A tiny world model, PushT episodes (the embedded held-out set's) and a prompts file."""
    from rlvr_envs.core.factory import build_task
    from rlvr_envs.video.task import embedded_heldout_dir
    from rlvr_envs.video.world_model import build_world_model
    from trainers.rollout_prompts import Args, main

    task = build_task("rlvr_envs.video.task:VideoPredictionTask", layout="single", reward="mae")
    root = tmp_path_factory.mktemp("rollout_prompts")
    build_world_model(task.vocab, task.max_prompt_len + task.max_response_len, preset="tiny",
                      seed=0).save_pretrained(root / "model")
    data = embedded_heldout_dir(task.config.episodes, task.tokenizer.config.resolution[0])
    out = root / "prompts.npz"
    meta = main(Args(model=str(root / "model"), data=str(data), starts=3, horizon=3, batch_size=2, threads=1,
                     out=str(out)))
    return task, root / "model", data, out, meta


def test_prompts_are_the_simulators_contexts_after_its_own_predictions(made):
    from rlvr_envs.simulators import LearnedPushTSim
    from rlvr_envs.video.world_model import generate_responses
    from trainers.rollout_prompts import load_rollout_prompts

    task, model, _, out, meta = made
    loaded = load_rollout_prompts(out)
    prompts = loaded["prompts"]
    assert prompts.shape == (9, task.layout.prompt_len) and meta["prompts"] == 9
    assert [u.rsplit("/", 1)[1] for u in loaded["uids"]] == ["0", "1", "2"] * 3
    sim = LearnedPushTSim(str(model), reward="none")
    frame_len, step = task.layout.tokens_per_frame, task.layout.tokens_per_frame + task.bins.dim
    greedy = generate_responses(sim.model, prompts, task.layout, temperature=0.0)[:, :frame_len]
    for start in range(3):
        for d in range(2):  # prompt d+1 = prompt d's window slid by one, ending in prompt d's greedy answer
            now, after = prompts[3 * start + d], prompts[3 * start + d + 1]
            assert np.array_equal(after[:2 * step], now[step:3 * step])
            assert np.array_equal(after[2 * step:2 * step + frame_len], greedy[3 * start + d])


def test_truth_is_the_real_simulators_rollout_of_the_stored_targets(made):
    from rlvr_envs.simulators import PushTChunkEnv

    _, _, _, out, _ = made
    with np.load(out, allow_pickle=False) as data:
        truth, targets, physics = data["truth"], data["targets"], data["physics"]
    assert targets.shape == (3, 3, 5, 2) and physics.shape == (3, 10)
    real = PushTChunkEnv(resolution=64)
    for start in range(3):
        rolled = real.rollout(targets[start][None], start=physics[start])[0]
        assert np.array_equal(rolled, truth[3 * start:3 * start + 3])
    real.close()


def test_with_windows_scores_gold_at_the_ceiling_and_refuses_malformed_windows(made):
    from trainers.rollout_prompts import load_rollout_prompts

    task, _, _, out, _ = made
    loaded = load_rollout_prompts(out)
    windows = task.with_windows(loaded["prompts"], loaded["truth"], loaded["uids"])
    assert len(windows) == 9 and len(task) != 9  # a copy: the original keeps its windows
    gold = [windows.target_ids(i) for i in range(9)]
    results = windows.verify(list(range(9)), gold)
    assert all(r.reward == pytest.approx(r.metrics["ceiling"]) for r in results)
    assert np.array_equal(windows.prompt_ids(4), loaded["prompts"][4])
    with pytest.raises(ValueError, match="prompts must be"):
        task.with_windows(loaded["prompts"][:, 1:], loaded["truth"], loaded["uids"])
    with pytest.raises(ValueError, match="truth must be"):
        task.with_windows(loaded["prompts"], loaded["truth"][:, :32], loaded["uids"])
    bad = loaded["prompts"].copy()
    bad[:, -1] = 0
    with pytest.raises(ValueError, match="layout"):
        task.with_windows(bad, loaded["truth"], loaded["uids"])


def test_grpo_trains_on_a_prompts_file_and_refuses_another_tokenizers(made, tmp_path):
    import json

    from trainers.grpo import main, parse_args

    _, model, data, out, _ = made
    argv = ["--env-kwargs", "reward=mae", f"data_dir={data}", "size=24", "--model", str(model),
            "--video-prompts", str(out), "--steps", "2", "--prompts-per-step", "2", "--group-size", "3",
            "--eval-windows", "4", "--eval-every", "100", "--checkpoint-every", "1", "--threads", "1"]
    card = main(parse_args([*argv, "--out", str(tmp_path / "run")]))
    assert card["steps"] == 2 and "--video-prompts" in card["command"]
    rows = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(np.isfinite(r["reward"]) for r in rows)

    with np.load(out, allow_pickle=False) as loaded:
        arrays = {key: loaded[key] for key in loaded.files}
    meta = json.loads(str(arrays["meta"]))
    arrays["meta"] = np.asarray(json.dumps(meta | {"tokenizer": str(tmp_path / "another_tokenizer")}))
    np.savez(tmp_path / "other.npz", **arrays)
    with pytest.raises(ValueError, match="made with the tokenizer"):
        main(parse_args([*argv[:argv.index("--video-prompts") + 1], str(tmp_path / "other.npz"),
                         *argv[argv.index("--video-prompts") + 2:], "--out", str(tmp_path / "run2")]))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a trainers.rollout_prompts file"):
        main(parse_args([*argv[:argv.index("--video-prompts") + 1], str(tmp_path / "junk.npz"),
                         *argv[argv.index("--video-prompts") + 2:], "--out", str(tmp_path / "run3")]))
