"""Policy tests keep the instruction-embedding cache in a temporary folder, never in the user's home."""

import pytest


@pytest.fixture(autouse=True)
def private_embedding_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LIBERO_LL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"
