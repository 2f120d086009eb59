"""The world model's fast decode path: a preallocated KV cache and, on CUDA, one graph replay per token.

An eager Hugging Face forward per generated token is launch-bound at world-model sizes: on an
H200 the 120M "paper" preset took 10.4 ms per decode step at batch 64 where reading its KV cache
and weights takes ~1 ms. `StaticDecoder` runs the same LLaMA (its own modules: projections,
norms, MLPs, rotary tables, LoRA layers included) over a cache of fixed shape
[batch, kv heads, max_len, head dim] per layer, so the one-token step has fixed shapes and
addresses, and on CUDA it is captured once as a `torch.cuda.CUDAGraph` and replayed. The
position lives in a device tensor the step advances itself: no host round trip per token.

What a replayed step does, and why (each a setting, `decoder_settings`; `_FAST` is the default
where a graph replays the step, `_PLAIN` elsewhere):
* attention over the filled length only: "flex" runs FlexAttention over the cache in blocks of
  `FLEX_BLOCK` positions, the number of blocks to read held in a device tensor the step updates
  from the position, so a step's cost follows the filled length inside a fixed-shape graph
  (compiled, FlexAttention decodes split over the cache like flash-decoding). "sdpa" and
  "matmul" attend over the whole cache under a mask (cost follows max_len).
* bf16 weights: under bf16 autocast the fp32 weights would be cast on every step (moving 8 bytes
  a parameter: fp32 read, bf16 written and read, for the 2 the matmul needs); the decoder keeps its own bf16 copy of the
  matrices (LoRA merged in), refreshed from the live weights at every prefill, so an optimizer
  step between two generations is always seen (the embedding stays: a step reads one row of it).
* sampling inside the graph: temperature and top-k, then torch.multinomial's own one-sample
  draw written out (an exponential race on the decoder's generator, which the graph registers),
  so a replayed generation draws the eager path's tokens for a seed, with no host sync.
* `torch.compile` of the model step before the capture (fewer, fused kernels: a graph removes
  launch cost, not the kernels' count).
On one H200 (benchmarks/results/gpu_check/README.md) the paper preset at batch 64 decoded 20,070
tokens/s with sdpa, not compiled, fp32 weights under autocast and sampling outside the graph: 3.2 ms
a step, 5.4x the eager loop, 31% of the memory floor. **The fast defaults (flex, compiled, bf16
weights) are untested on a GPU**: chosen from that profile, proven equal on a CPU, to be confirmed
by `benchmarks.world_model_speed`, which times each variant; a capture that fails falls back to
`_PLAIN` and says so (`StaticDecoder.fallback`).
Without a graph (a CPU) the step attends over the filled positions only, as the eager path does,
unless compiled (fixed shapes); `full_length` turns the graph's fixed-shape step on without a graph,
so tests run it on a CPU.

The prompt is prefilled once per distinct row: a GRPO batch of prompts x group holds each
prompt `group` times, and its cache rows are copied from one forward of the distinct prompts.

Decoders are cached per (model, batch, length, autocast, device, parameter storage, settings), so
a GRPO loop captures its graphs once; without bf16 copies a replay reads the live weights, which
optimizer steps update in place. The cache is bf16 under bf16 autocast (half the bytes of the eager
path, which keeps fp32 keys); in fp32 the path equals the eager one to float rounding (tested: same
greedy and seeded sampled tokens).
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from typing import Any, NamedTuple

import torch

#: decoders kept per model (each holds a KV cache); the oldest is dropped past this
MAX_DECODERS_PER_MODEL = 4
#: how a fixed-shape step attends over the cache: "sdpa", PyTorch's fused attention under a mask over the
#: whole cache; "matmul", two batched matrix-vector products around a softmax that read each cached key and
#: value once (whole cache, masked); "flex", FlexAttention over the filled blocks only (see the module doc)
STEP_ATTENTIONS = ("sdpa", "matmul", "flex")
#: positions per FlexAttention block: a step reads ceil((position + 1) / FLEX_BLOCK) blocks of the cache
FLEX_BLOCK = 128
#: the settings of a graph-replayed step (untested on a GPU until benchmarks.world_model_speed times them)
#: and of a step without a graph (a CPU: filled positions by slicing, as the eager path; nothing to fuse)
_FAST = {"attention": "flex", "compiled": True, "bf16_weights": True}
_PLAIN = {"attention": "sdpa", "compiled": False, "bf16_weights": False}
#: what `decoder_settings` chose; None: `_FAST` where a graph replays the step, else `_PLAIN`
_SETTINGS: dict[str, Any] = {"attention": None, "compiled": None, "bf16_weights": None}
_DECODERS: "weakref.WeakKeyDictionary[Any, dict[tuple, StaticDecoder]]" = weakref.WeakKeyDictionary()
#: the matrices of a LLaMA layer a step reads whole (the ones a bf16 copy saves casting)
_MATRICES = (("self_attn", "q_proj"), ("self_attn", "k_proj"), ("self_attn", "v_proj"), ("self_attn", "o_proj"),
             ("mlp", "gate_proj"), ("mlp", "up_proj"), ("mlp", "down_proj"))


class Sampling(NamedTuple):
    """How a token is drawn from logits [B, V]: among the first `codes` ids, greedy when
    `temperature` <= 0, else softmax(logits / temperature) over the `top_k` largest. One home
    for the eager and the graph-replayed paths, so both draw the same tokens for a seed."""

    codes: int
    temperature: float = 1.0
    top_k: int | None = None

    def __call__(self, logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        logits = logits[:, :self.codes].float()
        if self.temperature <= 0:
            return logits.argmax(dim=-1)
        logits = logits / self.temperature
        if self.top_k is not None and self.top_k < self.codes:
            kth = torch.topk(logits, self.top_k, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        probs = torch.softmax(logits, dim=-1)
        # torch.multinomial(probs, 1, generator)'s own draw (ATen's one-sample path: argmax of probs over
        # Exp(1) noise), written out: the same tokens for a seed, and no host sync inside a graph
        return (probs / torch.empty_like(probs).exponential_(1, generator=generator)).argmax(dim=-1)


def _llama(model):
    """The `LlamaForCausalLM` inside `model` (a peft wrapper's base model keeps its LoRA layers)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if not (hasattr(base, "model") and hasattr(base.model, "layers") and hasattr(base, "lm_head")):
        raise TypeError(f"the static decoder needs a LLaMA-style causal LM, got {type(base).__name__}")
    return base


def _autocast_state(device: torch.device) -> tuple[bool, torch.dtype | None]:
    enabled = torch.is_autocast_enabled(device.type)
    return enabled, (torch.get_autocast_dtype(device.type) if enabled else None)


def _weight(module) -> torch.Tensor | None:
    """The weight `module` multiplies by: a peft LoRA layer's base weight plus its active adapters'
    B·A (merged, as the step would add them); None where that cannot be merged (DoRA)."""
    if not hasattr(module, "base_layer"):
        return module.weight
    weight = module.base_layer.weight
    if module.disable_adapters or module.merged:
        return weight
    for name in module.active_adapters:
        if name not in module.lora_A:
            continue
        if getattr(module, "use_dora", {}).get(name):
            return None
        weight = weight + module.get_delta_weight(name)
    return weight


def _bias(module) -> torch.Tensor | None:
    return getattr(getattr(module, "base_layer", module), "bias", None)


#: compiled code kept per function: every decoder compiles `StaticDecoder._forward` (or FlexAttention) again for
#: its own shapes and tensors, and past dynamo's default of 8 a new decoder would silently run uncompiled
RECOMPILE_LIMIT = 64


def _allow_recompiles() -> None:
    import torch._dynamo

    config = torch._dynamo.config
    config.recompile_limit = max(config.recompile_limit, RECOMPILE_LIMIT)


def _eager_flex(*args, **kwargs):
    """FlexAttention without compile (a CPU test): the reference that materialises the scores."""
    from torch.nn.attention.flex_attention import flex_attention

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        return flex_attention(*args, **kwargs)


class StaticDecoder:
    """Prefill and one-token decode steps of a LLaMA over a fixed-shape KV cache.

    `prefill(prompts)` -> logits [B, V] of the last prompt position; then `step(tokens)` feeds one
    token per row and returns the next logits, or with `sampling` the next tokens drawn on
    `generator` (`seeded(seed)` starts a generation's draws). Call all inside the autocast context
    the decoder was built under (`decoder_for` keys on it). Settings left None take `_SETTINGS`,
    then `_FAST` when a graph replays the step, else `_PLAIN`; bf16 weights apply under bf16
    autocast to fp32 weights only.
    """

    def __init__(self, model, batch: int, max_len: int, use_graph: bool | None = None,
                 attention: str | None = None, compiled: bool | None = None, bf16_weights: bool | None = None):
        base = _llama(model)
        weight = base.lm_head.weight
        self.device = weight.device
        self.use_graph = self.device.type == "cuda" if use_graph is None else use_graph
        #: attend over the whole cache's shape (as a graph needs) rather than slicing the filled part
        self.full_length = self.use_graph
        chosen = {"attention": attention, "compiled": compiled, "bf16_weights": bf16_weights}
        settings = {name: chosen[name] if chosen[name] is not None else value
                    for name, value in settings_for(self.use_graph).items()}
        if settings["attention"] not in STEP_ATTENTIONS:
            raise ValueError(f"attention must be one of {STEP_ATTENTIONS}, got {settings['attention']!r}")
        #: why the chosen settings were given up for `_PLAIN` (their capture failed), else None
        self.fallback: str | None = None
        config = base.config
        self.embed, self.layers = base.model.embed_tokens, list(base.model.layers)
        self.norm, self.lm_head = base.model.norm, base.lm_head
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        autocast, autocast_dtype = _autocast_state(self.device)
        self.autocast_dtype = autocast_dtype if autocast else None
        self.dtype = self.autocast_dtype or weight.dtype
        self.batch, self.max_len = batch, max_len
        # one tensor per layer, not views into one: compiled FlexAttention (torch 2.14, CPU) read the wrong
        # layer's keys from views at an offset into a shared buffer
        shape = (batch, self.kv_heads, max_len, self.head_dim)
        self.keys = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in self.layers]
        self.values = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in self.layers]
        with torch.no_grad():  # the model's own rotary module: the same cos/sin as its eager forward
            positions = torch.arange(max_len, device=self.device).unsqueeze(0)
            probe = torch.zeros(1, dtype=torch.float32, device=self.device)
            cos, sin = base.model.rotary_emb(probe, positions)
        self.cos, self.sin = cos[0].float(), sin[0].float()  # [max_len, head_dim]
        self.key_positions = torch.arange(max_len, device=self.device)
        self.position = torch.zeros((), dtype=torch.long, device=self.device)  # the next position to write
        self.filled = 0  #: the same position, counted on the host, so a step past the cache is refused
        self.tokens = torch.zeros((batch, 1), dtype=torch.long, device=self.device)  # the step's input
        #: the draws of sampled steps; `seeded` starts a generation's, a graph registers it
        self.generator = torch.Generator(device=self.device)
        self._scratch = torch.Generator(device=self.device)  # a capture's warm-up draws here, not from the seed
        self.graphs: dict[Sampling | None, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        self._pool = None
        self.copies: list[dict[str, torch.Tensor]] | None = None
        self._configure(**settings)

    def _configure(self, attention: str, compiled: bool, bf16_weights: bool) -> None:
        """Set the step's variant (at build, and again on a fallback)."""
        self.attention, self.compiled = attention, bool(compiled)
        if self.compiled:  # fixed shapes: slicing the filled part would recompile at every step
            self.full_length = True
        if self.compiled or (attention == "flex" and self.device.type == "cuda"):
            _allow_recompiles()
        # compiled once per decoder, on its first step (before a graph captures it: a replay runs its kernels)
        self._run_forward = torch.compile(self._forward, dynamic=False) if self.compiled else self._forward
        self._flex = None
        if attention == "flex":
            self._build_block_mask()
        self._copy_weights(bf16_weights)

    def _build_block_mask(self) -> None:
        """A FlexAttention block mask over the cache whose count of blocks to read is a device tensor
        (`_forward` sets it from the position), so a fixed-shape graph reads the filled blocks only."""
        from torch.nn.attention.flex_attention import BlockMask, flex_attention

        blocks = -(-self.max_len // FLEX_BLOCK)
        self.block_count = torch.ones((1, 1, 1), dtype=torch.int32, device=self.device)
        order = torch.arange(blocks, dtype=torch.int32, device=self.device).view(1, 1, 1, blocks)
        position = self.position

        def visible(batch, head, query, key):
            return key <= position

        self.block_mask = BlockMask.from_kv_blocks(self.block_count, order, BLOCK_SIZE=FLEX_BLOCK, mask_mod=visible,
                                                   seq_lengths=(1, self.max_len), compute_q_blocks=False)
        # FlexAttention is fused only when compiled: inside a compiled step it is; on CUDA an uncompiled
        # step compiles it alone; a CPU test's uncompiled step runs the reference (equal, compiles nothing)
        if self.compiled:
            self._flex = flex_attention
        elif self.device.type == "cuda":
            self._flex = torch.compile(flex_attention, dynamic=False)
        else:
            self._flex = _eager_flex

    def _copy_weights(self, wanted: bool) -> None:
        """bf16 copies of the matrices a step reads whole, where they save a cast per step (bf16
        autocast over fp32 weights) and every one can be merged; else the modules run as they are."""
        self.bf16_weights, self.copies, self._copied, self._head_copy = False, None, [], None
        if not (wanted and self.dtype == torch.bfloat16 and self.lm_head.weight.dtype == torch.float32):
            return
        modules = [{name: getattr(getattr(layer, part, None), name, None) for part, name in _MATRICES}
                   for layer in self.layers]
        if not all(m is not None and _weight(m) is not None for row in modules for m in row.values()):
            return  # not LLaMA's layer, or an adapter that cannot be merged: the modules run as they are
        self.bf16_weights = True
        self._copied = [m for row in modules for m in row.values()] + [self.lm_head]
        with torch.no_grad():
            flat = [torch.empty_like(_weight(m), dtype=torch.bfloat16) for m in self._copied]
        self.copies = [dict(zip(row, flat[i * len(_MATRICES):(i + 1) * len(_MATRICES)]))
                       for i, row in enumerate(modules)]
        self._head_copy = flat[-1]
        self._flat_copies = flat
        self.refresh_weights()

    @torch.no_grad()
    def refresh_weights(self) -> None:
        """Copy the live weights (LoRA merged) into the bf16 copies: one read of the weights, done at
        every prefill, so a generation never runs on weights an optimizer step has since changed."""
        if self.copies is not None:
            torch._foreach_copy_(self._flat_copies, [_weight(m) for m in self._copied])

    # -- the model ------------------------------------------------------------------------
    def _rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return ((x * cos) + (rotated * sin)).to(self.dtype)

    def _heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, heads, self.head_dim).transpose(1, 2)

    @staticmethod
    def _linear(module, copy: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor:
        return module(x) if copy is None else torch.nn.functional.linear(x, copy, _bias(module))

    def _layers(self, hidden: torch.Tensor, attend) -> torch.Tensor:
        """The decoder stack; `attend(index, q, k, v)` stores k/v and returns the attention output."""
        linear = self._linear
        for index, layer in enumerate(self.layers):
            attention, mlp = layer.self_attn, layer.mlp
            copy = self.copies[index] if self.copies is not None else {}
            x = layer.input_layernorm(hidden)
            q = self._heads(linear(attention.q_proj, copy.get("q_proj"), x), self.heads)
            k = self._heads(linear(attention.k_proj, copy.get("k_proj"), x), self.kv_heads)
            v = self._heads(linear(attention.v_proj, copy.get("v_proj"), x), self.kv_heads).to(self.dtype)
            out = attend(index, q, k, v)
            batch, _, length, _ = out.shape
            out = out.transpose(1, 2).reshape(batch, length, -1)
            hidden = hidden + linear(attention.o_proj, copy.get("o_proj"), out)
            x = layer.post_attention_layernorm(hidden)
            if copy:  # LLaMA's MLP, on the copies
                x = mlp.act_fn(linear(mlp.gate_proj, copy["gate_proj"], x)) * linear(mlp.up_proj, copy["up_proj"], x)
                hidden = hidden + linear(mlp.down_proj, copy["down_proj"], x)
            else:
                hidden = hidden + mlp(x)
        return linear(self.lm_head, self._head_copy, self.norm(hidden[:, -1]))

    def _attention(self, q, k, v, **kwargs) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, enable_gqa=self.kv_heads != self.heads, **kwargs)

    def _masked_attention(self, q, keys, values, visible) -> torch.Tensor:
        """One query per head [B, H, 1, D] over the cache [B, KV, L, D], `visible` [L] positions only
        ("flex": only the blocks up to the position are read at all)."""
        if self.attention == "flex":
            return self._flex(q, keys, values, block_mask=self.block_mask, enable_gqa=self.kv_heads != self.heads)
        if self.attention == "sdpa":
            return self._attention(q, keys, values, attn_mask=visible.view(1, 1, 1, -1))
        batch, heads, _, dim = q.shape
        grouped = q.reshape(batch, self.kv_heads, heads // self.kv_heads, dim)  # head h reads kv head h // group
        scores = torch.matmul(grouped, keys.transpose(-1, -2)).float() * dim ** -0.5  # [B, KV, group, L]
        weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1).to(values.dtype)
        return torch.matmul(weights, values).reshape(batch, heads, 1, dim)

    def seeded(self, seed: int | None) -> torch.Generator:
        """Start a generation's draws: the decoder's generator seeded with `seed` (None: a seed drawn
        from the device's default generator, which the eager path draws from, so `torch.manual_seed`
        still fixes the run)."""
        if seed is None:
            seed = int(torch.randint(0, 2**62, (1,), device=self.device))
        return self.generator.manual_seed(int(seed))

    @torch.no_grad()
    def prefill(self, prompts: torch.Tensor) -> torch.Tensor:
        """Run the prompts [B, P] (equal lengths) into the cache; logits [B, V] of their last position.
        Repeated rows (a GRPO group) are computed once and copied; the bf16 copies are refreshed first."""
        batch, length = prompts.shape
        if batch != self.batch or length >= self.max_len:
            raise ValueError(f"the decoder holds {self.batch} rows of {self.max_len} positions; got prompts "
                             f"{tuple(prompts.shape)}")
        self.refresh_weights()
        distinct, rows = torch.unique(prompts, dim=0, return_inverse=True) if batch > 1 else (prompts, None)
        if rows is not None and len(distinct) == batch:
            distinct, rows = prompts, None  # all different: skip the gather
        self.prefilled_rows = len(distinct)  #: rows the last prefill computed (the distinct prompts)
        cos, sin = self.cos[:length], self.sin[:length]

        def attend(index, q, k, v):
            q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
            self.keys[index][:, :, :length] = k if rows is None else k[rows]
            self.values[index][:, :, :length] = v if rows is None else v[rows]
            return self._attention(q, k, v, is_causal=True)

        logits = self._layers(self.embed(distinct), attend)
        self.position.fill_(length)
        self.filled = length
        return logits if rows is None else logits[rows]

    def _forward(self) -> torch.Tensor:
        """One token per row at `self.position` (read on the device): its logits.
        The fixed-shape step attends over the cache's whole shape (masked, or "flex": the filled
        blocks); without one the step slices the filled positions, which the host counts (on a CPU
        the masked full-length attention was 4.7x slower than the eager path at a 1,333-token prompt)."""
        position = self.position.view(1)
        cos, sin = self.cos.index_select(0, position), self.sin.index_select(0, position)
        filled = None if self.full_length else self.filled
        visible = self.key_positions <= self.position if filled is None else None
        if filled is None and self.attention == "flex":
            self.block_count.copy_(torch.div(position, FLEX_BLOCK, rounding_mode="floor").add(1).view(1, 1, 1))

        def attend(index, q, k, v):
            q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
            self.keys[index].index_copy_(2, position, k)
            self.values[index].index_copy_(2, position, v)
            keys, values = self.keys[index], self.values[index]
            if filled is None:
                return self._masked_attention(q, keys, values, visible)
            return self._attention(q, keys[:, :, :filled], values[:, :, :filled])

        return self._layers(self.embed(self.tokens), attend)

    def _step(self, sampling: Sampling | None, generator: torch.Generator) -> torch.Tensor:
        """What a graph replays: the (compiled) model step, the position advanced, then the draw when
        `sampling` is given (outside the compiled part: its generator is the decoder's, not inductor's)."""
        logits = self._run_forward()
        self.position.add_(1)
        return logits if sampling is None else sampling(logits, generator)

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, sampling: Sampling | None = None) -> torch.Tensor:
        """Feed `tokens` [B] at the next position; the logits [B, V] for the one after, or with
        `sampling` the token [B] drawn from them on `self.generator`. On CUDA the returned tensor
        is a graph's output buffer: use it before the next step."""
        if self.filled >= self.max_len:
            raise ValueError(f"the decoder's {self.max_len} positions are full: prefill again")
        self.filled += 1
        self.tokens.copy_(tokens.view(self.batch, 1))
        if not self.use_graph:
            return self._step(sampling, self.generator)
        if sampling not in self.graphs:
            self._capture_or_fall_back(sampling)
        graph, out = self.graphs[sampling]
        graph.replay()
        return out

    def _capture_or_fall_back(self, sampling: Sampling | None) -> None:
        saved = self.position.clone()  # a failed warm-up may have advanced it
        try:
            self._capture(sampling)
        except Exception as exc:  # a compile or capture this stack cannot do: the plain step, said aloud
            self.position.copy_(saved)
            chosen = (self.attention, self.compiled, self.bf16_weights)
            if chosen == (_PLAIN["attention"], _PLAIN["compiled"], _PLAIN["bf16_weights"]):
                raise
            self.fallback = f"{chosen}: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"[:300]
            warnings.warn(f"the static decoder's step could not be captured as {self.fallback}; "
                          f"decoding with {_PLAIN} instead", RuntimeWarning, stacklevel=3)
            self.graphs.clear()
            self._configure(**_PLAIN)
            self._capture(sampling)

    def _capture(self, sampling: Sampling | None) -> None:
        """Warm up on a side stream (as CUDA graphs require; its draws on a scratch generator), then
        record one step, the decoder's generator registered so each replay draws its next numbers;
        the position and the cache row the warm-up wrote are restored or rewritten before anything
        reads them."""
        saved = self.position.clone()
        context = torch.autocast(self.device.type, dtype=self.autocast_dtype or torch.float32,
                                 enabled=self.autocast_dtype is not None, cache_enabled=False)
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream), context:
            for _ in range(2):
                self._step(sampling, self._scratch)
                self.position.copy_(saved)
        torch.cuda.current_stream(self.device).wait_stream(stream)
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()  # one pool: a decoder's graphs never run at once
        graph = torch.cuda.CUDAGraph()
        graph.register_generator_state(self.generator)
        with torch.cuda.graph(graph, pool=self._pool), context:
            out = self._step(sampling, self.generator)
        self.position.copy_(saved)
        self.graphs[sampling] = (graph, out)


def settings_for(use_graph: bool) -> dict[str, Any]:
    """The settings a decoder is built with: `decoder_settings`' choices, the rest `_FAST` where a
    graph replays the step, else `_PLAIN`."""
    default = _FAST if use_graph else _PLAIN
    return {name: default[name] if value is None else value for name, value in _SETTINGS.items()}


def _storage_key(model) -> tuple:
    """Where the weights live: `.to()` or a reload moves them, and a captured graph must not outlive that."""
    base = _llama(model)
    return (base.lm_head.weight.data_ptr(), base.model.embed_tokens.weight.data_ptr(),
            base.model.layers[0].self_attn.q_proj.weight.data_ptr(), len(base.model.layers))


@contextlib.contextmanager
def decoder_settings(attention: str | None = None, compiled: bool | None = None, bf16_weights: bool | None = None):
    """Decoders built inside use this step attention (one of `STEP_ATTENTIONS`), compile their step
    or not, and keep bf16 weight copies or not; None keeps the default (`_FAST` where a graph
    replays the step, else `_PLAIN`). For timing the variants, or for turning the fast path off."""
    if attention is not None and attention not in STEP_ATTENTIONS:
        raise ValueError(f"attention must be one of {STEP_ATTENTIONS}, got {attention!r}")
    previous = dict(_SETTINGS)
    _SETTINGS.update(attention=attention, compiled=compiled, bf16_weights=bf16_weights)
    try:
        yield
    finally:
        _SETTINGS.update(previous)


def decoder_for(model, batch: int, max_len: int) -> StaticDecoder:
    """The cached decoder of `model` for this batch, length, autocast state and settings (built on first use)."""
    device = _llama(model).lm_head.weight.device
    key = (batch, max_len, device, _autocast_state(device), _storage_key(model),
           tuple(settings_for(device.type == "cuda").values()))
    decoders = _DECODERS.setdefault(model, {})
    if key not in decoders:
        if len(decoders) >= MAX_DECODERS_PER_MODEL:
            decoders.pop(next(iter(decoders)))
        decoders[key] = StaticDecoder(model, batch, max_len)
    return decoders[key]
