"""The policy interface shared by all architectures: per-step tokens, a causal temporal core, a GMM head.

A policy splits into ``encode_steps`` (each time step on its own: images, states, language → tokens) and
``temporal`` (a causal model over the window of tokens). Training supervises every step of a window at
once; a rollout keeps the last ``seq_len`` steps' tokens per env, so each new frame is encoded only once
(a recurrent architecture keeps its state instead, see ``rollout_features``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

import numpy as np
import torch
from torch import nn

from libero_ll.data.dataset import SequenceDataset, TaskData
from libero_ll.errors import LiberoError
from libero_ll.policies.augment import WindowAugment
from libero_ll.policies.gmm import GMMHead, gmm_log_prob, gmm_mode, gmm_sample_with


def coerce_config(config_class: type, cfg: Any) -> Any:
    """Turn ``cfg`` into an instance of the dataclass ``config_class``.

    Args:
        config_class: the policy's config dataclass.
        cfg: None (all defaults), an instance of ``config_class``, a mapping, or an OmegaConf config.

    Raises:
        LiberoError: on keys the dataclass does not define, listing the known ones.
    """
    if cfg is None:
        return config_class()
    if isinstance(cfg, config_class):
        return cfg
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        cfg = dataclasses.asdict(cfg)
    elif not isinstance(cfg, Mapping):
        try:
            from omegaconf import OmegaConf

            cfg = OmegaConf.to_container(cfg, resolve=True)
        except Exception:  # noqa: BLE001 - anything unconvertible is a user error here
            pass
    if not isinstance(cfg, Mapping):
        raise LiberoError(
            f"a policy config ({config_class.__name__}) is a mapping of its keys to values, not "
            f"{type(cfg).__name__} {cfg!r}"
        )
    known = {f.name for f in dataclasses.fields(config_class)}
    unknown = sorted(set(cfg) - known)
    if unknown:
        raise LiberoError(
            f"unknown {config_class.__name__} keys: {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return config_class(**dict(cfg))


class BasePolicy(nn.Module):
    """A visuomotor policy: windows of observations and a task embedding → a GMM over actions per step.

    Subclasses set ``config_class`` (a ``PolicyConfig`` subclass), build ``self.head`` (a ``GMMHead``) and
    implement ``encode_steps`` and ``temporal``; a recurrent one also overrides ``rollout_features``.

    Args:
        cfg: the config (instance of ``config_class``, a mapping or an OmegaConf config).
        shape_meta: {"image_shape": (H, W, 3), "lowdim": {key: size}, "action_dim": A, "task_emb_dim": D}.
    """

    config_class: type | None = None
    head: GMMHead
    # Entries of the state dict that weights saved before them lack; they load with their defaults.
    optional_state: tuple[str, ...] = ("language_mean", "language_scale")

    def __init__(self, cfg: Any, shape_meta: Mapping[str, Any]):
        super().__init__()
        if self.config_class is None:
            raise TypeError(f"{type(self).__name__} must set config_class")
        self.cfg = coerce_config(self.config_class, cfg)
        self.shape_meta = dict(shape_meta)
        for field in ("image_shape", "lowdim", "action_dim", "task_emb_dim"):
            if field not in self.shape_meta:
                raise LiberoError(f"shape_meta lacks {field!r}")
        self.image_keys = list(self.cfg.image_keys)
        self.lowdim_keys = list(self.cfg.lowdim_keys)
        missing = [k for k in self.lowdim_keys if k not in self.shape_meta["lowdim"]]
        if missing:
            raise LiberoError(
                f"low-dim keys {missing} are not in the data (it has {sorted(self.shape_meta['lowdim'])})"
            )
        if not self.image_keys and not self.lowdim_keys:
            raise LiberoError("a policy needs at least one image or low-dim key")
        for key, positions in self.cfg.lowdim_components.items():
            size = int(self.shape_meta["lowdim"][key])
            if max(positions) >= size:
                raise LiberoError(
                    f"lowdim_components.{key}: positions {positions} do not fit {key}, which has {size} numbers"
                )
        self.seq_len = int(self.cfg.seq_len)
        self.action_dim = int(self.shape_meta["action_dim"])
        self.action_chunk = int(self.cfg.action_chunk)
        self.augment = WindowAugment(
            self.cfg.shift_pad if self.cfg.augment_shift else 0,
            tuple(self.cfg.jitter) if self.cfg.augment_jitter else (0.0, 0.0, 0.0),
        )
        # Low-dim inputs are standardised with statistics of the first task's demos (set once, saved with
        # the weights): joint angles and hand poses vary little around large offsets, and unscaled they
        # barely move the tokens.
        for key in self.lowdim_keys:
            size = int(self.shape_meta["lowdim"][key])
            self.register_buffer(f"lowdim_mean_{key}", torch.zeros(size))
            self.register_buffer(f"lowdim_std_{key}", torch.ones(size))
        # Task embeddings are read as (emb - language_mean) * language_scale (`_task_emb`). The defaults scale
        # by sqrt(D) alone; with ``standardize_language`` a run sets them from its instructions
        # (`set_language_stats`), saved with the weights. A checkpoint from before these buffers loads with the
        # defaults, which is how it was trained (`_load_from_state_dict`).
        for name, value in self._language_defaults().items():
            self.register_buffer(name, value)
        self._tokens: torch.Tensor | None = None  # (N, L, M, E) tokens of the last L ≤ seq_len steps
        self._lengths: torch.Tensor | None = None  # (N,) valid steps per env, the newest at the end
        self._streams: list | None = None  # one numpy Generator per env for sampled actions (use_streams)
        # Temporal ensembling of action chunks: per env, the sum and number of the predictions made so far
        # for the current step (index 0) and the next action_chunk - 1.
        self._pending: tuple[torch.Tensor, torch.Tensor] | None = None  # (N, C, A), (N, C)

    # ---- what an architecture provides -------------------------------------------------------------

    def encode_steps(self, obs: dict[str, torch.Tensor], task_emb: torch.Tensor) -> torch.Tensor:
        """Tokens of every step on its own, (B, T, M, E).

        Args:
            obs: preprocessed observations: images float (B, T, 3, H, W) in [0, 1], low-dim (B, T, d).
            task_emb: (B, D) task embeddings.
        """
        raise NotImplementedError

    def temporal(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Causal features (B, T, F) from tokens (B, T, M, E); mask (B, T) is False on padded steps."""
        raise NotImplementedError

    def make_head(self, input_size: int) -> GMMHead:
        """The GMM head over this step's action and the next ``action_chunk - 1`` (the config's head keys)."""
        c = self.cfg
        return GMMHead(input_size, self.action_dim * self.action_chunk, c.gmm_modes, c.gmm_hidden, c.min_std)

    # ---- shared machinery --------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def preprocess(self, obs: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Move the used keys to the policy's device; images (B, T, H, W, 3) → float (B, T, 3, H, W).

        Images are uint8 (divided by 255) or already float in [0, 1]. Augmentation is applied here, in
        training mode only.
        """
        device = self.device
        out: dict[str, torch.Tensor] = {}
        for key in self.image_keys:
            if key not in obs:
                raise LiberoError(f"observation lacks image key {key!r} (has {sorted(obs)})")
            img = torch.as_tensor(obs[key]).to(device, non_blocking=True)
            out[key] = self.augment(img.permute(0, 1, 4, 2, 3))
        for key in self.lowdim_keys:
            if key not in obs:
                raise LiberoError(f"observation lacks low-dim key {key!r} (has {sorted(obs)})")
            x = torch.as_tensor(obs[key]).to(device, torch.float32)
            x = (x - getattr(self, f"lowdim_mean_{key}")) / getattr(self, f"lowdim_std_{key}")
            if self.training and self.cfg.lowdim_noise > 0:  # one offset per window (B, 1, D)
                x = x + self.cfg.lowdim_noise * torch.randn_like(x[:, :1])
            positions = self.cfg.lowdim_components.get(key)
            out[key] = x if positions is None else x[..., positions]
        return out

    def lowdim_size(self, key: str) -> int:
        """How many numbers of low-dim key ``key`` the policy reads (``lowdim_components``, else all)."""
        positions = self.cfg.lowdim_components.get(key)
        return int(self.shape_meta["lowdim"][key]) if positions is None else len(positions)

    def set_lowdim_stats(self, stats: Mapping[str, tuple[np.ndarray, np.ndarray]], min_std: float = 1e-2) -> None:
        """Standardise each low-dim input with (mean, std) from training data; stds below `min_std` are raised."""
        for key in self.lowdim_keys:
            if key in stats:
                mean, std = stats[key]
                getattr(self, f"lowdim_mean_{key}").copy_(torch.as_tensor(np.asarray(mean), dtype=torch.float32))
                std_t = torch.as_tensor(np.asarray(std), dtype=torch.float32).clamp(min=min_std)
                getattr(self, f"lowdim_std_{key}").copy_(std_t)

    def set_language_stats(self, task_embs: np.ndarray) -> bool:
        """Centre task embeddings on the mean of the distinct rows of `task_embs` (the run's instructions) and
        scale them so that their components have a root mean square of 1 about it (one scale for all
        components, so an instruction the run never saw is not blown up along a component the run's
        instructions share). For instructions that differ by a word or two (libero_spatial's: mean cosine
        0.845 with MiniLM, 0.995 for the closest two) the part they all share is then gone and what tells them
        apart is read at the size of a whole embedding (docs/policies.md).

        Returns False, leaving the defaults, when there are fewer than two distinct embeddings.
        """
        embs = np.unique(np.asarray(task_embs, dtype=np.float64), axis=0)
        if embs.ndim != 2 or embs.shape[1] != self.shape_meta["task_emb_dim"]:
            raise LiberoError(f"task embeddings of shape {np.shape(task_embs)}; the policy was built for "
                              f"{self.shape_meta['task_emb_dim']} dims")
        spread = float(embs.var(axis=0).mean()) if len(embs) > 1 else 0.0
        if spread <= 0.0:
            return False
        self.language_mean.copy_(torch.as_tensor(embs.mean(axis=0), dtype=torch.float32))
        self.language_scale.fill_(1.0 / math.sqrt(spread))
        return True

    def _language_defaults(self) -> dict[str, torch.Tensor]:
        """The reading of task embeddings before any statistics: emb * sqrt(D) (the `optional_state`)."""
        emb_dim = int(self.shape_meta["task_emb_dim"])
        return {"language_mean": torch.zeros(emb_dim), "language_scale": torch.tensor(math.sqrt(emb_dim))}

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # Weights saved before the policies read their embeddings through language_mean / language_scale
        # were trained on emb * sqrt(D): they load with the defaults that give exactly that.
        for name, value in self._language_defaults().items():
            state_dict.setdefault(prefix + name, value)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def features(self, batch: Mapping[str, Any]) -> torch.Tensor:
        """Causal features (B, T, F) of a training batch (the data package's ``get_batch`` format)."""
        obs = self.preprocess(batch["obs"])
        task_emb = self._task_emb(batch["task_emb"])
        mask = self._batch_mask(batch)
        return self.temporal(self.encode_steps(obs, task_emb), mask)

    def _task_emb(self, task_emb: Any) -> torch.Tensor:
        """Task embeddings as the policy reads them: (emb - language_mean) * language_scale, by default
        scaled by sqrt(D) alone (``set_language_stats`` sets them from a run's instructions).

        Sentence encoders return unit vectors, whose D components are about 1/sqrt(D) each (0.05 for a
        384-d one); a linear layer initialised for inputs of unit size then passes on features ten times
        smaller than a one-hot id's, and the cpu preset's policy learnt nothing where with a one-hot id it
        learnt (docs/policies.md). Scaled by sqrt(D), a unit vector's components have a root mean square of 1,
        whatever the encoder; a one-hot task id is scaled the same way.
        """
        emb = torch.as_tensor(task_emb).to(self.device, torch.float32)
        if emb.shape[-1] != self.shape_meta["task_emb_dim"]:
            raise LiberoError(
                f"task embeddings have {emb.shape[-1]} dims; "
                f"the policy was built for {self.shape_meta['task_emb_dim']}"
            )
        return (emb - self.language_mean) * self.language_scale

    def _batch_mask(self, batch: Mapping[str, Any]) -> torch.Tensor:
        if batch.get("mask") is None:
            b, t = next(iter(batch["obs"].values())).shape[:2]
            return torch.ones(b, t, dtype=torch.bool, device=self.device)
        return torch.as_tensor(batch["mask"]).to(self.device, torch.bool)

    def compute_loss(self, batch: Mapping[str, Any]) -> torch.Tensor:
        """Mean negative log-likelihood of the demonstrated actions over all unmasked (b, t) positions.

        Args:
            batch: {"obs": {key: (B, T, ...)}, "actions": (B, T, A) in [-1, 1], "mask": (B, T) bool,
                "task_emb": (B, D)}; images uint8 HWC. An optional "weight" (B, T) weights each step's
                terms (SequenceDataset's grasp_weight): the loss is then their weighted mean. Optional
                "next_actions" (B, N, A) and "next_mask" (B, N), the actions after the window
                (SequenceDataset's next_actions), are the targets of chunks reaching past it.

        Returns:
            A scalar tensor (nats per action).
        """
        mask = self._batch_mask(batch)
        actions = torch.as_tensor(batch["actions"]).to(self.device, torch.float32)
        weight = batch.get("weight")
        if weight is not None:
            weight = torch.as_tensor(weight).to(self.device, torch.float32)
        if self.action_chunk == 1:
            nll = -self.head(self.features(batch)).log_prob(actions)
            # where(), not a product: a padded position's NLL may be inf and inf * 0 is NaN.
            nll = torch.where(mask, nll, torch.zeros((), device=nll.device))
            if weight is not None:
                return (nll * weight).sum() / (mask * weight).sum().clamp(min=1e-6)
            return nll.sum() / mask.sum().clamp(min=1)
        # Step t predicts the actions of steps t .. t+C-1. Those past the window come from the batch's
        # "next_actions" where it has them; any past the demo's end (or past the window, without them) are
        # left out of the likelihood, so the loss is in nats per predicted action.
        b, t, a = actions.shape
        c = self.action_chunk
        after, after_known = self._next_actions(batch, b, c - 1, a)
        targets = torch.cat([actions, after], dim=1).unfold(1, c, 1)  # (B, T, A, C)
        targets = targets.transpose(2, 3).reshape(b, t, c * a)
        known = torch.cat([mask, after_known], dim=1).unfold(1, c, 1)  # (B, T, C)
        known = known & mask[:, :, None]
        valid = known[..., None].expand(b, t, c, a).reshape(b, t, c * a)
        logits, means, stds = self.head.params(self.features(batch))
        log_p = gmm_log_prob(logits, means, stds, targets, valid)
        nll = torch.where(mask, -log_p, torch.zeros((), device=log_p.device))
        if weight is not None:
            # A step's weight covers the actions it predicts.
            return (nll * weight).sum() / (known.sum(-1) * weight).sum().clamp(min=1e-6)
        return nll.sum() / known.sum().clamp(min=1)

    def windows(self, tasks: list[TaskData], **options: Any) -> SequenceDataset:
        """The training windows of `tasks` this policy's loss takes: its seq_len and observation keys, and
        the action_chunk - 1 actions after each window (its last steps' chunk targets). `options` go to
        SequenceDataset (grasp_weight, grasp_steps, gripper_lead, device)."""
        return SequenceDataset(tasks, self.seq_len, self.image_keys + self.lowdim_keys,
                               next_actions=self.action_chunk - 1, **options)

    def _next_actions(self, batch: Mapping[str, Any], b: int, n: int, a: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The ``n`` actions after each window, (B, n, A), and whether each is known, (B, n): the batch's
        "next_actions" (SequenceDataset's ``next_actions``) as far as it has them, unknown beyond."""
        after = torch.zeros(b, n, a, device=self.device)
        known = torch.zeros(b, n, dtype=torch.bool, device=self.device)
        if batch.get("next_actions") is not None:
            m = min(n, batch["next_actions"].shape[1])
            after[:, :m] = torch.as_tensor(batch["next_actions"][:, :m]).to(self.device, torch.float32)
            known[:, :m] = torch.as_tensor(batch["next_mask"][:, :m]).to(self.device)
        return after, known

    def reset(self, num_envs: int, env_ids: Any = None) -> None:
        """Forget the rollout history.

        Args:
            num_envs: number of parallel envs the next ``act`` calls will serve.
            env_ids: when given, clear only these envs' history (their episodes restarted) and keep the rest.
        """
        if env_ids is None or self._lengths is None:
            self._tokens = None
            self._lengths = torch.zeros(num_envs, dtype=torch.long)
            self._pending = None
            return
        if len(self._lengths) != num_envs:
            raise LiberoError(
                f"reset of some envs with num_envs={num_envs}, but the history has {len(self._lengths)}"
            )
        self._lengths[torch.as_tensor(env_ids, dtype=torch.long)] = 0
        if self._pending is not None:
            for pending in self._pending:
                pending[torch.as_tensor(env_ids, dtype=torch.long)] = 0

    def rollout_features(self, new: torch.Tensor) -> torch.Tensor:
        """Features (N, F) of the newest rollout step, given its tokens (N, 1, M, E); updates the history.

        Tokens depend on their own step only, so earlier steps' tokens are kept rather than recomputed and
        the temporal model reruns on the last ``seq_len`` steps. Architectures with a recurrent state
        override this.
        """
        tokens = new if self._tokens is None else torch.cat([self._tokens, new], dim=1)
        self._tokens = tokens[:, -self.seq_len :]
        self._lengths = (self._lengths + 1).clamp_(max=self.seq_len)
        length = self._tokens.shape[1]
        # Envs restarted since the window began are left-padded: their older steps are masked out.
        mask = torch.arange(length)[None, :] >= (length - self._lengths)[:, None]
        return self.temporal(self._tokens, mask.to(self.device))[:, -1]

    @torch.no_grad()
    def act(self, obs: Mapping[str, np.ndarray], task_emb: np.ndarray) -> np.ndarray:
        """Actions for one step of N parallel envs, given everything seen since their last reset.

        Args:
            obs: key → (N, ...) arrays of the current step; images uint8 (N, H, W, 3). Extra keys are
                ignored.
            task_emb: (N, D) or (D,) task embeddings.

        Returns:
            (N, A) float32 actions in [-1, 1]: sampled from the GMM, or the mean of its most likely
            component when ``cfg.deterministic_eval``. With ``action_chunk`` > 1, the mean of every
            prediction made for this step since the env's last reset.
        """
        keys = self.image_keys + self.lowdim_keys
        missing = [k for k in keys if k not in obs]
        if missing:
            raise LiberoError(f"observation lacks keys {missing} (has {sorted(obs)})")
        n = int(np.shape(obs[keys[0]])[0])
        if self._lengths is None:
            self.reset(n)
        elif len(self._lengths) != n:
            raise LiberoError(f"act got {n} envs but the history has {len(self._lengths)}; call reset({n})")
        emb = self._task_emb(np.asarray(task_emb, dtype=np.float32))
        emb = emb.expand(n, -1) if emb.dim() == 1 else emb
        step = {k: torch.as_tensor(np.asarray(obs[k]))[:, None] for k in keys}

        # Switching modes walks every submodule (about a millisecond a step for a cpu-size policy), so it is
        # done only for a policy in training mode; the evaluator puts the policy in eval mode first.
        was_training = self.training
        if was_training:
            self.eval()
        try:
            feats = self.rollout_features(self.encode_steps(self.preprocess(step), emb))
            dist = self.head(feats)
            if self.cfg.deterministic_eval:
                action = gmm_mode(dist)
            elif self._streams is not None:
                action = self._sample_from_streams(dist, n)
            else:
                action = dist.sample()
            if self.action_chunk > 1:
                action = self._ensemble(action.view(n, self.action_chunk, self.action_dim))
        finally:
            if was_training:
                self.train()
        return action.clamp(-1.0, 1.0).float().cpu().numpy()

    def use_streams(self, streams: list | None) -> None:
        """Draw the sampled actions of env i of the next `act` calls from ``streams[i]``, a numpy Generator
        (the caller may replace an entry when env i starts another rollout); None draws them from torch's
        stream. An evaluation gives each rollout a stream of its own (`libero_ll.evaluation.rollout`), so
        that a rollout's actions do not depend on where it runs: in one process, in a worker, or in a
        lock-step batch of any size, on any device."""
        self._streams = streams

    def _sample_from_streams(self, dist, n: int) -> torch.Tensor:
        """`gmm_sample_with` on one uniform and one standard normal per action number, drawn for each env
        from its stream."""
        if len(self._streams) != n:
            raise LiberoError(f"act got {n} envs but {len(self._streams)} random streams; call use_streams")
        width = dist.component_distribution.base_dist.loc.shape[-1]
        draws = np.stack([np.concatenate([[s.random()], s.standard_normal(width)]) for s in self._streams])
        draws = torch.as_tensor(draws, dtype=torch.float32).to(self.device)
        return gmm_sample_with(dist, draws[:, 0], draws[:, 1:])

    def _ensemble(self, chunk: torch.Tensor) -> torch.Tensor:
        """Add a new chunk (N, C, A) of predictions to the pending ones; the mean for the current step, (N, A)."""
        n, c, a = chunk.shape
        if self._pending is None:
            self._pending = (chunk.new_zeros(n, c, a), chunk.new_zeros(n, c))
        total, count = self._pending
        total += chunk
        count += 1
        action = total[:, 0] / count[:, 0:1]
        # Move on one step: what was predicted for the next step becomes the current one.
        self._pending = (
            torch.cat([total[:, 1:], total.new_zeros(n, 1, a)], dim=1),
            torch.cat([count[:, 1:], count.new_zeros(n, 1)], dim=1),
        )
        return action
