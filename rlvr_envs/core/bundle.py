"""A model folder as one file: bf16 weights with the folder's small files in the safetensors header.

A trained model folder (config, generation config, card, tokenizer, weights in one or more shards)
is six or more files; a GPU run brings back what it trained in a few files of bounded size, so
each model travels as one `.safetensors` file whose `__metadata__` holds the folder's JSON and text
files by name. `unpack` writes the folder back (float32 weights, as every loader here expects), after
checking the file like any checkpoint (`check_safetensors`) and accepting only known file names:
the header is data from another machine, never a path to write to nor code to run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rlvr_envs.core.errors import DataError
from rlvr_envs.core.files import CHECKPOINT_JSON, check_checkpoint_dir, check_safetensors

#: the metadata key that marks a bundle and carries its format version
FORMAT_KEY = "rlvr_world_bundle"
FORMAT_VERSION = "1"
#: the small files a bundle carries (a model card's README too); weights are the tensors themselves
CARRIED_FILES = (*CHECKPOINT_JSON, "README.md")
WEIGHTS_FILE = "model.safetensors"


def _folder_weights(folder: Path) -> dict:
    """Every tensor of the folder's weights (one file or the shards an index names)."""
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise DataError(f"{folder}: no .safetensors weights to pack (a model folder saved by save_pretrained)")
    tensors: dict = {}
    for path in files:
        check_safetensors(path, "the model's weights")
        tensors.update(load_file(str(path)))
    return tensors


def _cast(tensors: dict, dtype: str) -> dict:
    """Floating tensors as `dtype` (integer ones as they are), contiguous for safetensors."""
    import torch

    cast = getattr(torch, dtype)
    return {name: (value.to(cast) if value.is_floating_point() else value).contiguous()
            for name, value in tensors.items()}


def pack(folder: str | os.PathLike, target: str | os.PathLike, dtype: str = "bfloat16") -> dict[str, int]:
    """Write the model `folder` as the one file `target`: floating tensors cast to `dtype`, the carried
    small files in the header. Returns {"bytes": size of target, "tensors": count}."""
    from safetensors.torch import save_file

    folder, target = Path(folder), Path(target)
    check_checkpoint_dir(folder, "the model to pack")
    tensors = _cast(_folder_weights(folder), dtype)
    files = {name: (folder / name).read_text() for name in CARRIED_FILES if (folder / name).is_file()}
    if "config.json" not in files:
        raise DataError(f"{folder}: no config.json, so the packed model could not be loaded back")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    save_file(tensors, str(partial), metadata={FORMAT_KEY: FORMAT_VERSION, "files": json.dumps(files)})
    os.replace(partial, target)  # a cut run leaves no half-written bundle under the real name
    return {"bytes": target.stat().st_size, "tensors": len(tensors)}


def read_files(bundle: str | os.PathLike) -> dict[str, str]:
    """The carried small files of `bundle` by name, checked: a bundle of this format, known names only."""
    from safetensors import safe_open

    bundle = Path(bundle)
    check_safetensors(bundle, "the model bundle")
    with safe_open(str(bundle), framework="pt") as handle:
        metadata = handle.metadata() or {}
    if metadata.get(FORMAT_KEY) != FORMAT_VERSION:
        raise DataError(f"{bundle}: not a model bundle of format {FORMAT_VERSION} (no {FORMAT_KEY!r} in its header); "
                        f"bundles are written by rlvr_envs.core.bundle.pack")
    try:
        files = json.loads(metadata.get("files", ""))
    except json.JSONDecodeError as error:
        raise DataError(f"{bundle}: the bundle's file table is not JSON ({error})") from None
    if not (isinstance(files, dict) and all(isinstance(v, str) for v in files.values())):
        raise DataError(f"{bundle}: the bundle's file table must map file names to text")
    unknown = sorted(set(files) - set(CARRIED_FILES))
    if unknown:
        raise DataError(f"{bundle}: the bundle carries files it may not ({', '.join(map(repr, unknown[:5]))}); "
                        f"allowed: {', '.join(CARRIED_FILES)}")
    if "config.json" not in files:
        raise DataError(f"{bundle}: the bundle carries no config.json")
    return files


def unpack(bundle: str | os.PathLike, folder: str | os.PathLike, dtype: str = "float32") -> Path:
    """Write `bundle` back as a model folder (floating weights as `dtype`) and check it as a checkpoint."""
    from safetensors.torch import load_file, save_file

    bundle, folder = Path(bundle), Path(folder)
    files = read_files(bundle)
    tensors = _cast(load_file(str(bundle)), dtype)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    save_file(tensors, str(folder / WEIGHTS_FILE), metadata={"format": "pt"})
    return check_checkpoint_dir(folder, "the unpacked model")
