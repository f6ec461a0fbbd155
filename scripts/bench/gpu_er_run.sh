#!/usr/bin/env bash
# The paper preset's experience-replay run on a suite (libero_object by default: the LIBERO paper's ER / ResNet-T
# row), a piece at a time, on a GPU lent for minutes at once: it starts the run, or goes on with the one an earlier
# call handed back, for STAGES more stages (default 1) or SECONDS, whichever ends first; at SECONDS it stops the run
# as SIGTERM does (the run keeps its last completed epoch); then it hands back what the next call needs to go on.
#
# Only a run stopped between stages can be carried to a fresh machine: its state is about 12.3 MiB at the paper
# preset's sizes, beside the 40 MiB of .gpu/ under the 64 MiB carry limit. Within a stage the state also holds
# the optimiser's moments, the weights' moving average, the stage's best weights and any evaluation still out
# (about 61 to 74 MiB): such a run goes on only on the same warm machine (WORK_DIR survives while it is held), and
# `done` says so. A device command runs 10 minutes at most: keep SECONDS at 480 or less, since the stop may take
# up to 60 s more, then the metrics and the pieces.
#
# Usage: bash scripts/bench/gpu_er_run.sh OUT_DIR SECONDS [RUN_TAR]
#   RUN_TAR  the run an earlier call handed back (its run.tar.* pieces joined: cat run.tar.* > run.tar), carried
#            to this machine. Without it, a run already under WORK_DIR goes on (the machine still warm), else a
#            new one starts. The demos are collected again on a fresh machine (the same ones: same seeds).
# Writes to OUT_DIR (at most 8 files, each under 16 MiB, so that all of them come back from a device machine):
#   run.tar.aa, run.tar.ab, ...  the run folder without checkpoints/ and tensorboard/, in 15 MiB pieces
#   train.log    what train printed
#   metrics.txt  `libero-ll metrics` of the run (an unfinished run's: the stages ended so far)
#   done         train's exit status (0: STAGES stages ended, or the run; 143: stopped at SECONDS), the run's
#                name, its state's size and whether it can be carried to a fresh machine
# Environment: WORK_DIR (default /tmp/er_run) holds the demos and the run; CONFIG (configs/paper.yaml),
# SUITE (libero_object) and OVERRIDES (more key=value words, e.g. to try the script small on a CPU) set the run;
# STAGES (default 1; 0: no limit) the stages a call may end; CARRY_MIB (default 18: 64 less .gpu/ and the
# project's files) the largest run that is said to be carriable.
set -u
out=${1:?usage: gpu_er_run.sh OUT_DIR SECONDS [RUN_TAR]}
seconds=${2:?usage: gpu_er_run.sh OUT_DIR SECONDS [RUN_TAR]}
carried=${3:-}
work=${WORK_DIR:-/tmp/er_run}
config=${CONFIG:-configs/paper.yaml}
suite=${SUITE:-libero_object}
python=${PYTHON:-python3}
stages=${STAGES:-1}
carry_mib=${CARRY_MIB:-18}
stage_limit=()
[ "$stages" != 0 ] && stage_limit=(--stages "$stages")
export PYTHONUNBUFFERED=1
if [ -n "$carried" ]; then
  carried=$(readlink -f "$carried") || exit 1
fi
mkdir -p "$out" "$work/runs"
out=$(readlink -f "$out")
cd "$(dirname "$0")/../.." || exit 1

if [ -n "$carried" ]; then
  name=$(tar -tf "$carried" | head -1 | cut -d/ -f1)
  if [ -z "$name" ]; then
    echo "$carried: not a run handed back by this script (an empty or unreadable tar)" | tee "$out/done"
    exit 1
  fi
  if [ ! -f "$work/runs/$name/resume.pt" ] || [ "$carried" -nt "$work/runs/$name/resume.pt" ]; then
    rm -rf "${work:?}/runs/$name"
    tar -C "$work/runs" -xf "$carried" || exit 1
  fi
fi
run=$(ls -dt "$work"/runs/*/ 2>/dev/null | head -1)
run=${run%/}
# shellcheck disable=SC2086  # OVERRIDES is a list of words
if [ -n "$run" ]; then
  echo "== continuing $run" > "$out/train.log"
  timeout --signal=TERM --kill-after=60 "$seconds" "$python" -m libero_ll.cli train --resume "$run" \
    "${stage_limit[@]}" >> "$out/train.log" 2>&1
else
  echo "== starting a new run under $work/runs" > "$out/train.log"
  timeout --signal=TERM --kill-after=60 "$seconds" "$python" -m libero_ll.cli train "$config" suite="$suite" \
    language_encoder=task_id learner.name=er "output_dir=$work/runs" "data.dir=$work/demos" ${OVERRIDES:-} \
    "${stage_limit[@]}" >> "$out/train.log" 2>&1
fi
rc=$?
[ "$rc" = 124 ] && rc=143  # timeout's own status when the command ended on the signal it was sent
run=$(ls -dt "$work"/runs/*/ 2>/dev/null | head -1)
run=${run%/}
if [ -n "$run" ]; then
  "$python" -m libero_ll.cli metrics "$run" > "$out/metrics.txt" 2>&1
  name=$(basename "$run")
  tar -C "$work/runs" -cf "$work/run.tar" --exclude="$name/checkpoints" --exclude="$name/tensorboard" \
    --exclude="$name/.run.lock" "$name" && split -b 15M "$work/run.tar" "$out/run.tar."
  mib=$(( ($(stat -c %s "$work/run.tar" 2>/dev/null || echo 0) + 1048575) / 1048576 ))
  rm -f "$work/run.tar"
  if [ -f "$run/final_policy.pt" ]; then
    carry="the run has ended (${mib} MiB with its final policy): nothing left to carry"
  elif [ "$mib" -le "$carry_mib" ]; then
    carry="state ${mib} MiB: can be carried to a fresh machine"
  else
    rm -f "$out"/run.tar.*  # pieces that could not be carried in would only crowd out the logs
    carry="state ${mib} MiB (stopped within a stage): too large to carry with .gpu/; it goes on only on this warm machine (call again without RUN_TAR)"
  fi
fi
echo "train rc=$rc run=${run:-none} ${carry:-}" > "$out/done"
