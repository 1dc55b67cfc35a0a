"""The scheduler plugin runs inside vLLM's engine processes, where specgate may be installed with `--no-deps`
(docs/vllm-plugin.md): importing it must pull in nothing beyond vLLM and the standard library. Checked two ways:
what the import really adds to `sys.modules` (in a fresh interpreter), and what the two files' source imports.
.ci/smoke_wheel.sh checks the same against an installed wheel."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

PLUGIN_MODULES = ("specgate.backends.vllm_scheduler", "specgate.backends.spec_cap", "specgate.controllers.k_schedule")
# The gateway's dependencies: none may arrive with the plugin (an engine's environment need not have them).
GATEWAY_ONLY = {
    "fastapi",
    "starlette",
    "redis",
    "uvloop",
    "pydantic",
    "httpx",
    "numpy",
    "prometheus_client",
    "orjson",
    "yaml",
}
# The schedule format is shared with the controller; `specgate.controllers.__init__` imports nothing.
SCHEDULE_FORMAT = "specgate.controllers.k_schedule"
ALLOWED_SPECGATE = {"specgate", "specgate.backends", "specgate.controllers", SCHEDULE_FORMAT, *PLUGIN_MODULES}

_PROBE = """
import json, sys
import vllm.v1.core.sched.scheduler
baseline = set(sys.modules)
import specgate.backends.vllm_scheduler
print(json.dumps(sorted(set(sys.modules) - baseline)))
"""


def _added_by_plugin(tmp_path: Path) -> list[str]:
    # A fresh interpreter, started outside the checkout so that only the installed package is importable.
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, cwd=tmp_path, timeout=240, check=False
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_plugin_import_adds_only_stdlib_vllm_and_itself(tmp_path: Path) -> None:
    added = _added_by_plugin(tmp_path)
    assert "specgate.backends.vllm_scheduler" in added
    tops = {name.partition(".")[0] for name in added}
    assert not tops & GATEWAY_ONLY, f"the plugin imported gateway dependencies: {sorted(tops & GATEWAY_ONLY)}"
    unexpected = [
        name
        for name in added
        if name not in ALLOWED_SPECGATE
        and name.partition(".")[0] not in sys.stdlib_module_names
        and name.partition(".")[0] not in {"vllm", "torch"}
    ]
    assert unexpected == [], f"the plugin import added modules that are neither stdlib, vLLM nor itself: {unexpected}"


def _imported_names(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against specgate.backends
                names.append("specgate.backends" + (f".{node.module}" if node.module else ""))
            else:
                names.append(node.module or "")
    return names


def test_plugin_source_imports_only_stdlib_vllm_and_its_own_modules() -> None:
    for module in PLUGIN_MODULES:
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None
        bad = [
            name
            for name in _imported_names(Path(spec.origin))
            if name not in {"specgate.backends.spec_cap", SCHEDULE_FORMAT}
            and name.partition(".")[0] not in sys.stdlib_module_names
            and name.partition(".")[0] != "vllm"
        ]
        assert bad == [], f"{module} imports {bad}: only the standard library, vllm, spec_cap and k_schedule"
