"""The world model's fast decode path: a preallocated KV cache and, on CUDA, one graph replay per token.

An eager Hugging Face forward per generated token is launch-bound at world-model sizes: on an
H200 the 120M "paper" preset took 10.4 ms per decode step at batch 64 where reading its KV cache
and weights takes ~1 ms. `StaticDecoder` runs the same LLaMA (its own modules: projections,
norms, MLPs, rotary tables, LoRA layers included) over a cache of fixed shape
[layers, batch, kv heads, max_len, head dim], so the one-token step has fixed shapes and
addresses, and on CUDA it is captured once as a `torch.cuda.CUDAGraph` and replayed. The
position lives in a device tensor the step advances itself: no host round trip per token.

On one H200 (benchmarks/results/gpu_check/README.md) the paper preset at batch 64 decodes 20,070
tokens/s this way, 3.2 ms a step, 5.4x the eager loop and 31% of the memory floor (its step
attention fused, "sdpa", not compiled; `decoder_settings` builds the other variants, which the speed
benchmark times).
Without a graph (a CPU) the step attends over the filled positions only, as the eager path does;
`full_length` turns the graph's whole-cache step on without a graph, so tests run it on a CPU.

The prompt is prefilled once per distinct row: a GRPO batch of prompts x group holds each
prompt `group` times, and its cache rows are copied from one forward of the distinct prompts.

Decoders are cached per (model, batch, length, autocast, device, parameter storage), so a GRPO
loop captures its graph once; optimizer steps update the weights in place, which a replay
reads. The cache is bf16 under bf16 autocast (half the bytes of the eager path, which keeps
fp32 keys); in fp32 the path equals the eager one to float rounding (tested: same greedy tokens).
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

import torch

#: decoders kept per model (each holds a KV cache); the oldest is dropped past this
MAX_DECODERS_PER_MODEL = 4
#: how a fixed-shape step attends over the whole cache: "sdpa", PyTorch's fused attention under a mask
#: (its kernels tile queries in blocks, and a decode step has one query per head), or "matmul", two
#: batched matrix-vector products around a softmax that read each cached key and value once.
STEP_ATTENTIONS = ("sdpa", "matmul")
#: the settings decoders are built with: the step attention, and whether the step is `torch.compile`d
#: before a graph captures it (fewer, fused kernels: a graph removes launch cost, not the kernels'
#: count). `benchmarks.world_model_speed` times the variants on a GPU (`decoder_settings`); the
#: defaults are the path the H200 run measured, until a GPU run shows a variant faster.
_SETTINGS = {"attention": "sdpa", "compiled": False}
_DECODERS: "weakref.WeakKeyDictionary[Any, dict[tuple, StaticDecoder]]" = weakref.WeakKeyDictionary()


def _llama(model):
    """The `LlamaForCausalLM` inside `model` (a peft wrapper's base model keeps its LoRA layers)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if not (hasattr(base, "model") and hasattr(base.model, "layers") and hasattr(base, "lm_head")):
        raise TypeError(f"the static decoder needs a LLaMA-style causal LM, got {type(base).__name__}")
    return base


def _autocast_state(device: torch.device) -> tuple[bool, torch.dtype | None]:
    enabled = torch.is_autocast_enabled(device.type)
    return enabled, (torch.get_autocast_dtype(device.type) if enabled else None)


class StaticDecoder:
    """Prefill and one-token decode steps of a LLaMA over a fixed-shape KV cache.

    `prefill(prompts)` -> logits [B, V] of the last prompt position; then `step(tokens)` feeds one
    token per row and returns the next logits. Call both inside the autocast context the decoder
    was built under (`decoder_for` keys on it).
    """

    def __init__(self, model, batch: int, max_len: int, use_graph: bool | None = None,
                 attention: str | None = None, compiled: bool | None = None):
        base = _llama(model)
        self.attention = attention or _SETTINGS["attention"]
        if self.attention not in STEP_ATTENTIONS:
            raise ValueError(f"attention must be one of {STEP_ATTENTIONS}, got {self.attention!r}")
        self.compiled = _SETTINGS["compiled"] if compiled is None else compiled
        # compiled once per decoder, on its first step (before a graph captures it: a replay runs its kernels)
        self._run_step = torch.compile(self._step, dynamic=False) if self.compiled else self._step
        config = base.config
        self.embed, self.layers = base.model.embed_tokens, list(base.model.layers)
        self.norm, self.lm_head = base.model.norm, base.lm_head
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        weight = self.lm_head.weight
        self.device = weight.device
        autocast, autocast_dtype = _autocast_state(self.device)
        self.autocast_dtype = autocast_dtype if autocast else None
        self.dtype = self.autocast_dtype or weight.dtype
        self.batch, self.max_len = batch, max_len
        shape = (len(self.layers), batch, self.kv_heads, max_len, self.head_dim)
        self.keys = torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.values = torch.zeros(shape, dtype=self.dtype, device=self.device)
        with torch.no_grad():  # the model's own rotary module: the same cos/sin as its eager forward
            positions = torch.arange(max_len, device=self.device).unsqueeze(0)
            probe = torch.zeros(1, dtype=torch.float32, device=self.device)
            cos, sin = base.model.rotary_emb(probe, positions)
        self.cos, self.sin = cos[0].float(), sin[0].float()  # [max_len, head_dim]
        self.key_positions = torch.arange(max_len, device=self.device)
        self.position = torch.zeros((), dtype=torch.long, device=self.device)  # the next position to write
        self.filled = 0  #: the same position, counted on the host, so a step past the cache is refused
        self.tokens = torch.zeros((batch, 1), dtype=torch.long, device=self.device)  # the step's input
        self.use_graph = self.device.type == "cuda" if use_graph is None else use_graph
        #: attend over the whole cache under a mask (fixed shapes, as a graph needs) rather than the filled part
        self.full_length = self.use_graph
        self.graph: torch.cuda.CUDAGraph | None = None
        self.graph_logits: torch.Tensor | None = None

    # -- the model ------------------------------------------------------------------------
    def _rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return ((x * cos) + (rotated * sin)).to(self.dtype)

    def _heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, heads, self.head_dim).transpose(1, 2)

    def _layers(self, hidden: torch.Tensor, attend) -> torch.Tensor:
        """The decoder stack; `attend(index, q, k, v)` stores k/v and returns the attention output."""
        for index, layer in enumerate(self.layers):
            attention = layer.self_attn
            x = layer.input_layernorm(hidden)
            q = self._heads(attention.q_proj(x), self.heads)
            k = self._heads(attention.k_proj(x), self.kv_heads)
            v = self._heads(attention.v_proj(x), self.kv_heads).to(self.dtype)
            out = attend(index, q, k, v)
            batch, _, length, _ = out.shape
            hidden = hidden + attention.o_proj(out.transpose(1, 2).reshape(batch, length, -1))
            hidden = hidden + layer.mlp(layer.post_attention_layernorm(hidden))
        return self.lm_head(self.norm(hidden[:, -1]))

    def _attention(self, q, k, v, **kwargs) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, enable_gqa=self.kv_heads != self.heads, **kwargs)

    def _masked_attention(self, q, keys, values, visible) -> torch.Tensor:
        """One query per head [B, H, 1, D] over the whole cache [B, KV, L, D], `visible` [L] positions only."""
        if self.attention == "sdpa":
            return self._attention(q, keys, values, attn_mask=visible.view(1, 1, 1, -1))
        batch, heads, _, dim = q.shape
        grouped = q.reshape(batch, self.kv_heads, heads // self.kv_heads, dim)  # head h reads kv head h // group
        scores = torch.matmul(grouped, keys.transpose(-1, -2)).float() * dim ** -0.5  # [B, KV, group, L]
        weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1).to(values.dtype)
        return torch.matmul(weights, values).reshape(batch, heads, 1, dim)

    @torch.no_grad()
    def prefill(self, prompts: torch.Tensor) -> torch.Tensor:
        """Run the prompts [B, P] (equal lengths) into the cache; logits [B, V] of their last position.
        Repeated rows (a GRPO group) are computed once and copied."""
        batch, length = prompts.shape
        if batch != self.batch or length >= self.max_len:
            raise ValueError(f"the decoder holds {self.batch} rows of {self.max_len} positions; got prompts "
                             f"{tuple(prompts.shape)}")
        distinct, rows = torch.unique(prompts, dim=0, return_inverse=True) if batch > 1 else (prompts, None)
        if rows is not None and len(distinct) == batch:
            distinct, rows = prompts, None  # all different: skip the gather
        cos, sin = self.cos[:length], self.sin[:length]

        def attend(index, q, k, v):
            q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
            self.keys[index, :, :, :length] = k if rows is None else k[rows]
            self.values[index, :, :, :length] = v if rows is None else v[rows]
            return self._attention(q, k, v, is_causal=True)

        logits = self._layers(self.embed(distinct), attend)
        self.position.fill_(length)
        self.filled = length
        return logits if rows is None else logits[rows]

    def _step(self) -> torch.Tensor:
        """One token per row at `self.position` (read on the device), then advance the position.
        A graph attends over the whole cache under a mask (fixed shapes); without one the step
        reads only the filled positions, which the host counts (on a CPU the masked full-length
        attention was 4.7x slower than the eager path at a 1,333-token prompt)."""
        position = self.position.view(1)
        cos, sin = self.cos.index_select(0, position), self.sin.index_select(0, position)
        filled = None if self.full_length else self.filled
        visible = self.key_positions <= self.position if filled is None else None

        def attend(index, q, k, v):
            q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
            self.keys[index].index_copy_(2, position, k)
            self.values[index].index_copy_(2, position, v)
            keys, values = self.keys[index], self.values[index]
            if filled is None:
                return self._masked_attention(q, keys, values, visible)
            return self._attention(q, keys[:, :, :filled], values[:, :, :filled])

        logits = self._layers(self.embed(self.tokens), attend)
        self.position.add_(1)
        return logits

    @torch.no_grad()
    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed `tokens` [B] at the next position; logits [B, V] for the one after. On CUDA the
        returned tensor is the graph's output buffer: use it before the next step."""
        if self.filled >= self.max_len:
            raise ValueError(f"the decoder's {self.max_len} positions are full: prefill again")
        self.filled += 1
        self.tokens.copy_(tokens.view(self.batch, 1))
        if not self.use_graph:
            return self._run_step()
        if self.graph is None:
            self._capture()
        self.graph.replay()
        return self.graph_logits

    def _capture(self) -> None:
        """Warm up on a side stream (as CUDA graphs require), then record one step; the position
        and the cache row the warm-up wrote are restored or rewritten before anything reads them."""
        saved = self.position.clone()
        context = torch.autocast(self.device.type, dtype=self.autocast_dtype or torch.float32,
                                 enabled=self.autocast_dtype is not None, cache_enabled=False)
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream), context:
            for _ in range(2):
                self._run_step()
                self.position.copy_(saved)
        torch.cuda.current_stream(self.device).wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), context:
            self.graph_logits = self._run_step()
        self.position.copy_(saved)


def _storage_key(model) -> tuple:
    """Where the weights live: `.to()` or a reload moves them, and a captured graph must not outlive that."""
    base = _llama(model)
    return (base.lm_head.weight.data_ptr(), base.model.embed_tokens.weight.data_ptr(),
            base.model.layers[0].self_attn.q_proj.weight.data_ptr(), len(base.model.layers))


@contextlib.contextmanager
def decoder_settings(attention: str = "sdpa", compiled: bool = False):
    """Decoders built inside use this step attention (one of `STEP_ATTENTIONS`) and compile their
    step or not: for timing the variants."""
    if attention not in STEP_ATTENTIONS:
        raise ValueError(f"attention must be one of {STEP_ATTENTIONS}, got {attention!r}")
    previous = dict(_SETTINGS)
    _SETTINGS.update(attention=attention, compiled=bool(compiled))
    try:
        yield
    finally:
        _SETTINGS.update(previous)


def decoder_for(model, batch: int, max_len: int) -> StaticDecoder:
    """The cached decoder of `model` for this batch, length, autocast state and settings (built on first use)."""
    device = _llama(model).lm_head.weight.device
    key = (batch, max_len, device, _autocast_state(device), _storage_key(model), tuple(_SETTINGS.values()))
    decoders = _DECODERS.setdefault(model, {})
    if key not in decoders:
        if len(decoders) >= MAX_DECODERS_PER_MODEL:
            decoders.pop(next(iter(decoders)))
        decoders[key] = StaticDecoder(model, batch, max_len)
    return decoders[key]
