#!/usr/bin/env bash
# Times the oracle's fast conv2d and PyTorch's (float64) on ResNet-18's 3×3 64→64 56² layer
# (N=1, padding 1, stride 1), both on 2 threads, in one run, and prints both medians.
#
#   scripts/conv-vs-torch.sh [RUNS]
#
# PyTorch comes from a private virtual environment outside the repository: $TORCH_PYTHON, or
# /work/venv-torch/bin/python (create one with `python3 -m venv DIR && DIR/bin/pip install torch`).
# Without it the script prints only the oracle's figure and says why.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs="${1:-50}"
python="${TORCH_PYTHON:-/work/venv-torch/bin/python}"
threads=2

cargo build --release -q -p pimdiff-oracle --example conv_time --manifest-path "$root/Cargo.toml"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
RAYON_NUM_THREADS=$threads "${CARGO_TARGET_DIR:-$root/target}/release/examples/conv_time" "$runs"

if ! "$python" -c "import torch" 2>/dev/null; then
    echo "pytorch: not available at $python (set TORCH_PYTHON)"
    exit 0
fi
"$python" - "$runs" "$threads" <<'PY'
import sys, time
import torch
runs, threads = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(threads)
g = torch.Generator().manual_seed(18)
x = torch.randint(-128, 128, (1, 64, 56, 56), generator=g).double()
w = torch.randint(-128, 128, (64, 64, 3, 3), generator=g).double()
b = torch.randint(-4096, 4097, (64,), generator=g).double()
times = []
with torch.no_grad():
    for i in range(runs + 3):
        t = time.perf_counter()
        torch.nn.functional.conv2d(x, w, b, stride=1, padding=1)
        times.append((time.perf_counter() - t) * 1e3)
times = sorted(times[3:])
print(f"pytorch {torch.__version__} conv2d (float64, {torch.get_num_threads()} threads): "
      f"median {times[len(times) // 2]:.2f} ms, min {times[0]:.2f} ms over {len(times)} runs")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
