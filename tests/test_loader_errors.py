"""Every loader names a corrupt or hostile file (and its row) and says what to do, through the
project's error types (`rlvr_envs.core.errors`), case by case as issue 33 (D4) found them."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from rlvr_envs.core.errors import DataError

ASSETS = Path(__file__).resolve().parents[1] / "rlvr_envs" / "assets"


def cut(path: Path, keep: int | None = None) -> Path:
    """Truncate `path` (to half unless `keep` bytes), as an interrupted copy leaves it."""
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) // 2 if keep is None else keep)
    return path


@pytest.fixture
def world_model(tmp_path) -> Path:
    return Path(shutil.copytree(ASSETS / "video" / "pusht_single_step_model", tmp_path / "wm"))


@pytest.fixture
def text_model(tmp_path) -> Path:
    return Path(shutil.copytree(ASSETS / "text" / "minitextworld_sft_model", tmp_path / "tm"))


def test_truncated_world_model_weights_name_the_file(world_model):
    pytest.importorskip("torch")
    from rlvr_envs.simulators import LearnedPushTSim
    from rlvr_envs.video.world_model import load_world_model

    cut(world_model / "model.safetensors")
    for load in (lambda: load_world_model(str(world_model)), lambda: LearnedPushTSim(model=world_model)):
        with pytest.raises(DataError, match=rf"{world_model}/model\.safetensors: .*cut short.*retrain it"):
            load()


def test_corrupt_world_model_config_is_named_not_called_missing(world_model):
    pytest.importorskip("torch")
    from rlvr_envs.simulators import LearnedPushTSim

    cut(world_model / "config.json", 30)
    with pytest.raises(DataError, match=rf"{world_model}/config\.json:\d+: .*not valid JSON") as caught:
        LearnedPushTSim(model=world_model)
    assert "no world model" not in str(caught.value)


def test_truncated_card_is_an_error_not_an_empty_card(world_model):
    pytest.importorskip("torch")
    from rlvr_envs.simulators import LearnedPushTSim

    cut(world_model / "card.json", 30)
    with pytest.raises(DataError, match=rf"{world_model}/card\.json:\d+: .*not valid JSON"):
        LearnedPushTSim(model=world_model)


def test_truncated_text_model_weights_and_tokenizer_name_the_file(text_model):
    from rlvr_envs.core.files import check_model_source
    from rlvr_envs.core.tokenizers import load_tokenizer

    cut(text_model / "tokenizer.json")
    with pytest.raises(DataError, match=rf"{text_model}/tokenizer\.json:\d+: the tokenizer's tokenizer\.json is not"):
        load_tokenizer(str(text_model))
    shutil.copy(ASSETS / "text" / "minitextworld_sft_model" / "tokenizer.json", text_model)
    cut(text_model / "model.safetensors")
    with pytest.raises(DataError, match=rf"{text_model}/model\.safetensors: the model \(--model\)'s weights file is "
                                        r"cut short"):
        check_model_source(text_model, "the model (--model)")


@pytest.mark.parametrize("spoil, match", [
    (lambda data: data + b"\0" * 16, "longer than its header says"),
    (lambda data: (10**12).to_bytes(8, "little") + data[8:], "not a safetensors file"),
    (lambda data: data[:8] + b"[" * (len(data) - 8), "nested too deeply|not valid JSON"),
    (lambda data: b"", "not a safetensors file"),
])
def test_hostile_safetensors_headers_are_refused_by_name(tmp_path, spoil, match):
    from rlvr_envs.core.files import check_safetensors

    path = tmp_path / "model.safetensors"
    path.write_bytes(spoil((ASSETS / "video" / "pusht_single_step_model" / "model.safetensors").read_bytes()))
    with pytest.raises(DataError, match=rf"{path}.*({match})"):
        check_safetensors(path, "the weights")


def test_model_argument_that_names_nothing_is_refused_before_any_work(tmp_path):
    from trainers.grpo_config import GRPOConfig as Args

    with pytest.raises(FileNotFoundError, match="no model \\(--model\\) at /nonexistent"):
        Args(env_id="RLVRWorld/MiniTextWorld-v0", model="/nonexistent").validate()
    (tmp_path / "file").write_text("x")
    with pytest.raises(DataError, match="must be a directory"):
        Args(env_id="RLVRWorld/MiniTextWorld-v0", model=str(tmp_path / "file")).validate()


def test_truncated_rollout_prompts_file_names_the_file(tmp_path):
    from trainers.rollout_prompts import load_rollout_prompts

    path = tmp_path / "prompts.npz"
    np.savez(path, prompts=np.zeros((2, 3), dtype=np.int64), truth=np.zeros(2), uids=np.array(["a", "b"]),
             meta=np.array("{}"))
    assert load_rollout_prompts(path)["uids"] == ["a", "b"]
    cut(path)
    with pytest.raises(DataError, match=rf"{path}: not a trainers.rollout_prompts file, or one cut short.*prompts`"):
        load_rollout_prompts(path)


class _Hostile:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_hostile_or_truncated_training_state_is_refused_naming_the_file(tmp_path):
    torch = pytest.importorskip("torch")
    from rlvr_envs.core.files import load_torch_file
    from trainers.common import RESUME_REMEDY

    path = tmp_path / "checkpoint" / "state.pt"
    path.parent.mkdir()
    with open(path, "wb") as handle:
        pickle.dump({"step": 3, "payload": _Hostile()}, handle, protocol=2)
    with pytest.raises(DataError) as caught:
        load_torch_file(path, "the training state", RESUME_REMEDY)
    message = str(caught.value)
    assert message.startswith(f"{path}: the training state holds objects other than tensors")
    assert "weights_only=False" not in message and "drop --resume" in message and "\n" not in message
    torch.save({"step": 3, "optimizer": {"lr": torch.ones(4)}}, path)
    assert load_torch_file(path, "the training state")["step"] == 3
    cut(path)
    with pytest.raises(DataError, match=rf"{path}: the training state is unreadable or cut short"):
        load_torch_file(path, "the training state")
