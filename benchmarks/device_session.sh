#!/usr/bin/env bash
# Issue 32's measurements on the GPU machine (one H100/H200, 16 cores), in two parts that each fit one device
# call; docs/gpu.md "Device sessions" says how to call them, what each answers and what run 7 took.
#
#   bash benchmarks/device_session.sh gpu   # ~5.5 min (314 s in run 7): the GPU sweep (grow/prune; CGM as a
#                                           #   variant; twin checks on hardware) against bartz at 1e5, 1e6, 1e7;
#                                           #   pm.sample with CGMStep(backend="cuda") at 1e6
#   bash benchmarks/device_session.sh cpu   # ~9.5 min: the sweep's row passes alone on 1-16 threads (1 min); the CPU
#                                           #   sweep on 1 and 16 threads at 1e6 and 1e7, then 2, 4, 8 at 1e6;
#                                           #   stochtree on the same threads (16 first)
#
# Run from the repository root with the wheels in .whl (pymc, pytensor, arviz and its parts, bartz, stochtree, tbb,
# tcmlib: carry .whl; the cpu part needs only stochtree, tbb and tcmlib); results go to $OUT (gpu.json, gpu.md and a
# log per part). They are installed into the machine's own environment, not with --target, so tbb's library lands
# where numba looks for it.
# QUICK=1 runs the same part with --quick on this machine (numba's CUDA simulator when no GPU), no install.
set -uo pipefail
part=${1:?"which part: gpu or cpu"}
out=${OUT:-./device-out}
mkdir -p "$out"
quick=()
if [ "${QUICK:-0}" = 1 ]; then
  quick=(--quick)
else
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl >"$out/pip-$part.log" 2>&1 \
    || { tail -20 "$out/pip-$part.log"; exit 1; }
fi
export PYTHONUNBUFFERED=1 NUMBA_NUM_THREADS=${NUMBA_NUM_THREADS:-16}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
py=${PYTHON:-python3}
"$py" -c "import numba, numpy; print('numba', numba.__version__, 'numpy', numpy.__version__)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
case $part in
  gpu)
    timeout 350 "$py" benchmarks/gpu.py "${quick[@]}" --out "$out/gpu" --sections gpu,bartz --limit gpu=200 \
      2>&1 | tee "$out/gpu.log"
    timeout 110 "$py" benchmarks/gpu.py "${quick[@]}" --out "$out/pm" --sections pmsample --pm-backends cgm-cuda \
      --limit pmsample=100 2>&1 | tee "$out/pm.log"
    ;;
  cpu)
    timeout 570 "$py" benchmarks/gpu.py "${quick[@]}" --out "$out/cpu" --sections rows,cpu,stochtree \
      --limit rows=60,cpu=300,stochtree=200 2>&1 | tee "$out/cpu.log"
    ;;
  *) echo "part must be gpu or cpu, got $part" >&2; exit 2 ;;
esac
