"""`specgate sim` writes its JSON, k traces and PNG plots; the progress bar reports every step."""

from __future__ import annotations

import io
import json
from pathlib import Path

from specgate.gateway.cli import main
from specgate.offline.plots import plot_bench
from specgate.offline.progress import Progress

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

SCENARIO = """
name: tiny-drift
duration_s: 40
arrivals: [[40, 4.0]]
routes:
  - {name: code, share: 0.6, alpha: [[0, 0.85], [15, 0.85], [20, 0.1]], mean_output: 60}
  - {name: chat, share: 0.4, alpha: 0.4, mean_output: 60}
"""


def test_sim_writes_results_traces_and_plots(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny-drift.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    args = ["sim", "--scenarios", str(scenario), "--out", str(out)]
    assert main([*args, "--policy", "specgate", "--policy", "oracle", "--policy", "static-k0"]) == 0
    rows = json.loads((out / "sim-results.json").read_text())
    assert {r["policy"] for r in rows} == {"specgate", "oracle", "static-k0"}
    traces = json.loads((out / "sim-k-traces.json").read_text())
    assert traces["tiny-drift/specgate"], "k trace per tick"
    png = (out / "plots" / "sim-tiny-drift.png").read_bytes()
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000


def test_bench_plot_from_a_report(tmp_path: Path) -> None:
    report = {
        "phases": [{"name": "a", "seconds": 10}, {"name": "b", "seconds": 10}],
        "timeline": {
            "static-k0": [[1.0, 8.0, 0, "code"], [12.0, 30.0, 0, "chat"]],
            "adaptive": [[1.5, 5.0, 4, "code"], [12.5, 25.0, 0, "chat"]],
        },
    }
    png = plot_bench(report, tmp_path / "bench.png").read_bytes()
    assert png.startswith(PNG_MAGIC)


def test_progress_lines_without_a_terminal() -> None:
    stream = io.StringIO()
    bar = Progress(4, "sim", stream=stream, width=8)
    for i in range(4):
        bar.advance(f"step {i}")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4
    assert lines[1].startswith("sim [####----] 2/4") and lines[1].endswith("step 1")
    assert lines[-1].startswith("sim [########] 4/4")


def test_progress_redraws_in_place_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    bar = Progress(2, stream=stream, width=4)
    bar.advance()
    assert "\n" not in stream.getvalue() and stream.getvalue().startswith("\r")
    bar.advance()
    assert stream.getvalue().endswith("\n") and "[####] 2/2" in stream.getvalue()
