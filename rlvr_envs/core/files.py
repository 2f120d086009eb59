"""Files that survive interruption and say what is wrong with them: atomic writes, JSON
that names its file when it is broken, and a lock that keeps two runs out of one folder.

Atomic writes go to a hidden temporary file next to the target (`.NAME.PID.RANDOM.tmp`,
created exclusively, so two writers never share one) and are renamed over the target with
`os.replace`: a reader sees the old file or the new one, never half of one, even when the
writer is killed. `remove_stale_temporaries` clears what killed writers left behind; call
it only while holding the folder's `OutputLock`.

`OutputLock` is an exclusive `flock` on `FOLDER/.rlvr-world.lock`. The kernel releases it
when the last process holding the open file dies, so a crashed run never leaves a lock
that needs deleting by hand (a later run takes it over), and worker processes forked from
the holder keep it held for as long as any of them lives. The file records the holder's
pid, command, start time and worker pids, for the message that refuses a second run and
for anyone (tests, a person) who wants to see who is writing. The file is never deleted:
deleting a flock file while others wait on it lets two runs lock different files.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import re
import secrets
from pathlib import Path
from typing import Any, Callable, Iterator

from rlvr_envs.core.errors import DataError

try:  # POSIX; elsewhere the lock falls back to a pid check
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".rlvr-world.lock"
_TEMPORARY = re.compile(r"^\..+\.\d+\.[0-9a-f]{8}\.tmp$", re.ASCII)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "wb", durable: bool = False) -> Iterator[Any]:
    """Open a temporary file next to `path`; on success rename it over `path`, else delete it.

    `durable=True` also fsyncs the data before the rename (metadata files: survive a power
    cut, not only a killed process).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies, unlike mkstemp
    try:
        with os.fdopen(descriptor, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            yield handle
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_json_atomic(path: str | os.PathLike, data: Any, indent: int | None = 2) -> Path:
    """Write `data` as JSON atomically and durably (see `atomic_writer`)."""
    with atomic_writer(path, "w", durable=True) as handle:
        handle.write(json.dumps(data, indent=indent) + "\n")
    return Path(path)


def read_json(path: str | os.PathLike, what: str, remedy: str = "") -> Any:
    """Parse a JSON file; a broken one raises `DataError` as `PATH:LINE: WHAT is ...; REMEDY`."""
    path = Path(path)
    hint = f"; {remedy}" if remedy else ""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise DataError(f"{path}:{line}: {what} is not UTF-8 text (byte 0x{data[error.start]:02x}){hint}") from None
    if not text.strip():
        raise DataError(f"{path}: {what} is empty, e.g. cut short by an interrupted run{hint}")
    return loads_json(text, str(path), what, remedy, whole_file=True)


def loads_json(text: str, where: str, what: str, remedy: str = "", whole_file: bool = False) -> Any:
    """`json.loads`, failing as `DataError` that names `where` (`FILE:LINE` of a JSON line, or a
    whole file, whose failing line is added); nesting too deep for the parser is refused the same way."""
    hint = f"; {remedy}" if remedy else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        line, why = (f":{error.lineno}", ", e.g. cut short by an interrupted run") if whole_file else ("", "")
        raise DataError(f"{where}{line}: {what} is not valid JSON (column {error.colno}: {error.msg}){why}"
                        f"{hint}") from None
    except RecursionError:
        raise DataError(f"{where}: {what} is nested too deeply to read (a damaged or hostile file){hint}") from None


#: JSON files a Hugging Face style checkpoint directory may hold (checked before a library reads them)
CHECKPOINT_JSON = ("config.json", "card.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                   "special_tokens_map.json", "adapter_config.json")
#: the largest of those files read (bytes): far above real ones (a 256k-token tokenizer.json is
#: ~20 MB, a config ~10 kB), far below what would exhaust memory while parsing
CHECKPOINT_JSON_BOUND = {"tokenizer.json": 256 * 2**20, "tokenizer_config.json": 64 * 2**20}
OTHER_JSON_BOUND = 16 * 2**20


#: bytes per element of each safetensors dtype (others, e.g. packed 4-bit ones, are not size-checked)
SAFETENSORS_ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
                        "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8}
#: every dtype the safetensors format defines: any other is a damaged or hostile header
SAFETENSORS_DTYPES = frozenset(SAFETENSORS_ITEMSIZE) | {"F4", "F6_E2M3", "F6_E3M2"}


def check_safetensors(path: str | os.PathLike, what: str, remedy: str = "") -> dict[str, tuple[str, tuple[int, ...]]]:
    """Refuse a truncated, padded or hostile `.safetensors` file as `DataError` naming it, by its
    header alone (8-byte length, JSON header, each tensor's shape and dtype filling its data offsets,
    offsets that cover the file exactly); returns {tensor name: (dtype, shape)}, no weights read."""
    path = Path(path)
    hint = f"; {remedy}" if remedy else ""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(8)
        length = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 2 <= length <= min(size - 8, 100 * 2**20):
            raise DataError(f"{path}: {what} is not a safetensors file or is cut short ({size:,} bytes, header "
                            f"length {length:,}){hint}")
        header = loads_json(handle.read(length).decode("utf-8", "replace"), str(path), f"{what}'s header", remedy)
    if not isinstance(header, dict):
        raise DataError(f"{path}: {what}'s header is not a JSON object{hint}")
    tensors, end = {}, 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, offsets = (entry.get(k) for k in ("dtype", "shape", "data_offsets")) \
            if isinstance(entry, dict) else (None, None, None)
        if not (isinstance(dtype, str) and _whole_numbers(shape) and _whole_numbers(offsets) and len(offsets) == 2
                and offsets[0] <= offsets[1]):
            raise DataError(f"{path}: {what}'s header entry for tensor {name} is malformed (needs dtype, shape and "
                            f"data_offsets [begin, end]), a damaged or hostile file{hint}")
        if dtype not in SAFETENSORS_DTYPES:
            raise DataError(f"{path}: {what}'s header gives tensor {name} the dtype {dtype[:40]!r}, which safetensors "
                            f"does not define, a damaged or hostile file{hint}")
        span = offsets[1] - offsets[0]
        if dtype in SAFETENSORS_ITEMSIZE and math.prod(shape) * SAFETENSORS_ITEMSIZE[dtype] != span:
            raise DataError(f"{path}: {what}'s header says tensor {name} is {dtype} {list(shape)} "
                            f"({math.prod(shape) * SAFETENSORS_ITEMSIZE[dtype]:,} bytes) but gives it {span:,} bytes, "
                            f"a damaged or hostile header{hint}")
        tensors[name], end = (dtype, tuple(shape)), max(end, offsets[1])
    expected = 8 + length + end
    if expected != size:
        state = "cut short" if size < expected else "longer than its header says"
        raise DataError(f"{path}: {what} is {state} ({size:,} bytes, the header needs {expected:,}), e.g. an "
                        f"interrupted copy or download{hint}")
    return tensors


def _whole_numbers(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                            for v in values)


def check_checkpoint_dir(directory: str | os.PathLike, what: str, remedy: str = "") -> Path:
    """Check a saved model or tokenizer directory before a library loads it: every JSON file it
    holds parses and every `.safetensors` file is whole, else `DataError` naming the file."""
    directory = Path(directory)
    hint = f"; {remedy}" if remedy else ""
    for name in CHECKPOINT_JSON:
        if (directory / name).is_file():
            size, bound = (directory / name).stat().st_size, CHECKPOINT_JSON_BOUND.get(name, OTHER_JSON_BOUND)
            if size > bound:
                raise DataError(f"{directory / name}: {what}'s {name} is {size / 2**20:,.0f} MiB, over the "
                                f"{bound // 2**20} MiB such a file ever needs (a damaged or hostile file){hint}")
            read_json(directory / name, f"{what}'s {name}", remedy)
    for weights in sorted(directory.glob("*.safetensors")):
        check_safetensors(weights, f"{what}'s weights file", remedy)
    return directory


SHARD_INDEX = "model.safetensors.index.json"


def checkpoint_tensors(directory: str | os.PathLike, what: str,
                       remedy: str = "") -> dict[str, tuple[str, tuple[int, ...], Path]]:
    """{tensor name: (dtype, shape, file)} of a directory's safetensors weights, read from the
    headers only: the shards `model.safetensors.index.json` lists, else every `*.safetensors`
    file ({} when there are none). A shard or tensor the index names but that is missing fails
    as `DataError` naming the index."""
    directory = Path(directory)
    hint = f"; {remedy}" if remedy else ""
    index_path = directory / SHARD_INDEX
    if index_path.is_file():
        index = read_json(index_path, f"{what}'s shard index", remedy)
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not (isinstance(weight_map, dict) and all(isinstance(v, str) for v in weight_map.values())):
            raise DataError(f"{index_path}: {what}'s shard index has no weight_map of tensor name -> shard file{hint}")
        files = [directory / name for name in sorted(set(weight_map.values()))]
        for shard in files:
            if Path(shard.name) != Path(str(shard.relative_to(directory))) or not shard.is_file():
                raise DataError(f"{index_path}: {what}'s shard index lists {shard.name}, which is not a file in "
                                f"{directory}{hint}")
    else:
        weight_map, files = None, sorted(directory.glob("*.safetensors"))
    tensors = {}
    for weights in files:
        for name, (dtype, shape) in check_safetensors(weights, f"{what}'s weights file", remedy).items():
            tensors[name] = (dtype, shape, weights)
    for name, shard in (weight_map or {}).items():
        if name not in tensors or tensors[name][2].name != shard:
            raise DataError(f"{index_path}: {what}'s shard index puts tensor {name} in {shard}, whose header does "
                            f"not hold it{hint}")
    return tensors


def check_tensor_shapes(expected: dict[str, tuple[int, ...]], tensors: dict[str, tuple[str, tuple[int, ...], Path]],
                        config_path: str | os.PathLike, what: str, remedy: str = "", complete: bool = True) -> None:
    """Refuse weights whose header disagrees with the model `config_path` describes, before
    anything is built: a tensor of another shape (named, with its file), and when `complete`
    a tensor missing from or foreign to the model."""
    hint = f"; {remedy}" if remedy else ""
    for name, shape in expected.items():
        if name in tensors and tuple(tensors[name][1]) != tuple(shape):
            raise DataError(f"{tensors[name][2]} does not match {config_path}: {what}'s tensor {name} has the wrong "
                            f"shape {list(tensors[name][1])} (the config gives {list(shape)}){hint}")
    if complete:
        files = ", ".join(sorted({str(file) for _, _, file in tensors.values()})) or "the weights"
        for names, state in ((sorted(set(expected) - set(tensors)), "lack"),
                             (sorted(set(tensors) - set(expected)), "hold, foreign to the config,")):
            if names:
                more = f" (+{len(names) - 3} more)" if len(names) > 3 else ""
                raise DataError(f"{files} does not match {config_path}: {what}'s weights {state} "
                                f"{', '.join(names[:3])}{more}{hint}")


def load_checked_weights(build: Callable[[], Any], weights_path: str | os.PathLike, config_path: str | os.PathLike,
                         what: str, remedy: str = "") -> Any:
    """The `torch.nn.Module` that `build()` makes, filled from the safetensors file `weights_path`,
    whose header is first checked against the module built on the meta device (no memory): a
    config that disagrees with its weights fails as `DataError` naming the tensor before anything
    of the config's size is allocated."""
    import torch
    from safetensors.torch import load_file

    weights_path = Path(weights_path)
    if not weights_path.is_file():
        raise FileNotFoundError(f"{weights_path} is missing (the weights of {config_path})")
    tensors = {name: (dtype, shape, weights_path)
               for name, (dtype, shape) in check_safetensors(weights_path, f"{what}'s weights file", remedy).items()}
    with torch.device("meta"):
        expected = {name: tuple(value.shape) for name, value in build().state_dict().items()}
    check_tensor_shapes(expected, tensors, config_path, what, remedy)
    module = build()
    module.load_state_dict(load_file(str(weights_path)), strict=True)
    return module


def check_sizes(values: dict[str, Any], bounds: dict[str, int]) -> None:
    """Each of `values`' fields that `bounds` names (a number, or a list of them; None is skipped)
    must be a whole number from 1 to its bound, else ValueError naming the field: sizes read from
    a file or an argument are checked before anything of that size is allocated."""
    for name, bound in bounds.items():
        value = values.get(name)
        for item in (value if isinstance(value, (list, tuple)) else [value] if value is not None else []):
            if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= bound:
                raise ValueError(f"{name} must hold whole numbers from 1 to {bound:,}, got {value!r}"
                                 if isinstance(value, (list, tuple)) else
                                 f"{name} must be a whole number from 1 to {bound:,}, got {value!r}")


#: bounds on the sizes a transformers `config.json` may give, far above any model this project
#: loads (the largest public LLMs: ~128 layers, hidden 16k, 256k vocabulary, 1M positions)
MODEL_SIZE_BOUNDS = {"num_hidden_layers": 1024, "n_layer": 1024, "hidden_size": 65_536, "n_embd": 65_536,
                     "intermediate_size": 262_144, "n_inner": 262_144, "num_attention_heads": 1024, "n_head": 1024,
                     "num_key_value_heads": 1024, "head_dim": 8192, "vocab_size": 4_194_304,
                     "max_position_embeddings": 16_777_216, "n_positions": 16_777_216}
_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blocks)\.(\d+)\.")


def check_model_dir(directory: str | os.PathLike, what: str, remedy: str = "") -> Path:
    """Check a transformers model directory before `from_pretrained` builds anything, in well under
    a second and without reading weights: its files are whole (`check_checkpoint_dir`), config.json
    is an object whose sizes are whole numbers within `MODEL_SIZE_BOUNDS`, weights exist, and their
    headers (shards too) hold as many layers as the config and, for LLaMA-style tensor names, the
    shapes the config implies. Each failure is one `DataError` naming the file and the field or tensor."""
    directory = check_checkpoint_dir(directory, what, remedy)
    hint = f"; {remedy}" if remedy else ""
    config_path = directory / "config.json"
    if not config_path.is_file() and (directory / "adapter_config.json").is_file():
        return directory  # a PEFT adapter (whole, checked above): its base model is named inside it
    if not config_path.is_file():
        raise DataError(f"{directory}: {what} has no config.json (expected a directory written by "
                        f"`save_pretrained`){hint}")
    config = read_json(config_path, f"{what}'s config", remedy)
    if not isinstance(config, dict):
        raise DataError(f"{config_path}: {what}'s config is a JSON {type(config).__name__}, not an object{hint}")
    for scope in [config, *(v for k, v in config.items() if k.endswith("_config") and isinstance(v, dict))]:
        try:
            check_sizes(scope, MODEL_SIZE_BOUNDS)
            check_model_fields(scope)
        except ValueError as error:
            raise DataError(f"{config_path}: {what}'s config: {error}{hint}") from None
    generation = directory / "generation_config.json"
    if generation.is_file():
        try:
            check_model_fields({"vocab_size": config.get("vocab_size"), **read_json(generation, what, remedy)})
        except (ValueError, TypeError) as error:
            raise DataError(f"{generation}: {what}'s generation config: {error}{hint}") from None
    tensors = checkpoint_tensors(directory, what, remedy)
    if not tensors:
        if any(directory.glob("pytorch_model*.bin")):  # torch pickles: sizes bounded above, the rest to transformers
            return directory
        raise DataError(f"{directory}: {what} has no weights (model.safetensors, or the shards "
                        f"{SHARD_INDEX} lists){hint}")
    layers = config.get("num_hidden_layers", config.get("n_layer"))
    field = "num_hidden_layers" if "num_hidden_layers" in config else "n_layer"
    counts: dict[str, set[int]] = {}
    for name in tensors:
        match = _LAYER.search(name)
        if match:
            counts.setdefault(name[:match.start(1)], set()).add(int(match.group(1)))
    held = sorted({max(indices) + 1 for indices in counts.values()})
    if isinstance(layers, int) and held and layers not in held:
        files = sorted({str(f) for _, _, f in tensors.values()})
        raise DataError(f"{config_path}: {what}'s config has {field} {layers:,}, but its weights "
                        f"({', '.join(files)}) hold {' or '.join(map(str, held))} layers{hint}")
    check_tensor_shapes(_llama_shapes(config, tensors), tensors, config_path, what, remedy, complete=False)
    return directory


TOKEN_ID_FIELDS = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")


def check_model_fields(config: dict) -> None:
    """The fields of a transformers config that its sizes do not cover, as ValueError naming the
    field: token ids (None, or whole numbers in [0, vocab_size); eos may be a list) and the RoPE
    type (one transformers implements), which transformers would fail on late or not at all."""
    vocab = config.get("vocab_size")
    for name in TOKEN_ID_FIELDS:
        value = config.get(name)
        for item in value if isinstance(value, list) else [value]:
            if item is None:
                continue
            if isinstance(item, bool) or not isinstance(item, int) or item < 0 \
                    or (isinstance(vocab, int) and item >= vocab):
                bound = f"from 0 to {vocab - 1:,} (vocab_size {vocab:,})" if isinstance(vocab, int) else ">= 0"
                raise ValueError(f"{name} must be a whole number {bound}, got {str(value)[:40]}")
    for name in ("rope_scaling", "rope_parameters"):
        rope = config.get(name)
        if isinstance(rope, dict):
            kind = rope.get("rope_type", rope.get("type", "default"))
            known = ROPE_TYPES if kind in ROPE_TYPES else rope_types()  # transformers imported only when needed
            if known and kind not in known:
                raise ValueError(f"{name}.rope_type {str(kind)[:40]!r} is not a RoPE type transformers implements "
                                 f"({', '.join(sorted(known))})")


#: RoPE types of transformers 5 (a newer one is looked up in the installed transformers)
ROPE_TYPES = frozenset({"default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional"})


def rope_types() -> set[str]:
    """The RoPE types the installed transformers implements (empty when it is absent)."""
    try:
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    except ImportError:
        return set()
    return {"default", *ROPE_INIT_FUNCTIONS}


def _llama_shapes(config: dict, tensors: dict) -> dict[str, tuple[int, ...]]:
    """The shapes a LLaMA-style config (llama, mistral, qwen2, ...) gives the tensors of `tensors`
    named as those models name them; other names are not predicted."""
    hidden, vocab = config.get("hidden_size"), config.get("vocab_size")
    heads, inner = config.get("num_attention_heads"), config.get("intermediate_size")
    if not all(isinstance(v, int) for v in (hidden, vocab, heads)):
        return {}
    head_dim = config.get("head_dim") if isinstance(config.get("head_dim"), int) else hidden // heads
    kv_heads = config.get("num_key_value_heads") if isinstance(config.get("num_key_value_heads"), int) else heads
    suffixes = {"embed_tokens.weight": (vocab, hidden), "self_attn.q_proj.weight": (heads * head_dim, hidden),
                "self_attn.k_proj.weight": (kv_heads * head_dim, hidden),
                "self_attn.v_proj.weight": (kv_heads * head_dim, hidden),
                "self_attn.o_proj.weight": (hidden, heads * head_dim), "input_layernorm.weight": (hidden,),
                "post_attention_layernorm.weight": (hidden,)}
    if isinstance(inner, int):
        suffixes.update({"mlp.gate_proj.weight": (inner, hidden), "mlp.up_proj.weight": (inner, hidden),
                         "mlp.down_proj.weight": (hidden, inner)})
    expected = {}
    for name in tensors:
        if name in ("lm_head.weight", "model.norm.weight"):
            expected[name] = (vocab, hidden) if name == "lm_head.weight" else (hidden,)
        for suffix, shape in suffixes.items():
            if name == suffix or name.endswith("." + suffix):
                expected[name] = shape
    return expected


def check_model_source(spec: str | os.PathLike, what: str, remedy: str = "") -> None:
    """Before `from_pretrained(spec)`: a local directory is checked whole (`check_model_dir`),
    a path that names nothing or a file is refused naming it; a hub name is left to the hub."""
    text = str(spec)
    path = Path(text).expanduser()
    if path.is_dir():
        check_model_dir(path, what, remedy)
    elif path.exists():
        raise DataError(f"{text}: {what} must be a directory (as `save_pretrained` writes), not a file")
    elif text.startswith(("/", ".", "~")) or text.count("/") > 1:
        raise FileNotFoundError(f"no {what} at {text}: pass a directory written by `save_pretrained` "
                                "(or a hub name such as Qwen/Qwen2.5-0.5B, cached when HF_HUB_OFFLINE=1)")


def load_torch_file(path: str | os.PathLike, what: str, remedy: str = "") -> Any:
    """`torch.load(path, weights_only=True)` (tensors and plain containers only: a pickle that
    would run code is refused), failing as `DataError` that names the file and what to do."""
    import pickle

    import torch

    path = Path(path)
    hint = f"; {remedy}" if remedy else ""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    except pickle.UnpicklingError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if "weights_only" in str(error) or "Unsupported global" in str(error):
            raise DataError(f"{path}: {what} holds objects other than tensors and plain values, refused unread "
                            f"(a foreign or hostile file){hint}") from None
        raise DataError(f"{path}: {what} is unreadable ({first[:200]}){hint}") from None
    except (RuntimeError, EOFError, ValueError, OSError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DataError(f"{path}: {what} is unreadable or cut short ({first[:200]}){hint}") from None


def strict_json(value: Any) -> Any:
    """`value` with every non-finite float (NaN, inf) as None: JSON has no NaN, and a log line
    holding one is unreadable to strict parsers (jq, JavaScript, `json.loads(..., parse_constant=...)`)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:  # numpy / torch scalars
        return strict_json(value.item())
    return value


def json_line(record: dict[str, Any]) -> str:
    """One strict-JSON log line (no NaN or inf: see `strict_json`), newline included."""
    return json.dumps(strict_json(record), allow_nan=False, default=float) + "\n"


def keep_log_until(path: str | os.PathLike, step: int, redone: Callable[[dict], bool] | None = None) -> None:
    """Before a resumed run appends to its JSON-lines log: drop the records of steps after the
    checkpoint's `step` (the run repeats those steps) and, at `step` itself, those `redone`
    says the resumed run writes again (e.g. an evaluation run at its start), so every step is
    logged once. Rewritten atomically; lines a kill cut short are dropped too."""
    path = Path(path)
    if not path.exists():
        return
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:  # the last line of a killed run, half written
            continue
        at = record.get("step", 0) if isinstance(record, dict) else 0
        if at < step or (at == step and not (redone and redone(record))):
            kept.append(line)
    if len(kept) != len(lines):
        with atomic_writer(path, "w") as handle:
            handle.write("".join(line + "\n" for line in kept))


def remove_stale_temporaries(folder: str | os.PathLike) -> int:
    """Delete the temporary files `atomic_writer` leaves when its process is killed; returns how many."""
    folder = Path(folder)
    removed = 0
    if folder.is_dir():
        for path in folder.iterdir():
            if _TEMPORARY.match(path.name) and path.is_file():
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed += 1
    return removed


class OutputInUse(DataError):
    """Another live run holds the output folder's lock."""


#: folders whose lock this process holds: a second `acquire` of one here would conflict with itself
_HELD: set[Path] = set()


def check_not_in_use(folder: str | os.PathLike) -> None:
    """Raise `OutputInUse` naming the holder when another live run holds `folder`'s lock; takes
    nothing (a check before a run's own arguments are validated, so the refusal names the real cause)."""
    lock = OutputLock(folder, "")
    if lock.folder.resolve() in _HELD or fcntl is None or not lock.path.is_file():
        return
    try:
        descriptor = os.open(lock.path, os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        raise lock._refuse() from None
    finally:
        os.close(descriptor)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputLock:
    """Exclusive lock on an output folder for one run (see the module docstring).

    Use as a context manager; `acquire` raises `OutputInUse` naming the holder when a live
    run (or a worker it started) holds it, and takes over a lock left by a dead one.
    """

    def __init__(self, folder: str | os.PathLike, command: str):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.command = command
        self.info: dict[str, Any] = {}
        self._descriptor: int | None = None

    def holder(self) -> dict[str, Any]:
        """What the lock file says about its last holder ({} when unreadable)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _refuse(self) -> OutputInUse:
        holder = self.holder()
        pid = holder.get("pid", "?")
        workers = holder.get("workers") or []
        who = f"pid {pid}" + (f" or its workers (pids {', '.join(map(str, workers))})" if workers else "")
        since = f" since {holder['started']}" if holder.get("started") else ""
        return OutputInUse(
            f"{self.folder} is being written by another run ({who}: `{holder.get('command', '?')}`{since}); "
            f"wait for it to finish or stop it, then rerun (lock file {self.path})"
        )

    def acquire(self) -> "OutputLock":
        self.folder.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        if fcntl is not None:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(descriptor)
                raise self._refuse() from None
        else:  # pragma: no cover - no flock: trust a live pid in the file
            holder = self.holder()
            pids = [holder.get("pid"), *(holder.get("workers") or [])]
            if any(isinstance(p, int) and p != os.getpid() and _alive(p) for p in pids):
                os.close(descriptor)
                raise self._refuse()
        self._descriptor = descriptor
        _HELD.add(self.folder.resolve())
        self.info = {"pid": os.getpid(), "command": self.command, "workers": [],
                     "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}
        self._write()
        return self

    def update(self, **fields: Any) -> None:
        """Record more about this run (e.g. `workers=[pids]`) in the lock file."""
        self.info.update(fields)
        self._write()

    def _write(self) -> None:
        if self._descriptor is None:
            raise RuntimeError(f"{self.path}: lock not held")
        data = (json.dumps(self.info) + "\n").encode()
        os.ftruncate(self._descriptor, 0)
        os.lseek(self._descriptor, 0, os.SEEK_SET)
        os.write(self._descriptor, data)

    def release(self) -> None:
        if self._descriptor is not None:
            with contextlib.suppress(OSError):
                self.info.update(workers=[], finished=datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
                self._write()
            os.close(self._descriptor)  # closing drops the flock (workers' copies are gone by now)
            self._descriptor = None
            _HELD.discard(self.folder.resolve())

    def __enter__(self) -> "OutputLock":
        return self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()
