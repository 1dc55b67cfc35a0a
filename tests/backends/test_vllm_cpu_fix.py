"""backends/vllm_cpu_fix.py: the corrected expand kernel, and the plugin installing it after the CPU platform's own
overrides (run in a subprocess: installing patches vLLM's platform class for the whole process)."""

from __future__ import annotations

import subprocess
import sys

import torch
from specgate.backends.vllm_cpu_fix import expand_kernel


def test_expand_writes_each_requests_value_over_its_tokens_whatever_the_dtype() -> None:
    cu = torch.tensor([2, 5, 6], dtype=torch.int32)
    floats = torch.full((6,), float("nan"))
    expand_kernel(floats, torch.tensor([0.0, 1.5, 0.05]), cu, 0, 1)
    assert floats.tolist() == [1.0, 1.0, 1.5, 1.5, 1.5, torch.tensor(0.05).item()]
    ints = torch.full((6,), -7, dtype=torch.int32)
    expand_kernel(ints, torch.tensor([3, 0, 9], dtype=torch.int32), cu, 0, 0)
    assert ints.tolist() == [3, 3, 0, 0, 0, 9] and ints.dtype == torch.int32


_CHECK = """
import warnings; warnings.filterwarnings("ignore")
import torch
from specgate.backends.vllm_cpu_fix import install
from vllm.platforms import current_platform
from vllm.v1.sample import rejection_sampler as rs
install()
install()  # loaded twice in a process: still one wrapper
current_platform.register_triton_kernel_overrides()
got = rs.expand_batch_to_tokens(torch.tensor([0.0, 1.5, 0.05]), torch.tensor([2, 4, 6]), 6, 0, 1)
print(got.tolist())
"""


def test_the_plugin_corrects_the_platforms_override_in_a_vllm_process() -> None:
    """Without the plugin the CPU platform's override leaves the expanded temperatures uninitialised (checked on vLLM
    0.32.0: [3.98, 4.6e-41, ...] for [1, 1, 1.5, 1.5, 0.05, 0.05])."""
    out = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True, timeout=300, check=True)
    values = [float(v) for v in out.stdout.strip().splitlines()[-1].strip("[]").split(",")]
    assert values == [1.0, 1.0, 1.5, 1.5, torch.tensor(0.05).item(), torch.tensor(0.05).item()]
