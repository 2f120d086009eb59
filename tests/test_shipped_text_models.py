"""The shipped MiniTextWorld world models: each loads as a model of the task's tokens, its card
says how it was made, and it answers held-out transitions as a world model, not as "nothing
changes" (its answers parse, and it gets changed transitions right as well as unchanged ones)."""

from __future__ import annotations

import json

import pytest

from rlvr_envs.core.paths import ASSETS

torch = pytest.importorskip("torch")

TEXT_ASSETS = ASSETS / "text"


@pytest.mark.parametrize("name", ["minitextworld_sft_model", "minitextworld_sft_longer_model"])
def test_shipped_minitextworld_model_answers_held_out_transitions(name):
    from transformers import AutoConfig, AutoModelForCausalLM

    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.integrations.hf import evaluate_accuracy
    from trainers.sft import check_vocabulary

    torch.set_num_threads(1)
    folder = TEXT_ASSETS / name
    card = json.loads((folder / "card.json").read_text())
    assert card["command"].startswith("python -m trainers.sft") and card["held_out"]["accuracy_changed"] > 0
    task = task_from_env_id("RLVRWorld/MiniTextWorld-v0", split="test", size=24, tokenizer=str(folder))
    check_vocabulary(str(folder), AutoConfig.from_pretrained(folder), task)  # raises on a mismatch
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    report = evaluate_accuracy(model, task, max_new_tokens=160)
    assert report["parsed"] == 1.0
    assert report["n_changed"] > 0 and report["n_unchanged"] > 0
    assert report["accuracy_changed"] > 0 and report["accuracy_unchanged"] >= 0.8
