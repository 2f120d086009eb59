"""A model folder travels as one bf16 file and comes back loadable; a hostile bundle is refused by name."""

import json

import pytest
import torch

from rlvr_envs.core import bundle
from rlvr_envs.core.errors import DataError
from rlvr_envs.core.paths import ASSETS

TEXT_MODEL = ASSETS / "text" / "minitextworld_sft_longer_model"
PUSHT_MODEL = ASSETS / "video" / "pusht_single_step_model"


@pytest.mark.parametrize("folder", [TEXT_MODEL, PUSHT_MODEL], ids=["text", "pusht"])
def test_a_packed_model_is_one_bf16_file_and_unpacks_to_the_same_model(tmp_path, folder):
    from transformers import AutoModelForCausalLM

    from rlvr_envs.core.files import check_safetensors

    bundle.pack(folder, tmp_path / "model.safetensors")
    assert {dtype for dtype, _ in check_safetensors(tmp_path / "model.safetensors", "bundle").values()} == {"BF16"}
    restored = bundle.unpack(tmp_path / "model.safetensors", tmp_path / "restored")
    assert {p.name for p in folder.iterdir()} <= {p.name for p in restored.iterdir()}
    assert json.loads((restored / "config.json").read_text()) == json.loads((folder / "config.json").read_text())
    original = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    back = AutoModelForCausalLM.from_pretrained(restored, dtype=torch.float32).eval()
    for name, value in back.state_dict().items():
        assert value.dtype == torch.float32
        assert torch.equal(value, original.state_dict()[name].to(torch.bfloat16).float()), name


def test_a_bundle_naming_a_path_or_another_format_is_refused(tmp_path):
    from safetensors.torch import save_file

    weights = {"w": torch.zeros(2)}
    save_file(weights, str(tmp_path / "plain.safetensors"))
    with pytest.raises(DataError, match="not a model bundle"):
        bundle.unpack(tmp_path / "plain.safetensors", tmp_path / "out")
    files = {"config.json": "{}", "../../evil.py": "print('no')"}
    save_file(weights, str(tmp_path / "evil.safetensors"),
              metadata={bundle.FORMAT_KEY: bundle.FORMAT_VERSION, "files": json.dumps(files)})
    with pytest.raises(DataError, match="carries files it may not"):
        bundle.unpack(tmp_path / "evil.safetensors", tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path.parent / "evil.py").exists()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes((tmp_path / "plain.safetensors").read_bytes()[:-3])
    with pytest.raises(DataError, match="cut short"):
        bundle.read_files(cut)
