"""The one device/precision policy (rlvr_envs.core.device), over mocked device capabilities."""

from __future__ import annotations

import pytest


def test_precision_policy_over_device_capabilities():
    import torch

    from rlvr_envs.core.device import Capabilities, precision_policy

    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    h200 = precision_policy(cuda, Capabilities("cuda", True, "NVIDIA H200"))
    assert h200.autocast_dtype == torch.bfloat16 and h200.tf32 and "H200" in h200.reason
    v100 = precision_policy(cuda, Capabilities("cuda", False, "Tesla V100"))
    assert v100.autocast_dtype is None and v100.tf32  # fp32 weights and math, TF32 matmuls where the GPU has them
    amx = precision_policy(cpu, Capabilities("cpu", True))
    assert amx.bf16 and not amx.tf32
    plain = precision_policy(cpu, Capabilities("cpu", False))
    assert plain.autocast_dtype is None and not plain.tf32 and "emulated" in plain.reason
    # explicit requests override the capabilities, and say so when bf16 is emulated
    forced = precision_policy(cpu, Capabilities("cpu", False), "bf16")
    assert forced.bf16 and "emulated" in forced.reason
    assert precision_policy(cuda, Capabilities("cuda", True), "fp32").autocast_dtype is None
    with pytest.raises(ValueError, match="precision must be one of"):
        precision_policy(cpu, Capabilities("cpu", False), "fp16")


def test_autocast_context_computes_in_bf16_only_when_decided():
    import torch

    from rlvr_envs.core.device import Capabilities, precision_policy

    layer, x = torch.nn.Linear(4, 4), torch.randn(2, 4)
    with precision_policy(torch.device("cpu"), Capabilities("cpu", True)).autocast():
        assert layer(x).dtype == torch.bfloat16
    with precision_policy(torch.device("cpu"), Capabilities("cpu", False)).autocast():
        assert layer(x).dtype == torch.float32


def test_resolve_device_auto_cpu_and_clear_errors(monkeypatch):
    import torch

    from rlvr_envs.core.device import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu") == resolve_device("CPU") == resolve_device(None)
    with pytest.raises(ValueError, match="no CUDA device is visible"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="not a device"):
        resolve_device("gpu0")
    with pytest.raises(ValueError, match="runs on auto"):
        resolve_device("meta")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(ValueError, match="only 2 CUDA device"):
        resolve_device("cuda:2")


def test_setup_device_sets_threads_and_leaves_tf32_off_on_cpu():
    import torch

    from rlvr_envs.core.device import setup_device

    before = torch.get_num_threads()
    try:
        run = setup_device("cpu", "fp32", threads=1)
        assert run.device == torch.device("cpu") and not run.tf32 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_sft_device_kwargs_follow_the_policy():
    from trainers.sft import device_kwargs

    kwargs = device_kwargs(True, "cpu")
    assert kwargs["bf16"] is False and kwargs["use_cpu"] is True


def test_preset_arithmetic_matches_an_instantiated_model_and_scales():
    from rlvr_envs.core.sizing import llama_cost, preset_cost
    from rlvr_envs.video.layout import VideoVocabulary
    from rlvr_envs.video.world_model import PRESETS, build_world_model

    vocab = VideoVocabulary(frame_codes=1000, action_bins=256)
    for name in ("tiny", "pusht"):
        model = build_world_model(vocab, 512, name)
        assert preset_cost(PRESETS[name], vocab.size, 512).parameters == sum(p.numel() for p in model.parameters())
    # iVideoGPT's size (12 layers, hidden 768) over RLVR-World's RT-1 multi-step vocabulary: ~120-140M
    paper = preset_cost(PRESETS["paper"], 9008, 2024)
    assert 115e6 < paper.parameters < 140e6
    ladder = [preset_cost(PRESETS[n], 4633, 1654) for n in ("pusht", "small", "medium", "large", "paper")]
    assert [c.parameters for c in ladder] == sorted(c.parameters for c in ladder)
    # FLOPs: 6 N per trained token when attention is negligible, more with a long context
    short = llama_cost(768, 12, 12, 3072, 4633, 1)
    assert abs(short.train_flops_per_token / (6 * (short.parameters - short.embedding_parameters)) - 1) < 1e-3
    assert paper.train_flops_per_token > 6 * (paper.parameters - paper.embedding_parameters)
    # activation memory is linear in the tokens of a sample; the batch that fits shrinks with the model
    assert llama_cost(256, 4, 4, 768, 1000, 200).activation_bytes_per_sample == \
        2 * llama_cost(256, 4, 4, 768, 1000, 100).activation_bytes_per_sample
    gib = 2**30
    assert paper.max_batch(139 * gib) > paper.max_batch(24 * gib) > 0
    assert llama_cost(8192, 80, 64, 28672, 32000, 4096).max_batch(24 * gib) == 0  # 70B: the state alone is too big


def test_text_preset_medium_is_a_50_to_100m_model():
    from rlvr_envs.core.sizing import preset_cost
    from trainers.sft import TEXT_PRESETS

    assert 50e6 < preset_cost(TEXT_PRESETS["medium"], 1024, 1024).parameters < 100e6


def test_rt1_tokenizer_preset_has_320_tokens_and_4375_codes():
    from rlvr_envs.video.frame_tokenizer import TOKENIZER_PRESETS, FrameTokenizer

    rt1 = TOKENIZER_PRESETS["rt1"].validate()
    assert (rt1.resolution, rt1.tokens_per_frame, rt1.codebook_size) == ((256, 320), 320, 4375)
    import numpy as np

    codes = FrameTokenizer(rt1).encode(np.zeros((1, 256, 320, 3), dtype=np.uint8))
    assert codes.shape == (1, 320)


def test_docs_preset_table_is_what_the_script_generates():
    from benchmarks.scale_table import main

    assert main(["--check"]) == 0, "run python -m benchmarks.scale_table --update"
