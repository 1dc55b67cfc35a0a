"""Import a module as it was at an older git revision, under a name of its own: benchmarks time the old code beside
the new in one run (the machine's noise moves separate runs more than most changes)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def module_at(rev: str, path: str, name: str, rewrite: Mapping[str, str] | None = None) -> ModuleType:
    """The file `path` (relative to the repository) at `rev`, imported as module `name`; each key of `rewrite` in its
    source is replaced by its value first (to point its imports at other modules loaded this way)."""
    source = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    for old, new in (rewrite or {}).items():
        source = source.replace(old, new)
    file = Path(tempfile.mkdtemp()) / f"{name}.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module
