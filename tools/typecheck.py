"""Type-check the `specgate` package with mypy: `make typecheck`, CI's "== types" step.

Why not plain `mypy -p specgate`: the package's subpackages live in folders of other names (`gateway/` is
`specgate.gateway`; [tool.setuptools.package-dir] in pyproject.toml), and the editable install reaches them through
an import hook (`__editable___specgate_*_finder.py`), not a path entry, which mypy does not run. So `mypy -p specgate`
checks only specgate/'s own leaves (and cannot find `specgate.gateway.cli`), and `mypy gateway/ runtime/ ...` checks
`gateway.app` instead of `specgate.gateway.app`: imports across rooms do not resolve and per-module settings miss.

This script gives mypy every module of the package under its real name and its real path (so errors point at the
files in the repository), read from the same setuptools mapping the wheel uses, then runs mypy as its command line
does, with the [tool.mypy] settings of pyproject.toml. Arguments go to mypy: `tools/typecheck.py --no-incremental`.
Exits 0 when clean, 1 on type errors, 2 on a blocking error (as mypy does).
"""

from __future__ import annotations

import os
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

from mypy import util
from mypy.fscache import FileSystemCache
from mypy.main import process_options, run_build
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parent.parent


def package_sources(root: Path) -> Iterator[BuildSource]:
    """Every module of the wheel's packages, named as `import` names it, with its path relative to `root`."""
    setup = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir: dict[str, str] = setup.get("package-dir", {})
    for package in setup["packages"]:
        # setuptools' rule: the longest mapped prefix, the rest of the dotted name as folders under it.
        prefix = max((p for p in package_dir if p in ("", package) or package.startswith(p + ".")), key=len, default="")
        folder = Path(package_dir.get(prefix, ""), *package[len(prefix) :].split(".")[1 if prefix else 0 :])
        files = sorted((root / folder).glob("*.py"))
        if not files:
            raise SystemExit(f"typecheck: no modules for package {package!r} in {folder}/")
        for file in files:
            module = package if file.name == "__init__.py" else f"{package}.{file.stem}"
            yield BuildSource(str(file.relative_to(root)), module, None)


def main(argv: list[str]) -> int:
    os.chdir(ROOT)  # [tool.mypy] is read from ./pyproject.toml; error paths are relative to the repository
    t0 = time.time()
    fscache = FileSystemCache()
    targets, options = process_options(argv, require_targets=False, fscache=fscache)
    if targets:
        raise SystemExit("typecheck: pass mypy options only; the modules to check come from pyproject.toml")
    sources = list(package_sources(ROOT))
    _, messages, blockers = run_build(sources, options, fscache, t0, sys.stdout, sys.stderr)
    n_errors, _, n_files = util.count_stats(messages)
    formatter = util.FancyFormatter(sys.stdout, sys.stderr, options.hide_error_codes)
    if n_errors:
        print(formatter.format_error(n_errors, n_files, len(sources), blockers=blockers, use_color=False))
        return 2 if blockers else 1
    print(formatter.format_success(len(sources), use_color=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
