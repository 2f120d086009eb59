"""The video world model: a `transformers` LLaMA over a `VideoVocabulary`, and its sampler.

The model is a plain `LlamaForCausalLM` (RLVR-World's architecture; the paper's 138M is
the "paper" preset, CPU runs use the small ones), saved with `save_pretrained` so TRL and
vLLM load it as any causal LM. `generate_responses` samples a batch of responses with
the KV cache: frame positions are sampled from the frame codes only (temperature, top-k),
and the layout's forced positions receive the given action tokens, fed in one forward
per action, so the model never has to (and never can) write an action.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from rlvr_envs.video.layout import MultiStepLayout, SingleStepLayout, VideoVocabulary

#: LLaMA sizes (hidden, layers, heads, MLP width)
PRESETS: dict[str, dict[str, int]] = {
    "tiny": {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 384},
    "small": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 768},
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


def check_model_vocabulary(model: Any, vocab: VideoVocabulary, where: str = "the world model") -> None:
    """Fail, naming both, when a checkpoint's vocabulary is not the task's."""
    size = int(model.config.vocab_size)
    ids = (model.config.bos_token_id, model.config.eos_token_id, model.config.pad_token_id)
    if size != vocab.size or tuple(ids) != (vocab.bos, vocab.eos, vocab.pad):
        raise ValueError(f"{where} has vocabulary size {size} and bos/eos/pad {ids}; the task's layout needs "
                         f"{vocab.size} and {(vocab.bos, vocab.eos, vocab.pad)}")


def _sample(logits: torch.Tensor, frame_codes: int, temperature: float, top_k: int | None,
            generator: torch.Generator | None) -> torch.Tensor:
    logits = logits[:, :frame_codes].float()
    if temperature <= 0:
        return logits.argmax(dim=-1)
    logits = logits / temperature
    if top_k is not None and top_k < frame_codes:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator).squeeze(1)


@torch.no_grad()
def generate_responses(model, prompts: np.ndarray | torch.Tensor, layout: SingleStepLayout | MultiStepLayout,
                       future_action_tokens: np.ndarray | None = None, temperature: float = 1.0,
                       top_k: int | None = None, seed: int | None = None, use_cache: bool = True) -> np.ndarray:
    """Responses [B, layout.response_len] to equal-length prompts [B, P].

    `future_action_tokens` [B, T, A] are the given actions a multi-step layout forces after
    each frame. `use_cache=False` recomputes the whole sequence every step (benchmarks only).
    """
    prompts = torch.as_tensor(np.asarray(prompts), dtype=torch.long)
    batch = prompts.shape[0]
    forced = layout.loss_mask() == False  # noqa: E712  (numpy mask)
    if forced.any() and future_action_tokens is None:
        raise ValueError("this layout forces action tokens: pass future_action_tokens [B, T, A]")
    actions = None if future_action_tokens is None else torch.as_tensor(np.asarray(future_action_tokens),
                                                                        dtype=torch.long).reshape(batch, -1)
    generator = None if seed is None else torch.Generator().manual_seed(int(seed))
    device = next(model.parameters()).device
    sequence = prompts.to(device)
    out = model(input_ids=sequence, use_cache=use_cache)
    past, logits = out.past_key_values, out.logits[:, -1]
    response = torch.empty((batch, layout.response_len), dtype=torch.long, device=device)
    position, action_used = 0, 0
    while position < layout.response_len:
        if forced[position]:
            end = position
            while end < layout.response_len and forced[end]:
                end += 1
            step = actions[:, action_used: action_used + end - position].to(device)
            action_used += end - position
        else:
            end = position + 1
            step = _sample(logits, layout.vocab.frame_codes, temperature, top_k, generator).unsqueeze(1).to(device)
        response[:, position:end] = step
        position = end
        if position == layout.response_len:
            break
        if use_cache:
            out = model(input_ids=step, past_key_values=past, use_cache=True)
            past = out.past_key_values
        else:
            sequence = torch.cat([prompts.to(device), response[:, :position]], dim=1)
            out = model(input_ids=sequence, use_cache=False)
        logits = out.logits[:, -1]
    return response.cpu().numpy()
