"""The one training loop every learner shares; learners change it through a few hooks.

`start_task(k, data)` before stage k, `observe(batch)` for each batch (one optimisation step; it returns the
loss as a tensor), `end_task(k, data)` after stage k's best checkpoint has been restored, then
`post_task_epochs()` more epochs of the same loop (PackNet's fine-tune after pruning), and `eval_context(j)`
around every evaluation of task j (several tasks for which `shares_eval_context` holds may be evaluated
together under one of them). Sequential learners have one stage per task (stage k is task k); a learner may
group tasks into other stages (`stages`, e.g. MTL's single stage of all tasks).

Everything a learner needs to continue after a crash is in `state_dict()` / `load_state_dict()`.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from libero_ll.data.dataset import SequenceDataset, TaskData, host_to_device
from libero_ll.errors import LiberoError


def adamw(params, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW over `params`, fused into one update for all of them where the device allows.

    The default implementation loops over the tensors: for the cpu preset's ResNet-T (99 tensors) on 2 CPU
    cores a step took 2.8 ms that way and 0.56 ms fused, of a training step of about 70 ms.
    """
    params = list(params)
    fused = bool(params) and all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in params)
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=fused)


# Values of train.precision and the torch.compile modes train.compile may name.
PRECISIONS = ("fp32", "bf16")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def is_number(value) -> bool:
    """Whether `value` is a finite int or float (true and false, and numbers written as text, are not), for
    options' checks."""
    from libero_ll.policies.config import finite_number

    return isinstance(value, (int, float)) and finite_number(value) is not None


def is_whole(value) -> bool:
    """Whether `value` is an int (true and false are not), for options' checks."""
    return not isinstance(value, bool) and isinstance(value, int)


@dataclass
class TrainConfig:
    """Optimisation settings, per task (the LIBERO paper's protocol by default).

    Args:
        epochs: epochs per task.
        batch_size: windows per batch.
        lr: AdamW learning rate at the start of each task.
        min_lr: cosine decay floor reached at the end of each task.
        weight_decay: AdamW weight decay.
        grad_clip: gradient norm clip.
        window_stride: an epoch visits one window every `window_stride` steps of each demo (random phase
            per epoch); 1 visits every start index. The causal policy supervises every step of a window,
            so a stride of seq_len still trains on every step once per epoch.
        ema_decay: 0 (off, the paper's protocol) or the decay of an exponential moving average of the
            weights over a stage's optimisation steps (e.g. 0.995). With it on, evaluations during
            training and the kept checkpoint use the averaged weights (parameters; norm statistics stay
            the raw ones); training continues from the raw ones. The decay warms up as min(ema_decay, (1 + n) / (10 + n)) after n steps.
        grasp_weight: 1 (off, the paper's protocol) or the weight in the loss of the grasp_steps demo steps
            before each closing of the fingers and the few after it (data.dataset.grasp_weights); the other
            steps weigh 1, replayed ones included.
        grasp_steps: steps before a closing of the fingers that grasp_weight covers.
        gripper_lead: 0 (the paper's protocol: the demos' actions as they are) or how many steps earlier than
            in its demo each closing and opening of the fingers is taught (SequenceDataset's gripper_lead):
            the fingers' command of each step is taken from that many steps later in the demo. Replayed
            windows are taught the same.
        data_on_device: hold the training windows (and ER's replay memory) on the policy's device and gather
            batches there: true, false, or null (auto: on a CUDA GPU when the data takes at most half of its
            free memory; on a CPU the host arrays are used). The batches are the same either way.
        precision: "fp32" (the default), "bf16": the training loss's forward pass (and so its backward)
            under bfloat16 autocast on the policy's device, or null (auto: bf16 on a CUDA GPU, fp32
            elsewhere). Weights, optimiser state and evaluation stay in float32. On the 2-core CPU bf16
            slowed a cpu-size step (docs/policies.md).
        compile: false (the default), true (torch.compile's default mode), a torch.compile mode
            ("reduce-overhead" uses CUDA graphs on a GPU; "max-autotune", "max-autotune-no-cudagraphs"),
            or null (auto: "reduce-overhead" on a CUDA GPU, off elsewhere; should compiling the loss's
            forward pass fail there, training goes on uncompiled with a warning, while a failure first met
            in the backward pass, which compiles at the first backward, stops the run as with a mode named):
            the training loss is computed by a compiled copy
            of ``policy.compute_loss``. Compiling takes seconds to minutes at the first step and again for
            each new batch shape. An epoch's last, smaller batch is padded to the full batch's size with
            windows whose steps are all masked out (the same loss and gradients; not for a policy with
            batch-statistics norms), so that a stage compiles once per batch size of the learner
            (docs/speed.md). Evaluation and EWC's Fisher estimate run eagerly.
    """

    epochs: int = 50
    batch_size: int = 32
    lr: float = 1e-4
    min_lr: float = 1e-5
    weight_decay: float = 1e-4
    grad_clip: float = 100.0
    window_stride: int = 1
    ema_decay: float = 0.0
    grasp_weight: float = 1.0
    grasp_steps: int = 15
    gripper_lead: int = 0
    data_on_device: bool | None = None
    precision: str | None = "fp32"
    compile: bool | str | None = False

    def __post_init__(self) -> None:
        for key, least in (("epochs", 0), ("batch_size", 1), ("window_stride", 1)):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                kind = "a non-negative integer" if least == 0 else "a positive integer"
                raise LiberoError(f"train.{key} must be {kind}, got {value!r}")
        for key, positive in (("lr", True), ("min_lr", False), ("weight_decay", False), ("grad_clip", True)):
            value = getattr(self, key)
            number = is_number(value)
            if not number or value < 0 or (positive and value == 0):
                kind = "a positive number" if positive else "a non-negative number"
                raise LiberoError(f"train.{key} must be {kind}, got {value!r}")
        if self.min_lr > self.lr:
            raise LiberoError(f"train.min_lr ({self.min_lr:g}) is above train.lr ({self.lr:g}): each task's cosine "
                              "schedule decays the learning rate from lr to min_lr; set min_lr to lr or less")
        if self.precision is not None and self.precision not in PRECISIONS:
            raise LiberoError(
                f"train.precision must be one of {', '.join(PRECISIONS)} or null (auto), got {self.precision!r}"
            )
        if self.compile is not None and not isinstance(self.compile, bool) and self.compile not in COMPILE_MODES:
            raise LiberoError(
                f"train.compile must be true, false, null (auto) or a torch.compile mode "
                f"({', '.join(COMPILE_MODES)}), got {self.compile!r}"
            )
        if self.data_on_device is not None and not isinstance(self.data_on_device, bool):
            raise LiberoError(f"train.data_on_device must be true, false or null (auto), got {self.data_on_device!r}")
        if not 0.0 <= float(self.ema_decay) < 1.0:
            raise LiberoError(f"train.ema_decay must be in [0, 1), got {self.ema_decay}")
        if isinstance(self.grasp_weight, bool) or not isinstance(self.grasp_weight, (int, float)) \
                or not 0.0 < float(self.grasp_weight) < float("inf"):
            raise LiberoError(f"train.grasp_weight must be a positive number, got {self.grasp_weight!r}")
        if isinstance(self.grasp_steps, bool) or not isinstance(self.grasp_steps, int) or self.grasp_steps < 0:
            raise LiberoError(f"train.grasp_steps must be a non-negative integer, got {self.grasp_steps!r}")
        if isinstance(self.gripper_lead, bool) or not isinstance(self.gripper_lead, int) or self.gripper_lead < 0:
            raise LiberoError(f"train.gripper_lead must be a non-negative integer, got {self.gripper_lead!r}")

    def precision_on(self, device: torch.device) -> str:
        """The precision training uses on `device`: `precision`, or for null bf16 on a CUDA GPU, else fp32."""
        if self.precision is None:
            return "bf16" if torch.device(device).type == "cuda" else "fp32"
        return self.precision

    def compile_on(self, device: torch.device) -> bool | str:
        """The torch.compile mode training uses on `device` (False: none): `compile`, or for null
        "reduce-overhead" on a CUDA GPU and none elsewhere."""
        if self.compile is None:
            return "reduce-overhead" if torch.device(device).type == "cuda" else False
        return self.compile

    def dataset(self, tasks: list[TaskData], policy) -> SequenceDataset:
        """`policy`'s training windows of `tasks` (`BasePolicy.windows`) with this config's grasp weighting and
        fingers' lead, on the policy's device as `data_on_device` says."""
        data = policy.windows(tasks, grasp_weight=self.grasp_weight, grasp_steps=self.grasp_steps,
                              gripper_lead=self.gripper_lead)
        if self.data_on_device is False:
            return data
        device = torch.device(policy.device)
        if self.data_on_device is None:
            if device.type != "cuda":
                return data
            free, _ = torch.cuda.mem_get_info(device)
            if data.nbytes() > free // 2:
                return data
        return data.to_device(device)


class Learner:
    """Sequential fine-tuning; subclasses override hooks to add replay, regularisation or masks.

    Args:
        policy: the BasePolicy being trained.
        train: TrainConfig.
        options: the learner's own keys from the config (each learner documents them).
    """

    options: dict = {}
    # Whether `eval_context` makes each task a network of its own from state beyond the weights (restored by
    # `load_eval_state`); False here, every task is evaluated with the weights as they are.
    per_task_networks: bool = False
    # Whether `memory_bytes` are stored training samples (replay), which the resource metrics count against
    # the data seen (SSS) rather than as model size (MS); False here.
    memory_is_samples: bool = False

    def __init__(self, policy, train: TrainConfig, options: dict):
        self.check_options(options)
        self.policy = policy
        self.train_cfg = train
        self.opts = {**self.options, **options}
        self.optimizer: torch.optim.Optimizer | None = None
        self.rng = np.random.default_rng(0)
        self._planned_epochs = train.epochs
        self._total_steps: int | None = None
        self._done_steps = 0
        # Training windows per task id seen in the current stage (replayed windows included).
        self.samples_by_task: dict[int, int] = {}
        # Moving average of the policy's parameters over the stage's steps (train.ema_decay), by name.
        self._ema: dict[str, torch.Tensor] | None = None
        self._ema_steps = 0
        # torch.compile of policy.compute_loss (train.compile), made at first use; False once compiling failed
        # under train.compile null (auto). Batches are padded to the largest size it was called with.
        self._compiled_loss = None
        self._compiled_size = 0

    @classmethod
    def check_options(cls, options: dict) -> None:
        """LiberoError naming any option this learner does not have, or a value it cannot use."""
        if not isinstance(options, Mapping):
            raise LiberoError(
                f"learner {getattr(cls, 'registered_name', cls.__name__)}: options are a mapping of option names to "
                f"values (known: {sorted(cls.options) or 'none'}), got {options!r}"
            )
        unknown = sorted(set(options) - set(cls.options))
        if unknown:
            raise LiberoError(
                f"learner {getattr(cls, 'registered_name', cls.__name__)}: unknown options {unknown}; known: "
                f"{sorted(cls.options) or 'none'}"
            )
        cls.check_values({**cls.options, **options})

    @classmethod
    def check_values(cls, opts: dict) -> None:
        """LiberoError for an option value out of range (subclasses check their own)."""

    @classmethod
    def stages(cls, num_tasks: int) -> list[list[int]]:
        """Task indices trained together in each stage, in order: one task per stage by default."""
        return [[k] for k in range(num_tasks)]

    # ------------------------------------------------------------------ hooks

    def start_task(self, k: int, data) -> None:
        """Fresh optimiser and cosine schedule for stage k (`data`: the stage's TaskData, or a list of them)."""
        self.optimizer = self._new_optimizer()
        self._begin_schedule(self.train_cfg.epochs)
        self.samples_by_task = {}
        self._start_average()

    def observe(self, batch: dict) -> torch.Tensor:
        """One optimisation step on `batch`; returns the loss, a detached scalar on the policy's device.

        The loss stays a tensor so that a step does not wait for the device: reading its value (``float``)
        blocks until the step's queued work is done, and the training loop reads the losses once per epoch.
        It is a copy, since a compiled loss (train.compile "reduce-overhead") reuses its output's memory.
        """
        self._count(batch)
        loss = self.loss(batch)
        self._step(loss)
        return loss.detach().clone()

    def loss(self, batch: dict) -> torch.Tensor:
        """The policy's behaviour-cloning loss on `batch` (a float32 scalar), computed as train.precision and
        train.compile say; every learner trains on this."""
        device = self.policy.device
        mode = self.train_cfg.compile_on(device) if self._compiled_loss is not False else False
        bf16 = self.train_cfg.precision_on(device) == "bf16"
        if not mode:
            return self._loss_with(self.policy.compute_loss, batch, bf16)
        if self._compiled_loss is None:
            # Compiled for each batch shape as it comes: a shape left symbolic could not draw the random
            # shift's offsets (torch.randint takes concrete sizes). Smaller batches are padded to the largest
            # size seen (pad_batch), so that an epoch's last batch does not compile again.
            self._compiled_loss = torch.compile(self.policy.compute_loss, mode=None if mode is True else mode,
                                                dynamic=False)
        size = _batch_size(batch)
        if device.type != "cpu":
            # Moved before the compiled function: host tensors among its inputs keep CUDA graphs out of it.
            batch = batch_on_device(batch, device)
        if size < self._compiled_size and not _has_batch_statistics(self.policy):
            batch = pad_batch(batch, self._compiled_size)
        self._compiled_size = max(self._compiled_size, _batch_size(batch))
        try:
            return self._loss_with(self._compiled_loss, batch, bf16)
        except Exception as e:  # noqa: BLE001 - only a compiler's failure is caught, below
            if self.train_cfg.compile is not None or not _is_compiler_error(e):
                raise
            warnings.warn(f"train.compile (auto): compiling the training loss failed on {device} "
                          f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); training goes "
                          "on uncompiled. Set train.compile=false to skip the attempt.", stacklevel=2)
            self._compiled_loss = False
            return self._loss_with(self.policy.compute_loss, batch, bf16)

    def _loss_with(self, fn, batch: dict, bf16: bool) -> torch.Tensor:
        if bf16:
            with torch.autocast(device_type=self.policy.device.type, dtype=torch.bfloat16):
                return fn(batch).float()
        return fn(batch)

    def end_task(self, k: int, data) -> None:
        """Called after stage k's training, with the kept (best) weights loaded."""

    def post_task_epochs(self) -> int:
        """Epochs of the shared loop to run after `end_task` (resumable like training epochs); 0 by default."""
        return 0

    def eval_context(self, j: int):
        """Context manager in which the policy acts as the learner's policy for task j (a no-op here)."""
        return contextlib.nullcontext()

    def load_eval_state(self, state: dict) -> None:
        """Restore from a `state_dict()` only what `eval_context` needs, without any task's data (to evaluate
        a saved policy); nothing here."""

    def shares_eval_context(self, tasks: list[int]) -> bool:
        """Whether `eval_context` makes the same policy for all of `tasks`, so that their rollouts may be
        batched together under one context; True here (the context does not depend on the task)."""
        return True

    def memory_bytes(self) -> int:
        """Bytes the learner keeps besides the policy (replay data, Fisher values, masks); 0 here."""
        return 0

    def params_used(self, k: int) -> int:
        """Parameters of the policy used for task k: all of them here."""
        return sum(p.numel() for p in self.policy.parameters())

    def extra_windows(self) -> int:
        """Windows passed forward and backward in the stage beyond training batches (e.g. Fisher); 0 here."""
        return 0

    # ------------------------------------------------------------------ loop

    def _new_optimizer(self) -> torch.optim.Optimizer:
        t = self.train_cfg
        return adamw(self.policy.parameters(), t.lr, t.weight_decay)

    def _begin_schedule(self, epochs: int) -> None:
        self._planned_epochs = int(epochs)
        self._total_steps = None
        self._done_steps = 0

    def _count(self, batch: dict) -> None:
        for tid, n in zip(*np.unique(np.asarray(batch["task_id"]), return_counts=True)):
            self.samples_by_task[int(tid)] = self.samples_by_task.get(int(tid), 0) + int(n)

    def adjust_gradients(self) -> None:
        """Called between backward and the gradient clip (PackNet masks frozen weights here)."""

    def after_update(self) -> None:
        """Called after each optimiser step (PackNet restores frozen weights here)."""

    def _step(self, loss: torch.Tensor) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.adjust_gradients()
        torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.train_cfg.grad_clip)
        self.optimizer.step()
        self.after_update()
        self._update_average()
        self._schedule()

    # ------------------------------------------------------------------ weight averaging

    def _start_average(self) -> None:
        self._ema_steps = 0
        self._ema = None
        if self.train_cfg.ema_decay > 0:
            self._ema = {n: p.detach().clone() for n, p in self.policy.named_parameters()}

    def _update_average(self) -> None:
        if self._ema is None:
            return
        self._ema_steps += 1
        n = self._ema_steps
        decay = min(float(self.train_cfg.ema_decay), (1.0 + n) / (10.0 + n))
        # One multi-tensor update for all parameters: a loop launched about 160 small operations per step for
        # a paper-size ResNet-T, a sixth of what a whole training step launches.
        named = list(self.policy.named_parameters())
        with torch.no_grad():
            torch._foreach_lerp_([self._ema[name] for name, _ in named], [p for _, p in named], 1.0 - decay)

    def end_average(self) -> None:
        """Stop averaging (called once the stage's kept weights are loaded; post-task epochs train raw)."""
        self._ema = None

    @contextlib.contextmanager
    def averaged_weights(self):
        """Inside the block the policy holds the averaged weights (unchanged when averaging is off)."""
        if self._ema is None:
            yield
            return
        params = dict(self.policy.named_parameters())
        raw = {n: p.detach().clone() for n, p in params.items()}
        _copy_weights(params, self._ema)
        try:
            yield
        finally:
            _copy_weights(params, raw)

    def load_averaged_weights(self, state: dict) -> None:
        """Put into the policy the moving average of its weights that a `state_dict()` holds, if it holds one
        (saved in mid-stage with train.ema_decay): the weights the run's evaluations rolled out."""
        average = state.get("ema")
        if not average:
            return
        params = dict(self.policy.named_parameters())
        if set(average) != set(params):
            raise LiberoError("the saved moving average of the weights does not match the policy's parameters")
        _copy_weights(params, average)

    def _schedule(self) -> None:
        # Cosine decay from lr to min_lr over the stage's total number of steps.
        if self._total_steps:
            self._done_steps += 1
            t = self.train_cfg
            frac = min(self._done_steps / self._total_steps, 1.0)
            lr = t.min_lr + 0.5 * (t.lr - t.min_lr) * (1 + math.cos(math.pi * frac))
            for g in self.optimizer.param_groups:
                g["lr"] = lr

    def current_lr(self) -> float:
        """The learning rate the next step will use (NaN before the first stage)."""
        return float(self.optimizer.param_groups[0]["lr"]) if self.optimizer is not None else float("nan")

    def epoch_indices(self, dataset: SequenceDataset) -> np.ndarray:
        """Window indices of one epoch, shuffled, every `window_stride`-th start with a random phase."""
        stride = max(1, self.train_cfg.window_stride)
        idx = dataset.window_index()
        phase = self.rng.integers(stride)
        keep = np.nonzero((idx[:, 2] % stride) == phase)[0]
        if len(keep) == 0:
            keep = np.arange(len(idx))
        return self.rng.permutation(keep)

    def train_mode(self) -> None:
        """Put the policy in training mode before an epoch (PackNet keeps frozen norm layers in eval mode)."""
        self.policy.train()

    def train_epoch(self, dataset: SequenceDataset) -> float:
        """One pass over the stage's windows; returns the mean loss."""
        self.train_mode()
        order = self.epoch_indices(dataset)
        bs = self.train_cfg.batch_size
        batches = [order[i : i + bs] for i in range(0, len(order), bs)]
        if self._total_steps is None:
            self._total_steps = len(batches) * self._planned_epochs
            self._done_steps = 0
        losses = [self.observe(dataset.get_batch(b)) for b in batches]
        # One read of the device per epoch, not one per step.
        return float(torch.stack(losses).double().mean()) if losses else float("nan")

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict:
        """What a checkpoint must hold to continue this learner mid-stage (subclasses add their memories).

        Holds only tensors, numbers, strings, lists and dicts, so that it loads with weights_only=True.
        """
        return {
            "rng": _rng_state(self.rng),
            "optimizer": self.optimizer.state_dict() if self.optimizer is not None else None,
            "planned_epochs": self._planned_epochs,
            "total_steps": self._total_steps,
            "done_steps": self._done_steps,
            "samples_by_task": {str(k): v for k, v in self.samples_by_task.items()},
            "ema": self._ema,
            "ema_steps": self._ema_steps,
        }

    def load_state_dict(self, state: dict, tasks: list[TaskData]) -> None:
        """Restore `state_dict()`; `tasks` are all tasks' data by task id, from which memories are rebuilt (a run
        passes a DemoStore, which reads a task's demos when it is first indexed: index only those needed)."""
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = _rng_from_state(state["rng"])
        self.optimizer = None
        if state["optimizer"] is not None:
            self.optimizer = self._new_optimizer()
            self.optimizer.load_state_dict(state["optimizer"])
        self._planned_epochs = int(state["planned_epochs"])
        self._total_steps = state["total_steps"]
        self._done_steps = int(state["done_steps"])
        self.samples_by_task = {int(k): int(v) for k, v in state["samples_by_task"].items()}
        ema = state.get("ema")
        # Saved states are read onto the CPU: the average goes where its parameter lives (a run resumed on a GPU).
        params = dict(self.policy.named_parameters())
        self._ema = None if ema is None else {
            n: t.to(params[n].device if n in params else t.device, copy=True) for n, t in ema.items()}
        self._ema_steps = int(state.get("ema_steps", 0))


def batch_on_device(batch: dict, device) -> dict:
    """`batch` with its tensors on `device` (host ones copied without making the host wait), but its task ids,
    which the learner counts on the host."""
    out = {}
    for key, value in batch.items():
        if isinstance(value, dict):
            out[key] = batch_on_device(value, device)
        elif isinstance(value, torch.Tensor) and key != "task_id":
            out[key] = host_to_device(value, device)
        else:
            out[key] = value
    return out


def _batch_size(batch: dict) -> int:
    """Windows in `batch` (the length of its actions)."""
    return int(batch["actions"].shape[0])


def pad_batch(batch: dict, size: int) -> dict:
    """`batch` padded to `size` windows with copies of its own windows whose steps are all masked out.

    Masked steps add nothing to the loss or its gradients (`BasePolicy.compute_loss` averages over the unmasked
    ones), so a padded batch trains exactly as the batch itself would, up to the random augmentations' draws,
    for policies whose layers treat each window on its own (no batch-statistics norms). Used for compiled
    training, where every new batch size would compile the loss again."""
    n = _batch_size(batch)
    if size <= n:
        return batch
    index = np.arange(size - n) % n
    on = {}  # the index on each device the batch's tensors are on (copied without making the host wait)

    def extend(key, value):
        if isinstance(value, dict):
            return {k: extend(k, v) for k, v in value.items()}
        if value is None:
            return None
        if torch.is_tensor(value) and value.device not in on:
            on[value.device] = host_to_device(torch.from_numpy(index), value.device)
        extra = value[on[value.device]] if torch.is_tensor(value) else value[index]
        if key in ("mask", "next_mask"):
            extra = torch.zeros_like(extra) if torch.is_tensor(extra) else np.zeros_like(extra)
        return torch.cat([value, extra]) if torch.is_tensor(value) else np.concatenate([value, extra])

    return {k: extend(k, v) for k, v in batch.items()}


def _has_batch_statistics(policy) -> bool:
    """Whether a layer of `policy` mixes the windows of a batch (batch norm), which padding would change."""
    return any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in policy.modules())


def _is_compiler_error(error: BaseException) -> bool:
    """Whether `error` comes from torch.compile's machinery (dynamo, inductor, a missing compiler or Triton)."""
    kinds = [type(error), *(type(e) for e in (error.__cause__, error.__context__) if e is not None)]
    return any(k.__module__.startswith(("torch._dynamo", "torch._inductor", "triton")) for k in kinds)


def _copy_weights(params: dict[str, torch.nn.Parameter], values: dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        for n, p in params.items():
            p.copy_(values[n])


def _rng_state(rng: np.random.Generator) -> dict:
    # PCG64's 128-bit integers are kept as decimal strings: safe for weights_only loading.
    s = rng.bit_generator.state
    return {
        "bit_generator": s["bit_generator"],
        "state": str(s["state"]["state"]),
        "inc": str(s["state"]["inc"]),
        "has_uint32": int(s["has_uint32"]),
        "uinteger": int(s["uinteger"]),
    }


def _rng_from_state(d: dict) -> dict:
    return {
        "bit_generator": d["bit_generator"],
        "state": {"state": int(d["state"]), "inc": int(d["inc"])},
        "has_uint32": d["has_uint32"],
        "uinteger": d["uinteger"],
    }
