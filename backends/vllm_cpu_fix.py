"""A vLLM general plugin that corrects the CPU build's `expand_kernel` override (vLLM 0.32), on CPU engines only.

vLLM's CPU platform replaces Triton kernels it cannot run with C++ ones (`CpuPlatform.register_triton_kernel_overrides`,
called in every worker). Its `expand_kernel` replacement converts its output tensor to int64 before the C++ call
(`vllm/utils/cpu_triton_utils.py`, `_expand_kernel_impl`): for a float output that conversion is a copy, the kernel
fills the copy, and the real output keeps whatever memory it was allocated with. The rejection sampler expands each
request's temperature to its draft positions with it (`apply_sampling_constraints`), so under speculation every
batch with a sampled request divided its target logits by uninitialised memory: sampled requests wrote garbage, and
greedy requests sharing their batch too (their argmax is taken from the same divided logits). Found on the knee
testbed (docs/testbeds.md); `tests/backends/test_drafter_vllm.py` checks the greedy answer is unchanged beside a
sampled request, and that sampled answers at a low temperature read like the greedy ones.

Installed through the `vllm.general_plugins` entry point, which vLLM loads in each worker before the platform's
overrides: the platform method is wrapped so that this correct implementation is registered right after them.
Nothing happens on other platforms, with Triton's own CPU backend (no override then), or on other vLLM releases.
"""

from __future__ import annotations

from typing import Any

__all__ = ["expand_kernel", "install"]

_KERNEL = "vllm.v1.sample.rejection_sampler.expand_kernel"
# The release whose override is wrong (and was checked here); later ones are left alone until checked.
_BROKEN = "0.32."


def expand_kernel(
    output: Any, input_val: Any, cu_num_tokens: Any, replace_from: Any, replace_to: Any, MAX_NUM_TOKENS: Any = None
) -> None:
    """The Triton `expand_kernel`: output[t] = input_val[request of t] (replace_from read as replace_to), written into
    `output` whatever its dtype. Arguments in the kernel's order (vLLM forwards them positionally)."""
    import torch

    cu = cu_num_tokens.to(torch.int64)
    counts = torch.diff(cu, prepend=cu.new_zeros(1))
    values = torch.where(input_val == replace_from, torch.full_like(input_val, replace_to), input_val)
    output.copy_(torch.repeat_interleave(values, counts, output_size=output.shape[0]).to(output.dtype))


def install() -> None:
    """The plugin's entry point: wrap the CPU platform's kernel overrides so that ours follows them."""
    import vllm
    from vllm.platforms import current_platform

    if not current_platform.is_cpu() or not vllm.__version__.startswith(_BROKEN):
        return
    platform = type(current_platform)
    original = platform.register_triton_kernel_overrides
    if getattr(original, "_specgate_fixed", False):
        return  # loaded twice in one process

    def register_triton_kernel_overrides(cls: Any) -> None:
        original()
        from vllm.triton_utils.dispatcher import _registry, register_kernels

        if _KERNEL in _registry:  # the platform put its override in (no Triton CPU backend): correct it
            register_kernels({_KERNEL: expand_kernel})

    register_triton_kernel_overrides._specgate_fixed = True  # type: ignore[attr-defined]
    platform.register_triton_kernel_overrides = classmethod(register_triton_kernel_overrides)  # type: ignore[method-assign,assignment]
