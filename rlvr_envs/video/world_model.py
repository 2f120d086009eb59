"""The video world model: a `transformers` LLaMA over a `VideoVocabulary`, and its sampler.

The model is a plain `LlamaForCausalLM` (RLVR-World's architecture; the paper's 138M is
the "paper" preset, CPU runs use the small ones), saved with `save_pretrained` so TRL and
vLLM load it as any causal LM. `generate_responses` samples a batch of responses with
the KV cache: frame positions are sampled from the frame codes only (temperature, top-k),
and the layout's forced positions receive the given action tokens, fed in one forward
per action, so the model never has to (and never can) write an action.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch

from rlvr_envs.core.device import generator_for
from rlvr_envs.video.layout import MultiStepLayout, SingleStepLayout, VideoVocabulary
from rlvr_envs.video.static_decoder import Sampling, decoder_for

#: LLaMA sizes (hidden, layers, heads, MLP width), CPU scale up to iVideoGPT's (paper: 12 layers,
#: hidden 768); their parameters, FLOPs and memory: `rlvr_envs.core.sizing`, table in docs/scale_out.md
PRESETS: dict[str, dict[str, int]] = {
    "tiny": {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 384},
    "pusht": {"hidden_size": 192, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 512},
    "small": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 768},
    #: ~22M on PushT: the largest whose bf16 weights are three 15 MiB shards (the GPU check brings it back)
    "base": {"hidden_size": 512, "num_hidden_layers": 6, "num_attention_heads": 8, "intermediate_size": 1536},
    "medium": {"hidden_size": 512, "num_hidden_layers": 8, "num_attention_heads": 8, "intermediate_size": 2048},
    "large": {"hidden_size": 640, "num_hidden_layers": 10, "num_attention_heads": 10, "intermediate_size": 2560},
    "paper": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
}


def build_world_model(vocab: VideoVocabulary, max_len: int, preset: str = "small", seed: int = 0):
    """A freshly initialised LLaMA world model whose vocabulary is `vocab`."""
    from transformers import LlamaConfig, LlamaForCausalLM

    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab.size, max_position_embeddings=max_len, bos_token_id=vocab.bos,
                         eos_token_id=vocab.eos, pad_token_id=vocab.pad, tie_word_embeddings=False,
                         **PRESETS[preset])
    return LlamaForCausalLM(config)


def check_world_model_config(config: Any, vocab: VideoVocabulary,
                             layout: SingleStepLayout | MultiStepLayout | None = None,
                             model_name: str = "the world model", tokenizer_name: str | None = None) -> None:
    """The one check every loader of a world model runs: fail, naming the model and the tokenizer,
    when its config (a dict read from config.json, or a model's `.config`) cannot serve `vocab`
    (another size or bos/eos/pad ids) or `layout` (too few positions for prompt + response)."""
    raw = config if isinstance(config, dict) else config.to_dict()
    size = raw.get("vocab_size")
    ids = (raw.get("bos_token_id"), raw.get("eos_token_id"), raw.get("pad_token_id"))
    over = f" over the tokenizer at {tokenizer_name}" if tokenizer_name else ""
    context = f" + {vocab.context_codes} context codes" if vocab.context_codes else ""
    needs = f"{vocab.frame_codes} frame codes{context} + {vocab.action_bins} action bins + bos/eos/pad"
    if size != vocab.size or tuple(ids) != (vocab.bos, vocab.eos, vocab.pad):
        raise ValueError(f"{model_name} has vocabulary size {size} and bos/eos/pad {ids}, but the layout{over} "
                         f"({needs}) needs {vocab.size} and {(vocab.bos, vocab.eos, vocab.pad)}: use a model "
                         "trained with this tokenizer")
    if layout is None:
        return
    positions, needed = raw.get("max_position_embeddings"), layout.prompt_len + layout.response_len
    if isinstance(positions, int) and positions < needed:
        kind = "multi" if isinstance(layout, MultiStepLayout) else "single"
        raise ValueError(f"{model_name} has {positions} positions, but the {kind}-step layout{over} needs "
                         f"{needed} (prompt {layout.prompt_len} + response {layout.response_len})")


def _cache_argument(model) -> str:
    """transformers 5 names the KV cache `cache`; earlier versions `past_key_values`."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # a peft wrapper takes **kwargs
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def _kv_cache(output):
    for name in ("cache", "past_key_values"):  # no cache at all when use_cache=False
        if name in output:
            return output[name]
    return None


@torch.no_grad()
def generate_responses(model, prompts: np.ndarray | torch.Tensor, layout: SingleStepLayout | MultiStepLayout,
                       future_action_tokens: np.ndarray | None = None, temperature: float = 1.0,
                       top_k: int | None = None, seed: int | None = None, use_cache: bool = True,
                       engine: str = "auto") -> np.ndarray:
    """Responses [B, layout.response_len] to equal-length prompts [B, P].

    `future_action_tokens` [B, T, A] are the given actions a multi-step layout forces after
    each frame. `engine`: "static" decodes over a preallocated KV cache, one CUDA graph replay
    per token on a GPU, each distinct prompt prefilled once (`rlvr_envs.video.static_decoder`);
    "eager" runs a Hugging Face forward per token; "auto" is static on CUDA, eager on CPU
    (where there are no graphs to replay: benchmarks/results/world_model_speed.md times both). Both draw the
    same random numbers (`Sampling`, the static engine inside its graph), so greedy and seeded responses
    agree in fp32. `use_cache=False` recomputes the whole sequence every step (benchmarks only). Everything
    stays on the model's device until the finished batch is copied back once; run it inside
    `Precision.autocast()` for bf16.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    prompts = torch.as_tensor(np.asarray(prompts), dtype=torch.long)
    batch = prompts.shape[0]
    forced = layout.loss_mask() == False  # noqa: E712  (numpy mask)
    if forced.any() and future_action_tokens is None:
        raise ValueError("this layout forces action tokens: pass future_action_tokens [B, T, A]")
    device = next(model.parameters()).device
    actions = None if future_action_tokens is None else torch.as_tensor(
        np.asarray(future_action_tokens), dtype=torch.long).reshape(batch, -1).to(device)
    sampling = Sampling(layout.vocab.frame_codes, temperature, top_k)  # frame positions draw frame codes only
    prompts = prompts.to(device)
    if use_cache and (engine == "static" or (engine == "auto" and device.type == "cuda")):
        decoder = decoder_for(model, batch, prompts.shape[1] + layout.response_len)
        generator = decoder.seeded(seed)  # a graph draws on the decoder's own generator
        logits = decoder.prefill(prompts)
        return _decode(lambda step, sample: decoder.step(step, sampling if sample else None), prompts, layout,
                       actions, forced, None if forced[0] else sampling(logits, generator))
    generator = generator_for(device, seed)  # sampling draws on the model's device: no per-token host sync
    out = model(input_ids=prompts, use_cache=use_cache)
    cache = {"past": _kv_cache(out)}

    def feed(step: torch.Tensor, sample: bool) -> torch.Tensor | None:  # the eager forward of the tokens just chosen
        if use_cache:
            out = model(input_ids=step, use_cache=True, **{_cache_argument(model): cache["past"]})
            cache["past"] = _kv_cache(out)
        else:
            cache["sequence"] = torch.cat([cache.get("sequence", prompts), step], dim=1)
            out = model(input_ids=cache["sequence"], use_cache=False)
        return sampling(out.logits[:, -1], generator) if sample else None

    with decode_threads(batch if use_cache and device.type == "cpu" else None):
        first = None if forced[0] else sampling(out.logits[:, -1], generator)
        return _decode(feed, prompts, layout, actions, forced, first, chunked=True)


#: `generate_responses`'s decode paths
ENGINES = ("auto", "static", "eager")

#: on CPU, cached decoding of fewer sequences than this runs on one thread (see `decode_threads`)
SMALL_DECODE_BATCH = 8


@contextlib.contextmanager
def decode_threads(batch: int | None):
    """One intra-op thread while decoding a small batch on CPU: each forward then holds a handful
    of tokens, too little work to split, and the threads' synchronisation dominates. Profiled on
    the PushT learned simulator (batch 1, 4-layer model, 2 cores shared with other jobs): on 2
    threads most of a step went to tiny `torch.cat`s and attention calls waiting for a
    descheduled thread; benchmarks/results/learned_sim_step.md times both paths."""
    if batch is None or batch >= SMALL_DECODE_BATCH or torch.get_num_threads() == 1:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _decode(feed, prompts, layout, actions, forced, first, chunked: bool = False) -> np.ndarray:
    """The response positions after the prompt's forward: sampled frame codes, forced actions.
    `first` is the token drawn from the prompt's last logits (None when the first position is
    forced); `feed(tokens [B, n], sample)` runs the chosen tokens through the model and returns
    the next token drawn from its logits when `sample` (the next position is a frame code's),
    else None (no draw: both engines consume the same random numbers). `chunked` feeds a run of
    forced action tokens in one call, else one token at a time (the static decoder's fixed-shape step)."""
    batch, device = prompts.shape[0], prompts.device
    response = torch.empty((batch, layout.response_len), dtype=torch.long, device=device)
    position, action_used, drawn = 0, 0, first
    while position < layout.response_len:
        if forced[position]:
            end = position + 1
            while chunked and end < layout.response_len and forced[end]:
                end += 1
            step = actions[:, action_used: action_used + end - position]
            action_used += end - position
        else:
            end = position + 1
            step = drawn.unsqueeze(1)
        response[:, position:end] = step
        position = end
        if position == layout.response_len:
            break
        drawn = feed(step, not forced[position])
    return response.cpu().numpy()


#: what to do about a damaged world-model checkpoint (named in every error about one)
WORLD_MODEL_REMEDY = ("copy the directory again from where it came from, or retrain it "
                      "(`python -m trainers.train_video_world_model`)")


def load_world_model(directory: str, vocab: VideoVocabulary | None = None, device: str = "cpu"):
    """A saved world model (`save_pretrained` directory) in float32, checked against `vocab`."""
    from pathlib import Path

    from transformers import LlamaForCausalLM

    from rlvr_envs.core.files import check_model_dir, read_json

    if not (Path(directory) / "config.json").is_file():
        raise FileNotFoundError(f"no world model at {directory} (expected a save_pretrained directory)")
    check_model_dir(directory, "the world model", WORLD_MODEL_REMEDY)  # sizes and weights' headers, nothing built
    model = LlamaForCausalLM.from_pretrained(directory, torch_dtype=torch.float32).to(device).eval()
    if vocab is not None:
        check_world_model_config(model.config, vocab, model_name=f"the world model at {directory}")
    card = Path(directory) / "card.json"
    model.card = read_json(card, "the world model's card", WORLD_MODEL_REMEDY) if card.is_file() else {}
    return model


def save_world_model(model, directory: str, half: bool = True, max_shard_size: int | None = None) -> None:
    """`save_pretrained`, in bfloat16 by default (half the bytes; loads back as float32);
    `max_shard_size` (bytes) splits the weights into safetensors shards."""
    import copy

    shards = {} if max_shard_size is None else {"max_shard_size": max_shard_size}
    (copy.deepcopy(model).to(torch.bfloat16) if half else model).save_pretrained(directory, **shards)
