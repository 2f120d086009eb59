"""Absurd or lying sizes are refused before anything of that size is allocated (issue 40, item 2):
model and tokenizer folders are checked against their config's bounds and their weights' headers,
and generated tasks' `size=` is bounded; each refusal is one line naming the file and the field or
tensor. Folders are tiny copies of the shipped PushT world model (~4 MB) in tmp_path."""

from __future__ import annotations

import json
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest

from rlvr_envs.core.errors import DataError
from rlvr_envs.core.files import check_model_dir

ASSETS = Path(__file__).resolve().parents[1] / "rlvr_envs" / "assets"
WORLD_MODEL = ASSETS / "video" / "pusht_single_step_model"


def copy_model(tmp_path: Path, **config) -> Path:
    """A copy of the shipped world model whose config.json has `config`'s fields replaced."""
    directory = tmp_path / "wm"
    shutil.copytree(WORLD_MODEL, directory)
    path = directory / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **config}))
    return directory


def refused(directory: Path, match: str) -> str:
    """The one-line DataError `check_model_dir` raises, checked to come in < 1 s and < 100 MB."""
    tracemalloc.start()
    started = time.perf_counter()
    with pytest.raises(DataError, match=match) as caught:
        check_model_dir(directory, "the world model")
    seconds, peak = time.perf_counter() - started, tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    message = str(caught.value)
    assert seconds < 1 and peak < 100 * 2**20 and "\n" not in message, (seconds, peak, message)
    return message


def rewrite_header(path: Path, change) -> None:
    """Rewrite a safetensors file's JSON header through `change(header)`, keeping its data."""
    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    change(header)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data[8 + length:])


def test_absurd_layer_count_is_refused_naming_config_and_field(tmp_path):
    directory = copy_model(tmp_path, num_hidden_layers=10**6)
    message = refused(directory, "num_hidden_layers")
    assert str(directory / "config.json") in message and "1000000" in message


@pytest.mark.parametrize("field, value", [("hidden_size", 1e9), ("intermediate_size", -5), ("vocab_size", 0),
                                          ("num_attention_heads", True), ("head_dim", "48")])
def test_sizes_that_are_not_sane_whole_numbers_are_refused(tmp_path, field, value):
    refused(copy_model(tmp_path, **{field: value}), rf"config\.json: .*{field} must be a whole number")


def test_a_config_that_is_not_an_object_is_refused(tmp_path):
    directory = copy_model(tmp_path)
    (directory / "config.json").write_text("[1, 2]")
    refused(directory, r"config\.json: the world model's config is a JSON list, not an object")


def test_missing_weights_are_refused_naming_the_folder(tmp_path):
    directory = copy_model(tmp_path)
    (directory / "model.safetensors").unlink()
    assert refused(directory, "has no weights").startswith(f"{directory}:")


def test_a_layer_count_the_weights_do_not_hold_is_refused(tmp_path):
    refused(copy_model(tmp_path, num_hidden_layers=5), r"num_hidden_layers 5, but its weights .* hold 4 layers")


def test_a_config_whose_shapes_disagree_with_the_header_is_refused_naming_the_tensor(tmp_path):
    directory = copy_model(tmp_path, intermediate_size=1024)
    refused(directory, r"model\.safetensors does not match .*config\.json: .*tensor model\.layers\.0\.mlp\."
                       r"\w+_proj\.weight has the wrong shape")


def test_a_header_whose_shapes_lie_about_their_bytes_is_refused_naming_the_tensor(tmp_path):
    directory = copy_model(tmp_path)

    def lie(header):
        header["model.layers.0.mlp.gate_proj.weight"]["shape"] = [10**6, 192]

    rewrite_header(directory / "model.safetensors", lie)
    refused(directory, r"model\.safetensors: .*tensor model\.layers\.0\.mlp\.gate_proj\.weight is BF16 "
                       r"\[1000000, 192\].*gives it 196,608 bytes")


def test_sharded_weights_are_read_through_their_index(tmp_path):
    from safetensors import safe_open
    from safetensors.torch import save_file

    directory = copy_model(tmp_path)
    with safe_open(directory / "model.safetensors", "pt") as weights:
        tensors = {name: weights.get_tensor(name) for name in weights.keys()}
    (directory / "model.safetensors").unlink()
    names = sorted(tensors)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for shard, held in shards.items():
        save_file({name: tensors[name] for name in held}, str(directory / shard))
    index = {"metadata": {}, "weight_map": {name: shard for shard, held in shards.items() for name in held}}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    check_model_dir(directory, "the world model")
    (directory / "config.json").write_text(json.dumps({**json.loads((directory / "config.json").read_text()),
                                                       "intermediate_size": 1024}))
    refused(directory, r"model-0000[12]-of-00002\.safetensors does not match .*wrong shape")
    (directory / "model-00002-of-00002.safetensors").unlink()
    refused(directory, r"model\.safetensors\.index\.json: .*lists model-00002-of-00002\.safetensors, which is not "
                       "a file")


def test_an_absurd_tokenizer_resolution_is_refused_naming_its_config(tmp_path):
    from rlvr_envs.video.frame_tokenizer import FrameTokenizer

    directory = tmp_path / "tok"
    shutil.copytree(ASSETS / "video" / "pusht_frame_tokenizer", directory)
    path = directory / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "resolution": [100_000, 100_000]}))
    started = time.perf_counter()
    with pytest.raises(DataError, match=rf"{path}: .*resolution must hold whole numbers from 1 to 4,096"):
        FrameTokenizer.load(directory)
    assert time.perf_counter() - started < 1
    path.write_text("[64, 64]")
    with pytest.raises(DataError, match=rf"{path}: not a frame tokenizer config \(expected a JSON object"):
        FrameTokenizer.load(directory)


def test_a_tokenizer_whose_weights_do_not_fit_its_config_is_refused_before_it_is_built(tmp_path):
    from rlvr_envs.video.frame_tokenizer import FrameTokenizer

    directory = tmp_path / "tok"
    shutil.copytree(ASSETS / "video" / "pusht_frame_tokenizer", directory)
    path = directory / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "resolution": [4096, 4096]}))
    with pytest.raises(DataError, match=r"model\.safetensors does not match .*tensor background has the wrong "
                                        r"shape \[3, 64, 64\] \(the config gives \[3, 4096, 4096\]\)"):
        FrameTokenizer.load(directory)


@pytest.mark.parametrize("config", ["rlvr_envs.web.task:MiniWebTaskConfig",
                                    "rlvr_envs.text_game.task:MiniTextWorldTaskConfig"])
@pytest.mark.parametrize("size", [10**9, 0, 2.5])
def test_generated_task_sizes_are_bounded(config, size):
    import importlib

    module, name = config.split(":")
    with pytest.raises(ValueError, match=r"size must be a whole number from 1 to 100,000"):
        getattr(importlib.import_module(module), name)(size=size).validate()


def test_the_shipped_models_and_tokenizers_still_load():
    from rlvr_envs.video.compressed_tokenizer import CompressedTokenizer
    from rlvr_envs.video.frame_tokenizer import FrameTokenizer
    from rlvr_envs.video.world_model import load_world_model

    for directory in sorted(ASSETS.glob("*/*_model")):
        check_model_dir(directory, "a shipped model")
    assert load_world_model(str(WORLD_MODEL)).config.num_hidden_layers == 4
    assert FrameTokenizer.load(ASSETS / "video" / "pusht_frame_tokenizer").config.resolution == (64, 64)
    assert CompressedTokenizer.load(ASSETS / "video" / "pusht_compressed_tokenizer").config.resolution == (64, 64)


@pytest.mark.parametrize("config, match", [
    ({"rope_parameters": {"rope_type": "nonsense", "rope_theta": 10000.0}},
     r"config\.json: .*rope_parameters\.rope_type 'nonsense' is not a RoPE type transformers implements"),
    ({"bos_token_id": -7}, r"config\.json: .*bos_token_id must be a whole number from 0 to"),
    ({"eos_token_id": 10**12}, r"config\.json: .*eos_token_id must be a whole number from 0 to"),
    ({"pad_token_id": "zero"}, r"config\.json: .*pad_token_id must be a whole number"),
])
def test_token_ids_and_rope_types_a_model_cannot_use_are_refused_naming_the_field(tmp_path, config, match):
    refused(copy_model(tmp_path, **config), match)


def test_an_unknown_safetensors_dtype_is_refused_naming_the_file_and_tensor(tmp_path):
    directory = copy_model(tmp_path)

    def foreign(header):
        header["model.norm.weight"]["dtype"] = "Q9"

    rewrite_header(directory / "model.safetensors", foreign)
    refused(directory, r"model\.safetensors: .*tensor model\.norm\.weight the dtype 'Q9', which safetensors does not")


def test_a_config_json_too_large_for_any_model_is_refused_before_it_is_parsed(tmp_path):
    directory = copy_model(tmp_path)
    with open(directory / "config.json", "a", encoding="utf-8") as handle:
        handle.truncate(20 * 2**20)  # a sparse file: 20 MiB read as nothing would be
    refused(directory, r"config\.json: the world model's config\.json is 20 MiB, over the 16 MiB")


@pytest.mark.parametrize("levels", [[], [1, 5]])
def test_frame_tokenizer_levels_that_give_no_codes_are_refused_naming_its_config(tmp_path, levels):
    from rlvr_envs.video.frame_tokenizer import FrameTokenizer

    directory = tmp_path / "tok"
    shutil.copytree(ASSETS / "video" / "pusht_frame_tokenizer", directory)
    path = directory / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "levels": levels}))
    with pytest.raises(DataError, match=rf"{path}: not a frame tokenizer config \(levels must be one or more whole"):
        FrameTokenizer.load(directory)
