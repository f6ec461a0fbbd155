#!/usr/bin/env bash
# A GPU's figures in one go, each part's output in a file of its own so that a part cut short still shows
# what it printed:
#   machine.log       the GPU, torch and MuJoCo versions, the CPU count, whether MuJoCo can draw (the task
#                     part is skipped when it cannot: its rollouts would fail after minutes)
#   train_speed.log   ResNet-T training windows/s at batch 32, compiled with CUDA graphs and bf16, in
#                     PyTorch's default layout and channels-last, with the compiler's counters (graphs,
#                     recompilations, steps CUDA graphs skipped)
#   task_time.log     one paper-protocol libero_object task end to end (scripts/bench/task_time.py): demos,
#                     training, evaluation, setup, the first epoch and the later epochs' pace
#   gpu_use.csv       nvidia-smi's utilisation and memory every 10 s while the parts run
#   run/              the task's run files (success.json, resources.json, log.txt)
#   done              written last: each part's exit status
#
# A device command runs 10 minutes at most: the task part is stopped (SIGTERM: the run keeps its last epoch)
# DEADLINE seconds after the script began (default 560), leaving time to copy its files and write done. A task
# that is not over by then misses the 6-minute aim anyway; its log shows its pace so far.
#
# Usage: bash scripts/bench/gpu_figures.sh OUT_DIR [WORK_DIR]
#   WORK_DIR holds the demos and the run (default /tmp/gpu_figures); demos already there are reused.
#   CONFIG (default configs/paper.yaml) and SPEED_STEPS (default 30) may be set in the environment, and
#   TASK_OVERRIDES adds key=value overrides to the task's run (e.g. to try the script small on a CPU, with
#   CONFIG=configs/cpu.yaml). PARTS (default "speed task") chooses the parts.
set -u
start=$(date +%s)
deadline=${DEADLINE:-560}
parts=${PARTS-speed task}
out=${1:?usage: gpu_figures.sh OUT_DIR [WORK_DIR]}
work=${2:-/tmp/gpu_figures}
config=${CONFIG:-configs/paper.yaml}
steps=${SPEED_STEPS:-30}
mkdir -p "$out/run" "$work"
cd "$(dirname "$0")/../.." || exit 1
python=${PYTHON:-python3}
export PYTHONUNBUFFERED=1

{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
  "$python" -c "import torch, mujoco; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'mujoco', mujoco.__version__)"
  echo "cpus $(nproc)"
} > "$out/machine.log" 2>&1
# Rendering, checked in seconds: the task part's evaluations need it.
if "$python" -c "import libero_ll.envs.gl as g; g.ensure_gl_backend(); import mujoco; c = mujoco.GLContext(64, 64); c.make_current(); c.free(); print('gl ok')" >> "$out/machine.log" 2>&1; then
  gl=ok
else
  gl=failed
fi

smi=""
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -l 10 > "$out/gpu_use.csv" 2>&1 &
  smi=$!
fi

speed_rc=skipped
case " $parts " in *" speed "*) speed_rc=0 ;; esac
[ "$speed_rc" = 0 ] && for layout in false true; do
  echo "== encoder_channels_last=$layout" >> "$out/train_speed.log"
  "$python" scripts/bench/train_speed.py --config "$config" --policies resnet_t --steps "$steps" --batch 32 \
    --compile reduce-overhead --precision bf16 --cudnn-benchmark \
    "policy.cfg.encoder_channels_last=$layout" >> "$out/train_speed.log" 2>&1 || speed_rc=$?
done

task_rc=skipped
left=$(( deadline - ($(date +%s) - start) ))
case " $parts " in
  *" task "*)
    if [ "$gl" != ok ]; then
      task_rc="skipped (MuJoCo cannot draw here: machine.log)"
    elif [ "$left" -lt 60 ]; then
      task_rc="skipped (${left} s left before the deadline)"
    else
      # shellcheck disable=SC2086  # TASK_OVERRIDES is a list of words
      timeout --signal=TERM --kill-after=20 "$left" "$python" scripts/bench/task_time.py "$config" \
        suite=libero_object language_encoder=task_id "output_dir=$work/runs" "data.dir=$work/demos" \
        ${TASK_OVERRIDES:-} > "$out/task_time.log" 2>&1
      task_rc=$?
      [ "$task_rc" = 124 ] && task_rc="124 (stopped at the deadline, ${left} s after it began)"
    fi
    ;;
esac
run=$(ls -dt "$work"/runs/*/ 2>/dev/null | head -1)
if [ -n "$run" ]; then
  for f in success.json resources.json log.txt; do
    [ -f "$run$f" ] && cp "$run$f" "$out/run/"
  done
fi

[ -n "$smi" ] && kill "$smi" 2> /dev/null
echo "gl $gl; train_speed rc=$speed_rc; task_time rc=$task_rc; $(( $(date +%s) - start )) s" > "$out/done"
