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
                                                         ("matmul", 1, True)])
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


def test_speed_benchmark_times_every_decode_variant_it_names():
    """The GPU's variant rows, run on a CPU under bf16 autocast: each is timed (none fails) and compared
    with eager, the bf16-weights row on the model converted to bf16."""
    from benchmarks import world_model_speed as speed
    from rlvr_envs.core.device import setup_device

    precision = setup_device("cpu", request="bf16")
    result = speed.decoding(precision.device, precision, speed.TINY, copy_rate=1e10, compile_step=False,
                            variants=True)
    rows = result["engines"]
    assert list(rows) == ["eager", "static", "static_matmul", "static_bf16_weights"]
    assert all(row["tokens_per_second"] > 0 and 0 <= row["greedy_tokens_equal_eager"] <= 1 for row in rows.values())


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
    assert decoder.keys.dtype == torch.bfloat16
    assert (last.float() - full).abs().max() <= 0.05 * full.abs().max()


def test_unknown_engine_is_refused():
    from rlvr_envs.video.world_model import generate_responses

    vocab, layouts = _layouts()
    with pytest.raises(ValueError, match="engine"):
        generate_responses(None, np.zeros((1, 3), dtype=int), layouts["single"], engine="fast")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU (run on one: pytest -k cuda)")
@pytest.mark.parametrize("kind", ["single", "multi"])
def test_cuda_graph_replay_gives_the_eager_tokens_on_cuda(kind):
    from rlvr_envs.video.static_decoder import decoder_for

    vocab, layouts = _layouts()
    layout = layouts[kind]
    model = _model(vocab, layout.prompt_len + layout.response_len).to("cuda")
    prompts, given = _prompts(vocab, layout, 4, np.random.default_rng(2))
    _engines_agree(model, prompts, layout, given)
    assert decoder_for(model, 4, layout.prompt_len + layout.response_len).graph is not None  # it replayed a graph
