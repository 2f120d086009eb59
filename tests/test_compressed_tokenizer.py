"""The compressed (multi-step) visual tokenizer and the layout with context codes, on tiny untrained models."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from rlvr_envs.core.errors import DataError
from rlvr_envs.video.compressed_tokenizer import CompressedTokenizer, CompressedTokenizerConfig
from rlvr_envs.video.frame_tokenizer import FrameTokenizer
from rlvr_envs.video.layout import MultiStepLayout, SingleStepLayout, VideoVocabulary

TINY = CompressedTokenizerConfig(resolution=(32, 32), context_downsample=4, context_levels=(5, 3),
                                 context_channels=(8, 16), future_downsample=16, future_levels=(4, 3),
                                 future_channels=(8, 8, 8, 16))


@pytest.fixture(scope="module")
def model() -> CompressedTokenizer:
    torch.manual_seed(0)
    return CompressedTokenizer(TINY).eval()


def _clips(n: int = 3, t: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(n, t, 32, 32, 3), dtype=np.uint8)


def test_sizes(model):
    assert (model.tokens_per_context, model.tokens_per_future) == (64, 4)
    assert (model.context_codebook_size, model.future_codebook_size) == (15, 12)
    assert TINY.context_grid == (8, 8) and TINY.future_grid == (2, 2)
    assert isinstance(model.context, FrameTokenizer)


def test_encode_decode_shapes_and_ranges(model):
    clips = _clips()
    context = model.encode_context(clips[:, 0])
    future = model.encode_future(clips, clips[:, 0])
    assert context.shape == (3, 64) and context.dtype == np.int64
    assert future.shape == (3, 4, 4) and future.dtype == np.int64
    assert 0 <= context.min() and context.max() < model.context_codebook_size
    assert 0 <= future.min() and future.max() < model.future_codebook_size
    frames = model.decode(context, future)
    assert frames.shape == (3, 4, 32, 32, 3)
    assert 0.0 <= float(frames.min()) and float(frames.max()) <= 1.0
    assert model.decode_context(context).shape == (3, 32, 32, 3)
    # a clip is encoded independently of the other clips in its batch
    assert np.array_equal(model.encode_future(clips[1:2], clips[1:2, 0]), future[1:2])
    assert torch.allclose(model.decode(context[1:2], future[1:2]), frames[1:2], atol=1e-5)


def test_training_path_matches_codes(model):
    clips = _clips(2, 1)
    x = model.to_input(clips[:, 0])
    _, decoded = model.reconstruct(x, x)
    via_codes = model.decode(model.encode_context(clips[:, 0]), model.encode_future(clips, clips[:, 0]))
    assert torch.allclose(decoded.clamp(0, 1).permute(0, 2, 3, 1), via_codes[:, 0], atol=1e-4)


def test_bad_inputs_fail_clearly(model):
    clips = _clips()
    with pytest.raises(ValueError, match=r"\[N, T, 32, 32, 3\]"):
        model.encode_future(clips[:, 0], clips[:, 0])
    with pytest.raises(ValueError, match="context frames"):
        model.encode_future(clips, clips[:2, 0])
    context, future = model.encode_context(clips[:, 0]), model.encode_future(clips, clips[:, 0])
    with pytest.raises(ValueError, match="frame codes"):
        model.decode(context, future[..., :3])
    with pytest.raises(ValueError, match=r"lie in \[0, 12\)"):
        model.decode(context, future + 100)
    with pytest.raises(ValueError, match="context code rows"):
        model.decode(context[:2], future)


def test_save_load_round_trip(model, tmp_path):
    clips = _clips(2, 3, seed=1)
    model.save(tmp_path / "tok", card={"steps": 0})
    loaded = CompressedTokenizer.load(tmp_path / "tok", expect=TINY)
    assert loaded.config == TINY and CompressedTokenizer.card(tmp_path / "tok") == {"steps": 0}
    context, future = model.encode_context(clips[:, 0]), model.encode_future(clips, clips[:, 0])
    assert np.array_equal(loaded.encode_context(clips[:, 0]), context)
    assert np.array_equal(loaded.encode_future(clips, clips[:, 0]), future)
    assert torch.equal(loaded.decode(context, future), model.decode(context, future))


def test_load_failures_name_the_problem(model, tmp_path):
    with pytest.raises(FileNotFoundError, match="no compressed tokenizer"):
        CompressedTokenizer.load(tmp_path / "nothing")
    directory = model.save(tmp_path / "tok")
    other = CompressedTokenizerConfig(**{**TINY.to_json(), "future_levels": (5, 3)})
    with pytest.raises(DataError, match=r"future_levels is \(4, 3\), expected \(5, 3\)"):
        CompressedTokenizer.load(directory, expect=other)
    # a config whose shapes disagree with the weights (one more latent channel)
    wider = CompressedTokenizerConfig(**{**TINY.to_json(), "future_levels": (4, 3, 3)})
    (directory / "config.json").write_text(json.dumps(wider.to_json()))
    with pytest.raises(DataError, match="wrong shape"):
        CompressedTokenizer.load(directory)
    (directory / "config.json").write_text(json.dumps({**TINY.to_json(), "format": "rlvr-world-frame-tokenizer"}))
    with pytest.raises(DataError, match="not a compressed tokenizer config"):
        CompressedTokenizer.load(directory)
    (directory / "config.json").write_text(json.dumps(TINY.to_json()))
    (directory / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model.safetensors is missing"):
        CompressedTokenizer.load(directory)


def test_invalid_configs():
    with pytest.raises(ValueError, match="coarser"):
        CompressedTokenizerConfig(future_downsample=4, future_channels=(16, 32)).validate()
    with pytest.raises(ValueError, match="one channel width per halving"):
        CompressedTokenizerConfig(future_channels=(16, 32)).validate()


def test_default_vocabulary_ids_unchanged():
    plain, explicit = VideoVocabulary(10, 4), VideoVocabulary(10, 4, context_codes=0)
    assert plain == explicit
    assert (plain.action_offset, plain.bos, plain.eos, plain.pad, plain.size) == (10, 14, 15, 16, 17)
    assert plain.action_tokens(np.array([0, 3])).tolist() == [10, 13]
    assert not plain.is_context_code(np.arange(plain.size)).any()
    # the shipped PushT vocabulary: 1,000 codes + 256 bins + 3 markers
    shipped = VideoVocabulary(1000)
    assert (shipped.action_offset, shipped.bos, shipped.eos, shipped.pad, shipped.size) == (1000, 1256, 1257, 1258, 1259)


def test_vocabulary_with_context_codes():
    vocab = VideoVocabulary(frame_codes=10, action_bins=4, context_codes=6)
    assert (vocab.context_offset, vocab.action_offset, vocab.bos, vocab.eos, vocab.pad, vocab.size) == \
        (10, 16, 20, 21, 22, 23)
    ids = np.arange(vocab.size)
    assert ids[vocab.is_frame_code(ids)].tolist() == list(range(10))
    assert ids[vocab.is_context_code(ids)].tolist() == list(range(10, 16))
    assert ids[vocab.is_action_token(ids)].tolist() == list(range(16, 20))
    assert vocab.context_tokens(np.array([0, 5])).tolist() == [10, 15]
    assert vocab.action_tokens(np.array([0, 3])).tolist() == [16, 19]
    with pytest.raises(ValueError, match="context codes"):
        vocab.context_tokens(np.array([6]))
    assert [vocab.kind(t) for t in (3, 12, 17, 20, 99)] == [
        "a frame code", "a context code", "an action token", "bos", "out of the vocabulary [0, 23)"]


def test_layout_with_context_frame():
    vocab = VideoVocabulary(frame_codes=10, action_bins=4, context_codes=6)
    layout = MultiStepLayout(vocab, tokens_per_frame=2, action_dims=1, history=1, future=2, context_len=3)
    given = vocab.action_tokens(np.array([[1], [2]]))
    prompt = layout.prompt(np.array([[7, 8]]), vocab.action_tokens(np.array([[0]])), context_codes=np.array([0, 5, 2]))
    assert prompt.tolist() == [10, 15, 12, 7, 8, 16]
    assert layout.prompt_len == len(prompt) == 6 and layout.response_len == 6
    response = layout.response(np.array([[1, 2], [3, 4]]), given)
    assert response.tolist() == [1, 2, 17, 3, 4, 18]
    assert layout.loss_mask().tolist() == [True, True, False, True, True, False]
    assert layout.forced_tokens([1, 2], given) == (17,)
    assert layout.forced_tokens([1], given) == ()
    frames, error = layout.frames(response)
    assert error is None and frames.tolist() == [[1, 2], [3, 4]]
    context_in_frame = response.copy()
    context_in_frame[3] = 12
    frames, error = layout.frames(context_in_frame)
    assert frames is None and "a context code" in error and "frame code" in error
    action_in_frame = response.copy()
    action_in_frame[0] = 17
    assert "an action token" in layout.frames(action_in_frame)[1]
    with pytest.raises(ValueError, match="pass context_codes"):
        layout.prompt(np.array([[7, 8]]), vocab.action_tokens(np.array([[0]])))
    with pytest.raises(ValueError, match="expected 3 context codes"):
        layout.prompt(np.array([[7, 8]]), vocab.action_tokens(np.array([[0]])), context_codes=np.array([1]))
    with pytest.raises(ValueError, match="context codes must lie"):
        layout.prompt(np.array([[7, 8]]), vocab.action_tokens(np.array([[0]])), context_codes=np.array([1, 2, 6]))
    with pytest.raises(ValueError, match="needs a vocabulary with context codes"):
        MultiStepLayout(VideoVocabulary(10, 4), 2, 1, context_len=3)


def test_default_layouts_unchanged():
    vocab = VideoVocabulary(frame_codes=10, action_bins=4)
    layout = MultiStepLayout(vocab, tokens_per_frame=2, action_dims=1, history=1, future=3)
    assert layout.context_len == 0 and layout.prompt_len == 3
    assert layout.prompt(np.array([[1, 2]]), vocab.action_tokens(np.array([[0]]))).tolist() == [1, 2, 10]
    with pytest.raises(ValueError, match="no context frame"):
        layout.prompt(np.array([[1, 2]]), vocab.action_tokens(np.array([[0]])), context_codes=np.array([1]))
    single = SingleStepLayout(vocab, tokens_per_frame=2, action_dims=1, history=2)
    assert single.prompt_len == 7


def test_compressed_tokens_feed_the_layout(model):
    """The codes of a clip make a valid prompt and response of the context layout."""
    clips = _clips(1, 3, seed=2)
    vocab = VideoVocabulary(model.future_codebook_size, 4, context_codes=model.context_codebook_size)
    layout = MultiStepLayout(vocab, model.tokens_per_future, 1, history=1, future=2, context_len=model.tokens_per_context)
    context = model.encode_context(clips[:, 0])[0]
    future = model.encode_future(clips, clips[:, 0])[0]
    actions = vocab.action_tokens(np.array([[0], [1], [2]]))
    prompt = layout.prompt(future[:1], actions[:1], context_codes=context)
    response = layout.response(future[1:], actions[1:])
    assert len(prompt) == layout.prompt_len == 64 + 4 + 1
    frames, error = layout.frames(response)
    assert error is None and np.array_equal(frames, future[1:])


def test_untrained_later_frames_copy_the_decoded_context(model):
    """The residual head starts at zero: before training every later frame is the decoded context frame."""
    clips = _clips(2, 3, seed=3)
    context = model.encode_context(clips[:, 0])
    frames = model.decode(context, model.encode_future(clips, clips[:, 0]))
    assert torch.allclose(frames, model.decode_context(context)[:, None].expand_as(frames), atol=1e-6)
