"""The static-cache decode path (the one CUDA graphs replay) against the eager Hugging Face path."""

import numpy as np
import pytest
import torch

from rlvr_envs.video.layout import MultiStepLayout, SingleStepLayout, VideoVocabulary


def _model(vocab, length, seed=0):
    from rlvr_envs.video.world_model import build_world_model

    model = build_world_model(vocab, length, "tiny", seed=seed).eval()
    with torch.no_grad():  # spread the logits, so float rounding between the paths cannot flip an argmax
        model.lm_head.weight.mul_(50)
    return model


def _layouts():
    vocab = VideoVocabulary(frame_codes=40, action_bins=8)
    return vocab, {"single": SingleStepLayout(vocab, tokens_per_frame=6, action_dims=2, history=2),
                   "multi": MultiStepLayout(vocab, tokens_per_frame=4, action_dims=2, history=1, future=3)}


def _prompts(vocab, layout, rows, rng):
    history = layout.history
    frames = rng.integers(0, vocab.frame_codes, (rows, history, layout.tokens_per_frame))
    actions = vocab.action_tokens(rng.integers(0, vocab.action_bins, (rows, history, 2)))
    given = None
    if isinstance(layout, MultiStepLayout):
        given = vocab.action_tokens(rng.integers(0, vocab.action_bins, (rows, layout.future, 2)))
        return np.stack([layout.prompt(f, a) for f, a in zip(frames, actions)]), given
    return np.stack([layout.prompt(f, a) for f, a in zip(frames, actions)]), given


def _engines_agree(model, prompts, layout, given) -> np.ndarray:
    """Greedy and sampled (same seed) responses of both engines are equal; the last static ones."""
    from rlvr_envs.video.world_model import generate_responses

    for temperature, top_k in ((0.0, None), (1.0, 5)):
        eager, static = (generate_responses(model, prompts, layout, given, temperature=temperature, top_k=top_k,
                                            seed=7, engine=engine) for engine in ("eager", "static"))
        assert np.array_equal(eager, static), (temperature, eager, static)
    return static


@pytest.mark.parametrize("kind", ["single", "multi"])
def test_static_decoder_gives_the_eager_greedy_and_sampled_tokens(kind):
    vocab, layouts = _layouts()
    layout = layouts[kind]
    model = _model(vocab, layout.prompt_len + layout.response_len)
    prompts, given = _prompts(vocab, layout, 3, np.random.default_rng(1))
    grouped = np.repeat(prompts, 2, axis=0)  # a GRPO batch: each prompt twice, prefilled once
    given = None if given is None else np.repeat(given, 2, axis=0)
    static = _engines_agree(model, grouped, layout, given)
    if given is not None:
        assert np.array_equal(static[:, ~layout.loss_mask()].reshape(given.shape), given)


def test_static_decoder_logits_match_the_model_forward_and_refuse_overflow():
    from rlvr_envs.video.static_decoder import StaticDecoder, decoder_for

    vocab = VideoVocabulary(frame_codes=40, action_bins=8)
    model = _model(vocab, 16, seed=2)
    tokens = torch.as_tensor(np.random.default_rng(0).integers(0, 40, (2, 12)))
    decoder = StaticDecoder(model, batch=2, max_len=12)
    logits = [decoder.prefill(tokens[:, :8])] + [decoder.step(tokens[:, i]) for i in range(8, 12)]
    with torch.no_grad():
        full = model(input_ids=tokens).logits[:, 7:12]
    assert torch.allclose(torch.stack(logits, 1), full, atol=1e-4)
    with pytest.raises(ValueError, match="full"):
        decoder.step(tokens[:, 0])
    assert decoder_for(model, 2, 12) is decoder_for(model, 2, 12)  # built once per shape
    assert decoder_for(model, 4, 12) is not decoder_for(model, 2, 12)


@pytest.mark.parametrize("attention, kv_heads, compiled", [("sdpa", None, False), ("sdpa", 1, False),
                                                         ("matmul", None, False), ("matmul", 1, False),
                                                         ("matmul", 1, True), ("flex", None, False),
                                                         ("flex", 1, False)])
def test_full_length_step_of_the_graph_path_matches_the_model_forward(attention, kv_heads, compiled):
    """What a CUDA graph replays (every step over the whole cache under a mask), run on a CPU, with
    each step attention, grouped KV heads and a compiled step: the logits of the model's own forward."""
    from transformers import LlamaForCausalLM

    from rlvr_envs.video.static_decoder import StaticDecoder, decoder_for, decoder_settings

    vocab = VideoVocabulary(frame_codes=40, action_bins=8)
    model = _model(vocab, 16, seed=4)
    if kv_heads:
        config = model.config
        config.num_key_value_heads = kv_heads
        torch.manual_seed(4)
        model = LlamaForCausalLM(config).eval()
    tokens = torch.as_tensor(np.random.default_rng(3).integers(0, 40, (3, 12)))
    decoder = StaticDecoder(model, batch=3, max_len=14, use_graph=False, attention=attention, compiled=compiled)
    decoder.full_length = True
    logits = [decoder.prefill(tokens[:, :7])] + [decoder.step(tokens[:, i]) for i in range(7, 12)]
    with torch.no_grad():
        full = model(input_ids=tokens).logits[:, 6:12]
    assert torch.allclose(torch.stack(logits, 1), full, atol=1e-4)
    with decoder_settings(attention, compiled):
        built = decoder_for(model, 3, 14)
        assert (built.attention, built.compiled) == (attention, compiled)
    default = decoder_for(model, 3, 14)  # the defaults again
    assert (default.attention, default.compiled) == ("sdpa", False)
    assert (default is built) == (attention == "sdpa" and not compiled)  # one decoder per setting
    with pytest.raises(ValueError, match="attention"):
        StaticDecoder(model, batch=1, max_len=4, attention="flash")


def test_speed_benchmark_shows_a_failed_decode_variant_beside_the_timed_ones():
    """A decode variant that fails on a GPU (say, its compile) is a row saying so, not a lost benchmark."""
    from benchmarks import world_model_speed as speed
    from rlvr_envs.core.device import setup_device

    precision = setup_device("cpu")
    result = speed.measure(precision.device, precision, speed.TINY, compile_too=False)
    assert list(result["decoding"]["engines"]) == ["eager", "static"]  # the variants need a graph: GPU only
    result["decoding"]["engines"]["static_compiled_matmul"] = {"error": "RuntimeError: no triton"}
    text = "\n".join(speed.markdown(result))
    assert "| static_compiled_matmul | failed: `RuntimeError: no triton` |" in text
    assert "| static | " in text and "| eager | " in text
    result["decoding"]["engines"]["static"]["fallback"] = "('flex', True, True): RuntimeError: no triton"
    assert "| static (fell back to the plain step: `('flex', True, True): RuntimeError: no triton`) | " in \
        "\n".join(speed.markdown(result))  # the defaults' row keeps the timing of what ran, and says why


def test_speed_benchmark_times_every_decode_variant_it_names():
    """The GPU's variant rows, run on a CPU under bf16 autocast: each is timed (none fails), its prefill
    apart from its decode, compared with eager, and says which settings it ran."""
    from benchmarks import world_model_speed as speed
    from rlvr_envs.core.device import setup_device

    precision = setup_device("cpu", request="bf16")
    result = speed.decoding(precision.device, precision, speed.TINY, copy_rate=1e10, compile_step=False,
                            variants=True)
    rows = result["engines"]
    assert list(rows) == ["eager", "static"] + [name for name, settings in speed.DECODE_VARIANTS.items()
                                                if not settings["compiled"]]
    assert all(row["tokens_per_second"] > 0 and row["decode_tokens_per_second"] > 0 and row["prefill_ms"] > 0
               and 0 <= row["greedy_tokens_equal_eager"] <= 1 for row in rows.values())
    assert rows["static_flex"]["settings"] == speed.DECODE_VARIANTS["static_flex"]
    assert rows["static"]["settings"] == {"attention": "sdpa", "compiled": False, "bf16_weights": False}  # CPU's
    assert result["group"] == speed.TINY.group and "| static_flex | " in "\n".join(speed.markdown(
        {"ceilings": {"matmul_size": 1, "matmul_flops": 1.0, "copy_bytes_per_second": 1.0}, "precision": "bf16",
         "decoding": result, "training": {"preset": "tiny", "parameters": 1, "batch": 1, "tokens_per_window": 1,
                                          "train_flops_per_token": 1.0, "modes": {}}}))


def test_static_decoder_under_bf16_autocast_keeps_a_bf16_cache_and_close_logits():
    from rlvr_envs.video.static_decoder import StaticDecoder

    vocab = VideoVocabulary(frame_codes=40, action_bins=8)
    model = _model(vocab, 16, seed=3)
    tokens = torch.as_tensor(np.random.default_rng(1).integers(0, 40, (2, 10)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        decoder = StaticDecoder(model, batch=2, max_len=10)
        last = decoder.prefill(tokens[:, :9])
        last = decoder.step(tokens[:, 9])
    with torch.no_grad():
        full = model(input_ids=tokens).logits[:, -1]
    assert decoder.keys[0].dtype == torch.bfloat16
    assert (last.float() - full).abs().max() <= 0.05 * full.abs().max()


def test_unknown_engine_is_refused():
    from rlvr_envs.video.world_model import generate_responses

    vocab, layouts = _layouts()
    with pytest.raises(ValueError, match="engine"):
        generate_responses(None, np.zeros((1, 3), dtype=int), layouts["single"], engine="fast")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU (run on one: pytest -k cuda)")
@pytest.mark.parametrize("variant, kind", [("defaults", "single"), ("defaults", "multi"), ("static_plain", "multi"),
                                           ("static_flex", "single"), ("static_compiled_sdpa", "single"),
                                           ("static_compiled_matmul", "multi")])  # 4 compiles, ~20-40 s each
def test_cuda_graph_replay_gives_the_eager_tokens_on_cuda(variant, kind):
    """Each decode variant the speed benchmark times, replayed as a graph with sampling inside it, gives
    the eager greedy and seeded tokens in fp32, and its own capture (no fallback)."""
    from benchmarks.world_model_speed import DECODE_VARIANTS
    from rlvr_envs.video.static_decoder import decoder_for, decoder_settings

    vocab, layouts = _layouts()
    layout = layouts[kind]
    model = _model(vocab, layout.prompt_len + layout.response_len).to("cuda")
    prompts, given = _prompts(vocab, layout, 4, np.random.default_rng(2))
    with decoder_settings(**DECODE_VARIANTS.get(variant, {})):
        _engines_agree(model, prompts, layout, given)
        decoder = decoder_for(model, 4, layout.prompt_len + layout.response_len)
    assert decoder.graphs and decoder.fallback is None  # it replayed its own graphs


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU (run on one: pytest -k cuda)")
def test_cuda_graph_on_bf16_copies_follows_an_in_place_update_on_cuda():
    """The GPU default (bf16 copies under bf16 autocast, replayed): close to the model's logits, and after
    an in-place optimizer step the next prefill's replays decode the updated weights."""
    from rlvr_envs.video.static_decoder import StaticDecoder

    vocab = VideoVocabulary(frame_codes=40, action_bins=8)
    model = _model(vocab, 16, seed=8).to("cuda")
    tokens = torch.as_tensor(np.random.default_rng(7).integers(0, 40, (2, 12))).to("cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        decoder = StaticDecoder(model, batch=2, max_len=12)
    assert decoder.bf16_weights and decoder.use_graph

    def compare():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = [decoder.prefill(tokens[:, :8]).float()] + [decoder.step(tokens[:, i]).float().clone()
                                                                 for i in range(8, 12)]
        with torch.no_grad():
            full = model(input_ids=tokens).logits[:, 7:12]
        assert (torch.stack(logits, 1) - full).abs().max() <= 0.05 * full.abs().max()
        return full

    before = compare()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model(input_ids=tokens, labels=tokens).loss.backward()
    optimizer.step()
    assert (compare() - before).abs().max() > 0.2 * before.abs().max()
    assert decoder.fallback is None

def test_sampling_draws_the_tokens_torch_multinomial_draws_for_a_seed():
    """The written-out draw (what a graph replays) is torch.multinomial's, so seeded results stay as they were."""
    from rlvr_envs.video.static_decoder import Sampling

    logits = torch.randn(6, 50, generator=torch.Generator().manual_seed(0)) * 3
    for temperature, top_k in ((1.0, None), (0.7, 5), (1.0, 100)):
        drawn = Sampling(40, temperature, top_k)(logits, torch.Generator().manual_seed(11))
        scaled = logits[:, :40] / temperature
        if top_k is not None and top_k < 40:
            scaled = scaled.masked_fill(scaled < torch.topk(scaled, top_k, dim=-1).values[:, -1:], float("-inf"))
        expected = torch.multinomial(torch.softmax(scaled, -1), 1, generator=torch.Generator().manual_seed(11))
        assert torch.equal(drawn, expected.squeeze(1)), (temperature, top_k)
    assert torch.equal(Sampling(40, 0.0)(logits), logits[:, :40].argmax(-1))


#: the graph's fixed-shape step run without a graph: FlexAttention over the filled blocks (the GPU default's
#: attention, uncompiled: its reference), and compiled (each compile 10-50 s on 2 busy CPU cores: marked slow)
FIXED_SHAPE_STEPS = {"flex": {"attention": "flex", "compiled": False},
                     "compiled_matmul": {"attention": "matmul", "compiled": True},
                     "compiled_flex": {"attention": "flex", "compiled": True}}


@pytest.mark.parametrize("variant, kind", [("flex", "single"), ("flex", "multi"),
                                           pytest.param("compiled_matmul", "single", marks=pytest.mark.slow),
                                           pytest.param("compiled_flex", "multi", marks=pytest.mark.slow)])
def test_static_compiled_and_eager_decoders_give_the_same_greedy_and_seeded_tokens(kind, variant):
    """Issue 52: eager, the static decoder's CPU step, and the fixed-shape step a graph replays (attention
    over the filled blocks, or compiled, sampling inside the step) give the same tokens, greedy and seeded;
    a seed repeats its tokens, another seed draws others; the GRPO group's prompts are prefilled once."""
    from rlvr_envs.video.static_decoder import decoder_for, decoder_settings
    from rlvr_envs.video.world_model import generate_responses

    vocab, layouts = _layouts()
    layout = layouts[kind]
    length = layout.prompt_len + layout.response_len
    model = _model(vocab, length, seed=5)
    prompts, given = _prompts(vocab, layout, 2, np.random.default_rng(4))
    prompts = np.repeat(prompts, 3, axis=0)
    given = None if given is None else np.repeat(given, 3, axis=0)
    settings = FIXED_SHAPE_STEPS[variant]
    for temperature, top_k, seed in ((0.0, None, None), (1.0, 5, 7)):
        def run(engine, seed=seed):
            return generate_responses(model, prompts, layout, given, temperature=temperature, top_k=top_k,
                                      seed=seed, engine=engine)
        eager, static = run("eager"), run("static")
        assert np.array_equal(eager, static), (temperature, eager, static)
        assert decoder_for(model, 6, length).prefilled_rows == 2  # 2 prompts x group 3: 2 rows computed
        with decoder_settings(**settings, bf16_weights=False):
            decoder = decoder_for(model, 6, length)
            decoder.full_length = True  # the graph's fixed-shape step, without a graph
            fixed = run("static")
        assert (decoder.attention, decoder.compiled) == (settings["attention"], settings["compiled"])
        assert np.array_equal(eager, fixed), (variant, temperature, eager, fixed)
        if seed is not None:
            assert np.array_equal(run("static"), static)  # a seed repeats its draws
            assert not np.array_equal(run("static", seed=seed + 1), static)


def test_flex_step_reads_the_blocks_up_to_the_position_and_matches_the_masked_cache():
    """The number of FlexAttention blocks the step reads is a device tensor that follows the filled
    length, and its attention equals the whole-cache masked attention of the other steps."""
    from rlvr_envs.video.static_decoder import FLEX_BLOCK, StaticDecoder

    vocab = VideoVocabulary(frame_codes=40, action_bins=8)
    length = FLEX_BLOCK + 8
    model = _model(vocab, length, seed=6)
    tokens = torch.as_tensor(np.random.default_rng(5).integers(0, 40, (2, length)))
    prompt = FLEX_BLOCK - 2
    logits, counts = {}, []
    for attention in ("flex", "sdpa"):
        decoder = StaticDecoder(model, batch=2, max_len=length, use_graph=False, attention=attention)
        decoder.full_length = True
        logits[attention] = [decoder.prefill(tokens[:, :prompt])]
        for i in range(prompt, prompt + 5):
            logits[attention].append(decoder.step(tokens[:, i]))
            if attention == "flex":
                counts.append(int(decoder.block_count))
    assert counts == [1, 1, 2, 2, 2]  # positions 126, 127 in block 0; 128.. in block 1
    assert torch.allclose(torch.stack(logits["flex"]), torch.stack(logits["sdpa"]), atol=1e-4)


@pytest.mark.slow
def test_compiled_flex_step_never_reads_the_cache_past_the_filled_blocks():
    """Compiled (the GPU default), FlexAttention skips the blocks past the position: NaNs written there
    change nothing, where any whole-cache attention (masked: 0 x NaN) would return NaN. ~30 s of compile."""
    from rlvr_envs.video.static_decoder import FLEX_BLOCK, StaticDecoder

    vocab = VideoVocabulary(frame_codes=40, action_bins=8)
    length = 2 * FLEX_BLOCK + 4
    model = _model(vocab, length, seed=7)
    tokens = torch.as_tensor(np.random.default_rng(6).integers(0, 40, (2, FLEX_BLOCK + 4)))
    decoder = StaticDecoder(model, batch=2, max_len=length, use_graph=False, attention="flex", compiled=True)
    decoder.full_length = True
    logits = [decoder.prefill(tokens[:, :FLEX_BLOCK])]
    for cache in decoder.keys + decoder.values:
        cache[:, :, 2 * FLEX_BLOCK:] = float("nan")
    logits += [decoder.step(tokens[:, i]).clone() for i in range(FLEX_BLOCK, FLEX_BLOCK + 4)]
    with torch.no_grad():
        full = model(input_ids=tokens).logits[:, FLEX_BLOCK - 1:]
    assert torch.allclose(torch.stack(logits, 1), full, atol=1e-4)


def test_bf16_weight_copies_give_close_logits_and_follow_an_in_place_update():
    """GRPO's optimizer updates the fp32 weights in place between generations: the decoder's bf16 copies
    (the fast path's weights) are refreshed at each prefill, so the next generation decodes the new model."""
    from rlvr_envs.video.static_decoder import StaticDecoder

    vocab = VideoVocabulary(frame_codes=40, action_bins=8)
    model = _model(vocab, 16, seed=8)
    tokens = torch.as_tensor(np.random.default_rng(7).integers(0, 40, (2, 12)))

    def decode(decoder):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return torch.stack([decoder.prefill(tokens[:, :8])] + [decoder.step(tokens[:, i]) for i in range(8, 12)],
                               1).float()

    def reference():
        with torch.no_grad():
            return model(input_ids=tokens).logits[:, 7:12]

    with torch.autocast("cpu", dtype=torch.bfloat16):
        decoder = StaticDecoder(model, batch=2, max_len=12, bf16_weights=True)
        plain = StaticDecoder(model, batch=2, max_len=12, bf16_weights=False)
    assert decoder.bf16_weights and not plain.bf16_weights
    assert decoder.copies[0]["q_proj"].dtype == torch.bfloat16 and model.lm_head.weight.dtype == torch.float32
    before, full = decode(decoder), reference()
    assert (before - full).abs().max() <= 0.05 * full.abs().max()
    assert (before - decode(plain)).abs().max() <= 0.02 * full.abs().max()  # bf16 copies ~ casting each step
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model(input_ids=tokens, labels=tokens).loss.backward()
    optimizer.step()  # in place, as GRPO's AdamW
    after, updated = decode(decoder), reference()
    assert (updated - full).abs().max() > 0.2 * full.abs().max()  # the update moved the logits
    assert (after - updated).abs().max() <= 0.05 * updated.abs().max()


def test_bf16_weight_copies_merge_a_lora_adapter():
    """A peft LoRA policy (GRPO with --lora-r): its adapters are merged into the copies."""
    peft = pytest.importorskip("peft")
    from rlvr_envs.video.static_decoder import StaticDecoder

    vocab = VideoVocabulary(frame_codes=40, action_bins=8)
    model = peft.get_peft_model(_model(vocab, 16, seed=9), peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], lora_dropout=0.0)).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.5)  # an adapter that changes the outputs
    tokens = torch.as_tensor(np.random.default_rng(8).integers(0, 40, (2, 10)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        decoder = StaticDecoder(model, batch=2, max_len=10, bf16_weights=True)
        last = decoder.prefill(tokens[:, :9])
        last = decoder.step(tokens[:, 9]).float()
    with torch.no_grad():
        full = model(input_ids=tokens).logits[:, -1]
        with model.disable_adapter():
            without = model(input_ids=tokens).logits[:, -1]
    assert decoder.bf16_weights
    assert (without - full).abs().max() > 0.2 * full.abs().max()
    assert (last - full).abs().max() <= 0.05 * full.abs().max()


def test_a_failed_capture_falls_back_to_the_plain_step_and_says_so(monkeypatch):
    """A GPU stack that cannot compile or capture the fast step (no Triton, say) decodes with the plain
    step, from the same position, and the decoder says why (the speed benchmark reports it as failed)."""
    from rlvr_envs.video.static_decoder import StaticDecoder

    def capture(self, sampling):  # stands in for the CUDA capture on a CPU
        if self.attention == "flex" or self.compiled:
            self.position.add_(1)  # a warm-up that ran before the failure
            raise RuntimeError("no triton")

        class Graph:
            def replay(graph):
                out.copy_(self._step(sampling, self.generator))

        out = self._step(sampling, self._scratch)
        self.position.sub_(1)
        self.graphs[sampling] = (Graph(), out)

    monkeypatch.setattr(StaticDecoder, "_capture", capture)
    vocab = VideoVocabulary(frame_codes=40, action_bins=8)
    model = _model(vocab, 16, seed=10)
    tokens = torch.as_tensor(np.random.default_rng(9).integers(0, 40, (2, 12)))
    decoder = StaticDecoder(model, batch=2, max_len=12, use_graph=True)  # the GPU defaults
    assert (decoder.attention, decoder.compiled) == ("flex", True)
    logits = [decoder.prefill(tokens[:, :8])]
    with pytest.warns(RuntimeWarning, match="no triton"):
        logits.append(decoder.step(tokens[:, 8]).clone())
    logits += [decoder.step(tokens[:, i]).clone() for i in range(9, 12)]
    with torch.no_grad():
        full = model(input_ids=tokens).logits[:, 7:12]
    assert torch.allclose(torch.stack(logits, 1), full, atol=1e-4)
    assert (decoder.attention, decoder.compiled) == ("sdpa", False) and "no triton" in decoder.fallback
