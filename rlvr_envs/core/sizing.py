"""Arithmetic of a LLaMA preset: parameters, FLOPs per token and activation memory per sample.

Used to size runs to hardware before spending it (the GPU check, the preset table of
docs/scale_out.md). Parameters are exact for `transformers.LlamaForCausalLM` (untied
embeddings, no biases; tested against an instantiated model). FLOPs and memory are the
usual estimates:

* forward FLOPs per token = 2 x (parameters that multiply: all but the input embedding)
  + 2 x layers x context x hidden (causal attention scores and values, averaged over
  positions: context/2 keys, 2 matmuls, 2 FLOPs each); training = 3 x forward.
* activation memory per sample (training, bf16 activations, fused attention that stores no
  score matrix, no checkpointing) = tokens x (layers x (10 x hidden + 4 x mlp) x 2 bytes
  + 2 x vocab x 4 bytes), the last term the fp32 logits and their log-softmax for the loss.
* training state = 16 bytes per parameter (fp32 weights and gradients, AdamW's two moments).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

GIB = 2**30
#: bf16 dense tensor-core peak of one H200 (the device README), FLOP/s
H200_BF16_PEAK = 790e12


@dataclass(frozen=True)
class PresetCost:
    parameters: int
    embedding_parameters: int
    forward_flops_per_token: float
    train_flops_per_token: float
    activation_bytes_per_sample: float
    state_bytes: float  #: weights + gradients + AdamW moments, fp32
    tokens_per_sample: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def max_batch(self, memory_bytes: float, reserve: float = 0.1) -> int:
        """Samples per optimizer step that fit `memory_bytes` (minus `reserve` of it) without
        activation checkpointing; 0 when the training state alone does not fit."""
        free = memory_bytes * (1 - reserve) - self.state_bytes
        return max(0, int(free // self.activation_bytes_per_sample))

    def train_seconds(self, tokens: float, peak_flops: float = H200_BF16_PEAK, utilisation: float = 0.3) -> float:
        """Wall time to train on `tokens` at `utilisation` of `peak_flops` (small models reach
        less than large ones; 0.3 is a planning figure, not a measurement)."""
        return tokens * self.train_flops_per_token / (peak_flops * utilisation)


def llama_cost(hidden_size: int, num_hidden_layers: int, num_attention_heads: int, intermediate_size: int,
               vocab_size: int, tokens: int, num_key_value_heads: int | None = None,
               activation_bytes: int = 2) -> PresetCost:
    """The cost of one `LlamaForCausalLM` (untied embeddings) on samples of `tokens` tokens."""
    if min(hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, vocab_size, tokens) < 1:
        raise ValueError("every size must be >= 1")
    if hidden_size % num_attention_heads:
        raise ValueError(f"hidden_size {hidden_size} must be a multiple of num_attention_heads {num_attention_heads}")
    h, layers, mlp, vocab = hidden_size, num_hidden_layers, intermediate_size, vocab_size
    kv = (num_key_value_heads or num_attention_heads) * (h // num_attention_heads)
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * mlp + 2 * h  # q, o; k, v; gate, up, down; two RMSNorms
    embedding = vocab * h
    parameters = embedding + layers * per_layer + h + vocab * h  # + final norm + lm_head
    forward = 2.0 * (parameters - embedding) + 2.0 * layers * tokens * h
    activations = tokens * (layers * (10 * h + 4 * mlp) * activation_bytes + 2 * vocab * 4)
    return PresetCost(parameters=parameters, embedding_parameters=embedding, forward_flops_per_token=forward,
                      train_flops_per_token=3.0 * forward, activation_bytes_per_sample=float(activations),
                      state_bytes=16.0 * parameters, tokens_per_sample=tokens)


def config_cost(config: Any, tokens: int) -> PresetCost:
    """`llama_cost` of a model's config (a `LlamaConfig` or anything with its size fields)."""
    return llama_cost(config.hidden_size, config.num_hidden_layers, config.num_attention_heads,
                      config.intermediate_size, config.vocab_size, tokens,
                      getattr(config, "num_key_value_heads", None))


def micro_batch(cost: PresetCost, wanted: int, memory_bytes: float | None) -> int:
    """The largest micro-batch <= `wanted` whose activations fit `memory_bytes` by the estimate
    (at least 1; `wanted` when the memory is unknown, as on a CPU), rounded down to a divisor of
    `wanted` so gradient accumulation covers the batch in equal parts."""
    fits = wanted if memory_bytes is None else max(1, min(wanted, cost.max_batch(memory_bytes)))
    while wanted % fits:
        fits -= 1
    return fits


def preset_cost(preset: dict[str, int], vocab_size: int, tokens: int) -> PresetCost:
    """`llama_cost` of a preset dict (hidden_size, num_hidden_layers, num_attention_heads, intermediate_size)."""
    return llama_cost(vocab_size=vocab_size, tokens=tokens, **preset)
