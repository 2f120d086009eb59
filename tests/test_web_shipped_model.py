"""The shipped MiniWeb world model: it loads as a model of the task's tokens, its card says how it
was made, and it answers held-out MiniWeb-v0 transitions as a world model (answers parse, and it
predicts changed pages, not only "nothing changes")."""

from __future__ import annotations

import json
import pytest

from rlvr_envs.core.paths import ASSETS

torch = pytest.importorskip("torch")

MODEL = ASSETS / "web" / "miniweb_sft_model"


def test_shipped_miniweb_model_answers_held_out_transitions():
    from transformers import AutoConfig, AutoModelForCausalLM

    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.integrations.hf import evaluate_accuracy
    from trainers.sft import check_vocabulary

    torch.set_num_threads(1)
    card = json.loads((MODEL / "card.json").read_text())
    assert card["command"].startswith("python -m trainers.sft") and card["held_out"]["eval/reward"] > 0.1
    assert sum(p.stat().st_size for p in MODEL.iterdir()) < 10e6
    task = task_from_env_id("RLVRWorld/MiniWeb-v0", split="test", size=12, tokenizer=str(MODEL))
    check_vocabulary(str(MODEL), AutoConfig.from_pretrained(MODEL), task)  # raises on a mismatch
    model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    report = evaluate_accuracy(model, task, max_new_tokens=320)
    assert report["parsed"] >= 0.9 and report["n_changed"] > 0
    assert report["reward"] > 0.1
