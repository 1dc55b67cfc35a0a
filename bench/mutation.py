"""Mutation testing of controllers/ with mutmut: how many deliberately broken versions the tests catch.

mutmut 3 copies the code it mutates into `mutants/<path>` and names each mutant after the module path of its
file, so it needs files whose paths are their import names. This repository maps folders onto `specgate.*`
with setuptools package-dir (controllers/ is `specgate.controllers`), so the script first builds a private
copy laid out as the import namespace (`specgate/controllers/...`, `specgate/gateway/...`, tests/ as they are),
checks that `specgate.controllers` really imports from that copy, and runs mutmut there. The checkout is never
touched; only the copy is mutated. The tests run are those of tests/controllers that cover the mutated
function (mutmut records coverage per test first).

A benchmark, not part of `make test` or CI: on 2 shared cores policy + estimator + cost_model took ~10 minutes,
all of controllers/ ~15. Results, the command and what the survivors mean: docs/mutation.md.

    .venv/bin/pip install 'mutmut==3.8.1'    # or the `dev` extra
    .venv/bin/python bench/mutation.py                                   # policy, estimator, cost_model
    .venv/bin/python bench/mutation.py --modules all --json bench/results/mutation.json
    .venv/bin/python bench/mutation.py --report-only --workdir DIR       # summarise a finished run again
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The folders setuptools maps onto subpackages of `specgate` (pyproject.toml [tool.setuptools.package-dir]).
ROOMS = ("gateway", "runtime", "backends", "controllers", "dashboards", "offline")
DEFAULT_MODULES = ("policy", "estimator", "cost_model")
# Read by tests/controllers (Path(__file__).parents[2] / ...).
DATA_FILES = ("bench/results/cpu-step-profile.json",)
STATUS = {0: "survived", 1: "killed", 3: "killed", 5: "no tests", 33: "no tests", 34: "skipped", 36: "timeout"}
STATUS.update(dict.fromkeys((24, -24, 152, 255), "timeout"))
STATUS.update(dict.fromkeys((-9, -11), "segfault"))


def all_modules() -> list[str]:
    return sorted(p.stem for p in (ROOT / "controllers").glob("*.py") if p.stem != "__init__")


def build_tree(work: Path, modules: list[str]) -> None:
    """The private copy, laid out as the import namespace, with mutmut's and pytest's configuration."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "specgate", work / "specgate", ignore=ignore)
    for room in ROOMS:
        shutil.copytree(ROOT / room, work / "specgate" / room, ignore=ignore)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=ignore)
    for rel in DATA_FILES:
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, work / rel)
    pytest_cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    config = {
        "source_paths": ["specgate/controllers"],
        "only_mutate": [f"specgate/controllers/{m}.py" for m in modules],
        # the rest of the package and the data the tests read; tests/ is copied by mutmut itself
        "also_copy": ["specgate", "bench"],
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q"],
        "pytest_add_cli_args_test_selection": ["tests/controllers"],
    }
    lines = ["[tool.mutmut]"] + [f"{k} = {json.dumps(v)}" for k, v in config.items()]
    lines += ["", "[tool.pytest.ini_options]"] + [f"{k} = {json.dumps(v)}" for k, v in pytest_cfg.items()]
    (work / "pyproject.toml").write_text("\n".join(lines) + "\n")
    # The copy, not the checkout (an editable install of the checkout is on sys.meta_path), must be imported.
    probe = "import sys; sys.path.insert(0, '.'); import specgate.controllers.policy as m; print(m.__file__)"
    where = subprocess.run([sys.executable, "-c", probe], cwd=work, capture_output=True, text=True, check=True)
    if not Path(where.stdout.strip()).resolve().is_relative_to(work.resolve()):
        raise SystemExit(f"specgate.controllers imports from {where.stdout.strip()}, not from the copy in {work}")


def run_mutmut(work: Path, max_children: int) -> float:
    cmd = [sys.executable, "-c", "from mutmut.__main__ import cli; cli()", "run", "--max-children", str(max_children)]
    start = time.monotonic()
    # mutmut's progress line is long and redrawn in place; keep it in a log, print the summary afterwards.
    with open(work / "mutmut-run.log", "w") as log:
        proc = subprocess.run(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        tail = (work / "mutmut-run.log").read_text()[-3000:]
        raise SystemExit(f"mutmut run failed ({proc.returncode}); the end of {work / 'mutmut-run.log'}:\n{tail}")
    return time.monotonic() - start


def _def_lines(source: str) -> dict[str, int]:
    """mutmut's mangled function name (x_f, xǁClassǁmethod) -> line of its `def` in the original file."""
    out: dict[str, int] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[f"x_{node.name}"] = node.lineno
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    out[f"xǁ{node.name}ǁ{item.name}"] = item.lineno
    return out


def _diff(work: Path, name: str, path: Path) -> str:
    try:  # in-process: one `mutmut show` per mutant costs a second of start-up
        from mutmut.mutation.diff_apply import get_diff_for_mutant

        cwd = os.getcwd()
        os.chdir(work)
        try:
            return str(get_diff_for_mutant(name, path=path))
        finally:
            os.chdir(cwd)
    except ImportError:
        cmd = [sys.executable, "-c", "from mutmut.__main__ import cli; cli()", "show", name]
        return subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=False).stdout


def _locate(diff: str, def_line: int) -> tuple[int, str, str]:
    """(line in the original file, original line, mutated line) of a one-function diff."""
    old_no, first_old, first_new, line = 0, "", "", 0
    for row in diff.splitlines():
        m = re.match(r"@@ -(\d+)", row)
        if m:
            old_no = int(m.group(1))
            continue
        if row.startswith(("---", "+++")) or not old_no:
            continue
        if row.startswith("-"):
            if not first_old:
                first_old, line = row[1:].strip(), def_line + old_no - 1
            old_no += 1
        elif row.startswith("+"):
            first_new = first_new or row[1:].strip()
        else:
            old_no += 1
    return line, first_old, first_new


@dataclass
class ModuleResult:
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    timeout: int = 0
    other: dict[str, int] = field(default_factory=dict)  # no tests, not checked, suspicious, ...
    survivors: list[dict[str, object]] = field(default_factory=list)

    @property
    def surviving_rate(self) -> float:
        return self.survived / self.mutants if self.mutants else 0.0


def report(work: Path, modules: list[str]) -> dict[str, ModuleResult]:
    """Per module: counts by outcome, and every mutant not killed with its line and change."""
    out: dict[str, ModuleResult] = {}
    for module in modules:
        rel = Path("specgate/controllers") / f"{module}.py"
        meta = work / "mutants" / f"{rel}.meta"
        if not meta.exists():
            continue
        codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
        defs = _def_lines((work / rel).read_text())
        r = out[module] = ModuleResult()
        for name, code in sorted(codes.items(), key=lambda kv: _natural(kv[0])):
            status = "not checked" if code is None else STATUS.get(code, "suspicious")
            r.mutants += 1
            if status in ("killed", "survived", "timeout"):
                setattr(r, status, getattr(r, status) + 1)
            else:
                r.other[status] = r.other.get(status, 0) + 1
            if status != "killed":
                func = name.rpartition(".")[2].rpartition("__mutmut_")[0]
                line, old, new = _locate(_diff(work, name, rel), defs.get(func, 0))
                r.survivors.append({"mutant": name, "status": status, "line": line, "from": old, "to": new})
    return out


def _natural(name: str) -> tuple[str, int]:
    base, _, n = name.rpartition("__mutmut_")
    return base, int(n) if n.isdigit() else 0


def print_report(results: dict[str, ModuleResult]) -> None:
    row = "{:<14} {:>7} {:>7} {:>8} {:>7} {:>6} {:>9}"
    print(row.format("module", "mutants", "killed", "survived", "timeout", "other", "surviving"))
    total = ModuleResult()
    for module, r in results.items():
        print(row.format(module, r.mutants, r.killed, r.survived, r.timeout, sum(r.other.values()), _pct(r)))
        total.mutants += r.mutants
        total.killed += r.killed
        total.survived += r.survived
        total.timeout += r.timeout
        for k, v in r.other.items():
            total.other[k] = total.other.get(k, 0) + v
    if len(results) > 1:
        print(row.format("total", total.mutants, total.killed, total.survived, total.timeout, "", _pct(total)))
    if total.other:
        print("other: " + ", ".join(f"{v} {k}" for k, v in sorted(total.other.items())))
    for module, r in results.items():
        for s in r.survivors:
            where = f"controllers/{module}.py:{s['line']}"
            print(f"{s['status']:>11}  {where}  {s['from']}  ->  {s['to']}  [{s['mutant']}]")


def _pct(r: ModuleResult) -> str:
    return f"{100 * r.surviving_rate:.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--modules", nargs="+", default=list(DEFAULT_MODULES), help="controllers/ modules by name, or 'all'"
    )
    parser.add_argument("--workdir", type=Path, help="where the private copy goes (default: a new temporary dir)")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--report-only", action="store_true", help="summarise the finished run in --workdir")
    args = parser.parse_args()

    modules = all_modules() if args.modules == ["all"] else args.modules
    unknown = sorted(set(modules) - set(all_modules()))
    if unknown:
        parser.error(f"no such module in controllers/: {', '.join(unknown)}")
    elapsed = None
    if args.report_only:
        if not args.workdir:
            parser.error("--report-only needs --workdir")
        work = args.workdir
    else:
        if args.workdir and args.workdir.exists() and any(args.workdir.iterdir()):
            parser.error(f"{args.workdir} is not empty (mutmut would reuse old results)")
        work = args.workdir or Path(tempfile.mkdtemp(prefix="specgate-mutation-"))
        work.mkdir(parents=True, exist_ok=True)
        build_tree(work, modules)
        print(f"mutating {', '.join(modules)} in {work} ...", flush=True)
        elapsed = run_mutmut(work, args.max_children)
        print(f"done in {elapsed / 60:.1f} min", flush=True)
    results = report(work, modules)
    print_report(results)
    if args.json:
        modules_out = {m: {**asdict(r), "surviving_rate": round(r.surviving_rate, 4)} for m, r in results.items()}
        out = {"tool": f"mutmut {version('mutmut')}", "seconds": elapsed, "modules": modules_out}
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
