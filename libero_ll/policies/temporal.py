"""Causal temporal transformer over a window of steps, each holding a few tokens (cameras, states, language).

Attention is block-causal: a token at step t sees every token of steps ≤ t, so the output at step t depends
only on the past and all steps of a window can be trained at once. Padded steps (mask False) are never seen
by other steps.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from libero_ll.errors import LiberoError


def sinusoidal_table(length: int, dim: int) -> torch.Tensor:
    """The fixed sine/cosine position table of "Attention is all you need", (length, dim)."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)[:, : dim // 2]
    return table


def step_positions(mask: torch.Tensor) -> torch.Tensor:
    """Position of every step counted from the window's first valid step, (B, T) int64.

    A window padded at the start of an episode then gets the same positions as the short history a
    rollout has after its first steps.
    """
    return (mask.long().cumsum(dim=1) - 1).clamp_(min=0)


def block_causal_mask(mask: torch.Tensor, tokens_per_step: int) -> torch.Tensor:
    """Boolean attention mask (B, 1, L, L), L = T * tokens_per_step; True where a query may attend a key.

    A key is visible when its step is not later than the query's, and it is either a valid step or the
    query's own step (so that padded queries still attend to something and give no NaNs).
    """
    b, t = mask.shape
    step = torch.arange(t, device=mask.device).repeat_interleave(tokens_per_step)
    q_step, k_step = step[:, None], step[None, :]
    valid_key = mask.repeat_interleave(tokens_per_step, dim=1)[:, None, :]  # (B, 1, L)
    allowed = (k_step <= q_step)[None] & (valid_key | (k_step == q_step)[None])
    return allowed[:, None]


class SelfAttention(nn.Module):
    """Multi-head self-attention whose inner width (heads × head_size) may differ from the token width."""

    def __init__(self, dim: int, heads: int, head_size: int, dropout: float):
        super().__init__()
        self.heads, self.head_size, self.dropout = heads, head_size, dropout
        self.qkv = nn.Linear(dim, 3 * heads * head_size, bias=False)
        self.out = nn.Linear(heads * head_size, dim)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None) -> torch.Tensor:
        """Attend over (B, N, dim) tokens; ``attn_mask`` (B, 1, N, N) bool, or None: every token sees all."""
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.head_size).permute(2, 0, 3, 1, 4)
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=p)
        return self.out(y.transpose(1, 2).reshape(b, n, self.heads * self.head_size))


class TransformerLayer(nn.Module):
    """Pre-norm transformer layer: attention and an MLP, each with a residual connection and dropout."""

    def __init__(self, dim: int, heads: int, head_size: int, mlp_size: int, dropout: float):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads, head_size, dropout)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, mlp_size), nn.GELU(), nn.Dropout(dropout), nn.Linear(mlp_size, dim)
        )
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None) -> torch.Tensor:
        x = x + self.drop(self.attn(self.norm1(x), attn_mask))
        return x + self.drop(self.mlp(self.norm2(x)))


class TemporalTransformer(nn.Module):
    """Block-causal transformer decoder over (B, T, M, dim) tokens: T steps of M tokens each.

    Args:
        dim: token width.
        num_layers: number of transformer layers.
        heads: attention heads.
        head_size: width of each head.
        mlp_size: hidden width of each layer's MLP.
        dropout: dropout probability (attention weights, residual branches, MLP).
        max_len: longest window, in steps.
        position_encoding: "sinusoidal" (fixed) or "learned"; added to every token of a step.
    """

    def __init__(
        self,
        dim: int,
        num_layers: int = 4,
        heads: int = 6,
        head_size: int = 64,
        mlp_size: int = 256,
        dropout: float = 0.1,
        max_len: int = 10,
        position_encoding: str = "sinusoidal",
    ):
        super().__init__()
        self.max_len = max_len
        if position_encoding == "sinusoidal":
            self.register_buffer("positions", sinusoidal_table(max_len, dim), persistent=False)
        elif position_encoding == "learned":
            self.positions = nn.Parameter(torch.randn(max_len, dim) * 0.02)
        else:
            raise LiberoError(f"unknown position_encoding {position_encoding!r}; known: learned, sinusoidal")
        self.layers = nn.ModuleList(
            TransformerLayer(dim, heads, head_size, mlp_size, dropout) for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Run the transformer.

        Args:
            tokens: (B, T, M, dim) tokens, T ≤ max_len.
            mask: (B, T) bool, False on padded steps; None means all steps are valid.

        Returns:
            (B, T, M, dim) output tokens; the output at step t depends only on valid steps ≤ t and step t.
        """
        b, t, m, d = tokens.shape
        if t > self.max_len:
            raise LiberoError(f"window of {t} steps is longer than the transformer's max_len {self.max_len}")
        if mask is None:
            mask = torch.ones(b, t, dtype=torch.bool, device=tokens.device)
        x = tokens + self.positions[step_positions(mask)][:, :, None, :]
        x = self.drop(x.reshape(b, t * m, d))
        attn_mask = block_causal_mask(mask, m)
        for layer in self.layers:
            x = layer(x, attn_mask)
        return self.norm(x).view(b, t, m, d)
