"""The `specgate` command.

specgate serve --config FILE              run the gateway from a config file (SIGHUP reloads it; --watch-config)
specgate serve --pool MODEL=URL[,URL...]  run it without a file (repeat --pool per model)
specgate check-config FILE                validate a config; print every error with its field path
specgate engine up [...]                  start a local CPU vLLM with the tiny model, wait until healthy
specgate demo                             local engine + gateway on 127.0.0.1:8000, with examples
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from typing import Any

from specgate.gateway.serve_options import config_from_args, uvicorn_options

# The simulator's step-time profiles (offline/simulator.py's STEP_PROFILES), named here so that building the parser
# does not import the simulator into the server's process; tests/offline/test_simulator.py keeps the two in step.
ENGINE_PROFILES = ("gpu", "cpu", "knee", "knee-counters", "h100-llama8b-eagle")

__all__ = ["main"]


def _build_config(args: argparse.Namespace) -> Any:
    from specgate.config import ConfigError

    try:
        config = config_from_args(args)
    except ConfigError as exc:
        print("invalid configuration:", file=sys.stderr)
        for line in exc.problems:
            print(f"  {line}", file=sys.stderr)
        raise SystemExit(2) from None
    if not config.pools:
        print("no pools configured: pass --config FILE or --pool MODEL=URL", file=sys.stderr)
        raise SystemExit(2)
    return config


def _serve(config: Any, reload_from: Any = None, watch: Path | None = None) -> None:
    import uvicorn
    from specgate.gateway.app import create_app
    from specgate.runtime.classifier_files import ClassifierLoadError
    from specgate.runtime.logs import setup_logging

    setup_logging(config.logging.level)
    try:
        app = create_app(config, reload_from=reload_from, watch=watch)
    except ClassifierLoadError as exc:
        print(f"cannot start: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    uvicorn.run(app, **uvicorn_options(config))


def cmd_serve(args: argparse.Namespace) -> int:
    from specgate.gateway.workers import refusal, serve_workers

    config = _build_config(args)
    if args.watch_config and not args.config:
        print("--watch-config needs --config FILE", file=sys.stderr)
        return 2
    refused = refusal(config, args.workers)
    if refused is not None:
        print(refused, file=sys.stderr)
        return 2
    if args.workers > 1:
        serve_workers(args, config, args.workers)
        return 0
    if not args.config:
        _serve(config)
        return 0
    # SIGHUP, POST /admin/config/reload and --watch-config read the file (and these flags) again.
    _serve(config, reload_from=lambda: config_from_args(args), watch=Path(args.config) if args.watch_config else None)
    return 0


def _admin_get(gateway: str, path: str) -> Any:
    """GET an admin call of a running gateway (admin key from SPECGATE_ADMIN_KEY); its JSON, or None after saying
    why on stderr."""
    import os

    import httpx

    key = os.environ.get("SPECGATE_ADMIN_KEY")
    headers = {"authorization": f"Bearer {key}"} if key else {}
    try:
        r = httpx.get(f"{gateway.rstrip('/')}{path}", headers=headers, timeout=10)
    except httpx.HTTPError as exc:
        print(f"cannot reach the gateway: {exc}", file=sys.stderr)
        return None
    if r.status_code != 200:
        print(f"gateway answered {r.status_code}: {r.text}", file=sys.stderr)
        return None
    return r.json()


def cmd_schedules(args: argparse.Namespace) -> int:
    import json

    body = _admin_get(args.gateway, f"/admin/pools/{args.pool}/schedules")
    if body is None:
        return 2
    print(f"# k by batch size per route (what the scheduler plugin applies per step), pool {body['pool']}:")
    for route, schedule in body["routes"].items():
        print(f"#   {route}: {schedule}")
    print("# For an engine without the plugin, in its --speculative-config:")
    print(json.dumps({"num_speculative_tokens_per_batch_size": body["num_speculative_tokens_per_batch_size"]}))
    return 0


def cmd_routes_check(args: argparse.Namespace) -> int:
    body = _admin_get(args.gateway, "/admin/routes/check")
    if body is None:
        return 2
    print(f"{'route':<20} {'requests':>9} {'acceptance':>11} {'spread':>7}")
    for name, row in sorted(body["routes"].items()):
        mean = "-" if row["mean_acceptance"] is None else f"{row['mean_acceptance']:.3f}"
        spread = "-" if row["spread"] is None else f"{row['spread']:.3f}"
        print(f"{name:<20} {row['requests']:>9.0f} {mean:>11} {spread:>7}")
    for advice in body["advice"]:
        print(f"{advice['kind']}: {', '.join(advice['routes'])}: {advice['reason']}")
    if not body["advice"]:
        print("no advice: each route's requests accept alike, and no two routes on a pool behave the same")
    # Exit 1 when there is advice, so that a cron job or CI step can act on it.
    return 1 if body["advice"] else 0


def cmd_hash_key(args: argparse.Namespace) -> int:
    from specgate.gateway.auth import hash_key

    key = sys.stdin.readline().strip() if args.key in (None, "-") else args.key
    if not key:
        print("no key given: pass it as an argument or on stdin", file=sys.stderr)
        return 2
    print(hash_key(key))
    return 0


def cmd_check_config(args: argparse.Namespace) -> int:
    from specgate.config import ConfigError, load_config

    try:
        config = load_config(args.file)
    except ConfigError as exc:
        print(f"{args.file}: {len(exc.problems)} error(s)")
        for line in exc.problems:
            print(f"  {line}")
        return 1
    from specgate.runtime.classifier_files import ClassifierLoadError
    from specgate.runtime.classify import load_classifier

    try:
        load_classifier(config.classifier, config.routing.class_labels())
    except ClassifierLoadError as exc:
        print(f"{args.file}: 1 error(s)")
        print(f"  classifier: {exc}")
        return 1
    print(f"{args.file}: ok ({len(config.pools)} pool(s), models: {', '.join(config.models()) or 'none'})")
    return 0


def _engine_spec(args: argparse.Namespace) -> Any:
    from specgate.backends.launcher import DEFAULT_MODEL_DIR, EngineSpec, parse_k_per_batch_size
    from specgate.backends.testbed import DRAFTER_DIR, TINY_MODEL_DIR, ensure_eagle3_checkpoint, ensure_knee_model

    draft_dir = None
    speculation, max_k = args.speculation, args.max_k
    if args.testbed == "eagle3":
        # The checkpoint names its verifier and its k (3): vLLM serves the tiny model with the EAGLE-3 head.
        model_dir = Path(args.model) if args.model else ensure_eagle3_checkpoint()
        speculation, max_k = "speculators", 3
    elif args.model is not None:
        model_dir = Path(args.model)
    elif args.testbed == "knee":
        model_dir = ensure_knee_model()  # generated on first use (seconds), kept under models/
    else:
        model_dir = DEFAULT_MODEL_DIR
    if speculation == "draft_model":
        # trained: distilled from the tiny model on another mix (acceptance differs by prompt, as real drafters');
        # exact: the target's own function (for the knee model the tiny model, at a fraction of the cost).
        if args.drafter == "trained":
            draft_dir = DRAFTER_DIR
        elif args.testbed == "knee" and args.model is None:
            draft_dir = TINY_MODEL_DIR
    return EngineSpec(
        model_dir=model_dir,
        draft_model_dir=draft_dir,
        k_per_batch_size=parse_k_per_batch_size(args.k_per_batch_size) if args.k_per_batch_size else None,
        served_name=args.served_name or f"specgate-{args.testbed}",
        host=args.host,
        port=args.port,
        speculation=speculation,
        max_k=max_k,
        plugin=not args.no_plugin,
        otlp_traces_endpoint=args.otlp_traces_endpoint,
    )


def _wait_forever(stop: Any) -> None:
    def handler(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        stop()


def cmd_engine_up(args: argparse.Namespace) -> int:
    from specgate.backends.launcher import EngineProcess, EngineStartError, engine_command

    try:
        spec = _engine_spec(args)
    except ValueError as exc:
        print(f"specgate engine up: {exc}", file=sys.stderr)
        return 2
    engine = EngineProcess(spec, Path(args.log) if args.log else None)
    print("starting:", " ".join(engine_command(spec)), file=sys.stderr)
    try:
        engine.start()
        engine.wait_healthy(args.timeout)
    except EngineStartError as exc:
        engine.stop()
        print(f"engine failed to start: {exc}", file=sys.stderr)
        return 1
    print(f"engine ready at {spec.url} (model '{spec.served_name}'); Ctrl-C stops it", file=sys.stderr)
    _wait_forever(engine.stop)
    return 0


_DEMO_HELP = """
specgate is up on http://{host}:{port} in front of a local CPU vLLM ({engine}).

  curl -s http://{host}:{port}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{{"model": "{model}", "messages": [{{"role": "user", "content": "def fib(n):"}}], "max_tokens": 48}}'

  python -c "from openai import OpenAI; c = OpenAI(base_url='http://{host}:{port}/v1', api_key='none'); \\
print(c.completions.create(model='{model}', prompt='import os\\nimport', max_tokens=32).choices[0].text)"

Ctrl-C stops the gateway and the engine.
"""


def cmd_demo(args: argparse.Namespace) -> int:
    from specgate.backends.launcher import EngineProcess, EngineSpec, EngineStartError

    from specgate.config import validate_config

    spec = EngineSpec(port=args.engine_port)
    log_path = Path(args.engine_log)
    engine = EngineProcess(spec, log_path)
    print(f"starting the local vLLM engine (log: {log_path}) ...", file=sys.stderr)
    try:
        engine.start()
        engine.wait_healthy(300)
    except EngineStartError as exc:
        engine.stop()
        print(f"engine failed to start: {exc}", file=sys.stderr)
        return 1
    config = validate_config(
        {
            "server": {"host": args.host, "port": args.port},
            "pools": [
                {
                    "name": "local-cpu",
                    "model": spec.served_name,
                    "endpoints": [spec.url],
                    "speculation": {"method": "ngram", "max_k": spec.max_k, "per_request_k": True},
                }
            ],
        }
    )
    print(
        _DEMO_HELP.format(host=args.host, port=args.port, engine=spec.url, model=spec.served_name),
        file=sys.stderr,
    )
    try:
        _serve(config)
    finally:
        engine.stop()
    return 0


def _ngram_sizes(value: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(part) for part in value.split(",")}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of n-gram sizes: {value!r}") from None
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("n-gram sizes must be 1 or more")
    return sizes


def cmd_classifier_train(args: argparse.Namespace) -> int:
    import time

    from specgate.controllers.classifier import DEFAULT_LABELS, confusion, train
    from specgate.runtime.classifier_files import load_labelled, save_model

    texts, labels = load_labelled(args.data)
    label_set = DEFAULT_LABELS if set(labels) <= set(DEFAULT_LABELS) else sorted(set(labels))
    started = time.monotonic()
    try:
        model = train(
            texts,
            labels,
            label_set=label_set,
            dim=1 << args.dim_bits,
            epochs=args.epochs,
            seed=args.seed,
            average_seeds=args.average_seeds,
            ask_chars=args.ask_chars,
            cue_repeat=args.cue_repeat,
            ngrams=args.ngrams,
            head_chars=args.head_chars,
            tail_chars=args.tail_chars,
        )
    except ValueError as exc:
        print(f"specgate classifier train: {exc}", file=sys.stderr)
        return 2
    _, accuracy = confusion(model, texts, labels)
    save_model(model, args.out)
    print(
        f"trained on {len(texts)} examples in {time.monotonic() - started:.1f}s; "
        f"training accuracy {accuracy:.4f}; wrote {args.out}"
    )
    return 0


def cmd_classifier_eval(args: argparse.Namespace) -> int:
    from specgate.controllers.classifier import confusion
    from specgate.runtime.classifier_files import ClassifierLoadError, load_labelled, load_model

    try:
        model = load_model(args.model)
    except ClassifierLoadError as exc:
        print(exc, file=sys.stderr)
        return 1
    texts, labels = load_labelled(args.data)
    unknown = sorted(set(labels) - set(model.labels))
    if unknown:
        print(f"labels not known to the model: {', '.join(unknown)}", file=sys.stderr)
        return 1
    matrix, accuracy = confusion(model, texts, labels)
    width = max(len(x) for x in model.labels) + 2
    print("true \\ predicted".ljust(width) + "".join(x[:9].rjust(10) for x in model.labels))
    for name, row in zip(model.labels, matrix, strict=True):
        print(name.ljust(width) + "".join(str(int(v)).rjust(10) for v in row))
    print(f"examples: {len(texts)}")
    print(f"accuracy: {accuracy:.4f}")
    return 0


def cmd_sim(args: argparse.Namespace) -> int:
    import json

    import yaml
    from specgate.offline.progress import Progress
    from specgate.offline.simulator import all_policies, make_policy, run, scenario_from_dict

    rows = []
    traces: dict[str, list] = {}
    timelines: dict[str, dict[str, list]] = {}
    files = sorted(Path(args.scenarios).glob("*.yaml")) if Path(args.scenarios).is_dir() else [Path(args.scenarios)]
    scenarios = [scenario_from_dict(yaml.safe_load(path.read_text())) for path in files]
    plan = [(scenario, name) for scenario in scenarios for name in (args.policy or list(all_policies(scenario)))]
    progress = Progress(len(plan), "sim")
    for scenario, name in plan:
        result = run(scenario, make_policy(name, scenario))
        row = result.summary()
        rows.append(row)
        traces[f"{scenario.name}/{name}"] = result.k_trace
        timelines.setdefault(scenario.name, {})[name] = result.timeline
        progress.advance(f"{scenario.name}/{name}: {row['goodput_tok_per_busy_s']} tok/busy-s")
    _add_ratios(rows)
    _print_table(rows)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "sim-results.json").write_text(json.dumps(rows, indent=1) + "\n")
        (out / "sim-k-traces.json").write_text(json.dumps(traces) + "\n")
        print(f"wrote {out / 'sim-results.json'} and {out / 'sim-k-traces.json'}", file=sys.stderr)
        _sim_plots(rows, traces, timelines, out / "plots")
    return 0


_REDIS_SCHEMES = ("redis://", "rediss://", "redis+sentinel://", "unix://")


def cmd_advise(args: argparse.Namespace) -> int:
    import json

    from redis.exceptions import RedisError
    from specgate.backends.record_stream import read_all
    from specgate.offline.advisor import advise, load_records, parse_records, render
    from specgate.offline.plots import PlotsUnavailable, plot_advice

    from specgate.config import redact_url

    streams = [src for src in args.records if src.startswith(_REDIS_SCHEMES)]
    paths = [Path(p) for p in args.records if p not in streams]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"no such record file: {', '.join(missing)}", file=sys.stderr)
        return 2
    records, skipped = load_records(paths)
    for url in streams:
        try:
            lines = read_all(url, args.stream)
        except (RedisError, OSError, ValueError) as exc:
            print(f"cannot read the record stream {args.stream} at {redact_url(url)}: {exc}", file=sys.stderr)
            return 2
        more, bad = parse_records(lines)
        records, skipped = sorted([*records, *more], key=lambda r: r["t"]), skipped + bad
    if skipped:
        print(f"skipped {skipped} lines that are not records", file=sys.stderr)
    try:
        report = advise(records, args.engine_profile, args.max_k, args.seeds, args.arrivals)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(render(report))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "advice.json").write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {out / 'advice.json'}", file=sys.stderr)
        try:
            print(f"wrote {plot_advice(report, out / 'advice.png')}", file=sys.stderr)
        except PlotsUnavailable as exc:
            print(str(exc), file=sys.stderr)
    return 0


def _sim_plots(rows: list[dict], traces: dict[str, list], timelines: dict[str, dict[str, list]], out: Path) -> None:
    from specgate.offline.plots import PlotsUnavailable, plot_sim_scenario

    for scenario, per_policy in timelines.items():
        mine = {r["policy"]: r for r in rows if r["scenario"] == scenario}
        statics = [r for name, r in mine.items() if name.startswith("static-k")]
        best_static = max(statics, key=lambda r: r["goodput_tok_per_busy_s"])["policy"] if statics else None
        shown = [p for p in ("specgate", "oracle", best_static) if p and p in per_policy]
        scenario_traces = {p: traces[f"{scenario}/{p}"] for p in per_policy}
        try:
            path = plot_sim_scenario(
                scenario, scenario_traces, per_policy, out / f"sim-{scenario}.png", tpot_policies=shown
            )
        except PlotsUnavailable as exc:
            print(f"no plots: {exc}", file=sys.stderr)
            return
        print(f"wrote {path}", file=sys.stderr)


def _add_ratios(rows: list[dict]) -> None:
    by_scenario: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_scenario.setdefault(row["scenario"], {})[row["policy"]] = row
    for policies in by_scenario.values():
        oracle = policies.get("oracle")
        k0 = policies.get("static-k0")
        statics = [r for name, r in policies.items() if name.startswith("static-k")]
        best_static = max(statics, key=lambda r: r["goodput_tok_per_busy_s"]) if statics else None
        for row in policies.values():
            g = row["goodput_tok_per_busy_s"]
            row["vs_oracle"] = round(g / oracle["goodput_tok_per_busy_s"], 3) if oracle else None
            row["vs_best_static"] = round(g / best_static["goodput_tok_per_busy_s"], 3) if best_static else None
            row["vs_k0"] = round(g / k0["goodput_tok_per_busy_s"], 3) if k0 else None
            row["best_static"] = best_static["policy"] if best_static else None


def _print_table(rows: list[dict]) -> None:
    cols = [
        "scenario",
        "policy",
        "goodput_tok_per_busy_s",
        "vs_oracle",
        "vs_best_static",
        "vs_k0",
        "mean_tpot_ms",
        "p50_tpot_ms",
        "p99_tpot_ms",
        "slo_attainment",
        "switches",
    ]
    heads = [
        "scenario",
        "policy",
        "goodput",
        "/oracle",
        "/best-static",
        "/k0",
        "TPOT mean",
        "p50",
        "p99",
        "SLO",
        "switches",
    ]
    print("| " + " | ".join(heads) + " |")
    print("|" + "---|" * len(heads))
    for row in rows:
        print("| " + " | ".join("" if row.get(c) is None else str(row.get(c)) for c in cols) + " |")


def cmd_bench(args: argparse.Namespace) -> int:
    from specgate.offline.loadgen import PHASES, Phase, check_policies, parse_phases, run_bench
    from specgate.runtime.logs import setup_logging

    setup_logging("warning")
    policies = args.policy or ["static-k0", f"static-k{args.max_k}", "adaptive"]
    try:
        chosen = parse_phases(args.phases) if args.phases else PHASES
        check_policies(policies, args.max_k, args.draft_cost)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    phases = tuple(Phase(p.name, args.phase_seconds or p.seconds, p.concurrency, p.code_share) for p in chosen)
    report = run_bench(
        args.engine,
        args.model,
        args.max_k,
        Path(args.out) if args.out else None,
        phases,
        policies=policies,
        warm_up_s=args.warm_up_seconds,
        cost_prior=args.cost_prior,
        record=Path(args.record) if args.record else None,
        method=args.method,
        draft_cost=args.draft_cost,
    )
    print("| policy | " + " | ".join(p.name for p in phases) + " | whole run |")
    print("|---|" + "---|" * (len(phases) + 1))
    for policy, rows in report["policies"].items():
        cells = [f"{rows[p.name]['mean_tpot_ms']} ms ({rows[p.name]['requests']} req)" for p in phases]
        print(f"| {policy} | " + " | ".join(cells) + f" | {report['verdict']['overall_mean_tpot_ms'][policy]} ms |")
    verdict = report["verdict"]
    print("fastest per phase:", verdict["fastest_per_phase"])
    if "adaptive_over_best_static_tpot_per_phase" in verdict:
        compared = ", ".join(verdict["adaptive_compared_with"])
        print(f"adaptive / best of {compared} per phase:", verdict["adaptive_over_best_static_tpot_per_phase"])
    if args.out:
        from specgate.offline.plots import PlotsUnavailable, plot_bench

        try:
            print(f"wrote {plot_bench(report, Path(args.out).with_suffix('.png'))}", file=sys.stderr)
        except PlotsUnavailable as exc:
            print(f"no plots: {exc}", file=sys.stderr)
    return 0


def cmd_dashboards(args: argparse.Namespace) -> int:
    from specgate.dashboards.build import NotASourceCheckout, build_all, check

    if args.action == "build":
        try:
            written = build_all(Path(args.out) if args.out else None)
        except NotASourceCheckout as exc:
            print(f"dashboards build: {exc}", file=sys.stderr)
            return 2
        for path in written:
            print(f"wrote {path}")
        return 0
    problems = check()
    for line in problems:
        print(line)
    print("dashboards: ok" if not problems else f"dashboards: {len(problems)} problem(s)")
    return 1 if problems else 0


def _parser() -> argparse.ArgumentParser:
    from specgate.backends.launcher import DEFAULT_SERVED_NAME
    from specgate.backends.testbed import TESTBEDS

    parser = argparse.ArgumentParser(
        prog="specgate",
        description="OpenAI-compatible gateway with adaptive speculative-decoding control for vLLM pools.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gateway")
    serve.add_argument("--config", help="YAML config file")
    serve.add_argument(
        "--pool",
        action="append",
        metavar="MODEL=URL[,URL...]",
        help="serve MODEL from these vLLM base URLs (repeatable; replaces the file's pools)",
    )
    serve.add_argument("--host", help="listen address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (default 8000)")
    serve.add_argument(
        "--redis", metavar="URL", help="share state with other replicas: redis://, rediss://, redis+sentinel://"
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="gateway processes on the port (more cores); above 1 needs a Redis state store (docs/replicas.md)",
    )
    serve.add_argument(
        "--watch-config",
        action="store_true",
        help="reload the config when its file changes (SIGHUP and POST /admin/config/reload always work)",
    )
    serve.set_defaults(fn=cmd_serve)

    sch = sub.add_parser(
        "schedules",
        help="k by batch size that a running gateway's measurements imply for a pool (per route, and as vLLM's "
        "num_speculative_tokens_per_batch_size for engines without the plugin); admin key from SPECGATE_ADMIN_KEY",
    )
    sch.add_argument("--gateway", default="http://127.0.0.1:8000", help="the gateway's base URL")
    sch.add_argument("--pool", required=True)
    sch.set_defaults(fn=cmd_schedules)

    routes = sub.add_parser("routes", help="check a running gateway's routes")
    routes_sub = routes.add_subparsers(dest="routes_command", required=True)
    rcheck = routes_sub.add_parser(
        "check",
        help="per route the spread of per-request acceptance, and split / merge advice (exit 1 with advice); admin "
        "key from SPECGATE_ADMIN_KEY",
    )
    rcheck.add_argument("--gateway", default="http://127.0.0.1:8000", help="the gateway's base URL")
    rcheck.set_defaults(fn=cmd_routes_check)

    hk = sub.add_parser("hash-key", help="print the SHA-256 of an API key, for auth.api_keys or the Redis keys hash")
    hk.add_argument("key", nargs="?", help="the key; read from stdin when absent or '-' (keeps it out of history)")
    hk.set_defaults(fn=cmd_hash_key)

    check = sub.add_parser("check-config", help="validate a config file and print every error")
    check.add_argument("file")
    check.set_defaults(fn=cmd_check_config)

    engine = sub.add_parser("engine", help="local CPU vLLM engine for tests and the demo")
    engine_sub = engine.add_subparsers(dest="engine_command", required=True)
    up = engine_sub.add_parser("up", help="start a local CPU vLLM test engine, wait until healthy, run until Ctrl-C")
    up.add_argument(
        "--testbed",
        choices=sorted(TESTBEDS),
        default="tiny",
        help="; ".join(f"{t.name}: {t.description}" for t in TESTBEDS.values()) + " (default: tiny)",
    )
    up.add_argument("--model", help="model directory (default: the testbed's)")
    up.add_argument("--served-name", help="served model name (default: specgate-TESTBED)")
    up.add_argument("--host", default="127.0.0.1")
    up.add_argument("--port", type=int, default=8100)
    up.add_argument(
        "--speculation",
        choices=["ngram", "draft_model", "none"],
        default="ngram",
        help="draft_model: a small model drafts, see --drafter (default: ngram)",
    )
    up.add_argument(
        "--drafter",
        choices=["trained", "exact"],
        default="trained",
        help="with --speculation draft_model: trained (models/specgate-tiny-drafter, distilled from the tiny model "
        "on another mix: acceptance depends on the prompt) or exact (the target's own function: the target itself, "
        "or the tiny model for the knee model; accepts everything) (default: trained)",
    )
    up.add_argument("--max-k", type=int, default=4)
    up.add_argument(
        "--k-per-batch-size",
        metavar="TABLE",
        help="vLLM's own batch-size table (dynamic speculative decoding), e.g. 1-24:2,25-2048:0",
    )
    up.add_argument("--no-plugin", action="store_true", help="without specgate's per-request k scheduler plugin")
    up.add_argument(
        "--otlp-traces-endpoint", help="OTLP/HTTP traces URL: vLLM exports a span per request (continues traceparent)"
    )
    up.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for health")
    up.add_argument("--log", help="write the engine's output here")
    up.set_defaults(fn=cmd_engine_up)

    from specgate.runtime.classifier_files import BUNDLED_MODEL, HELD_OUT_DATA

    classifier = sub.add_parser("classifier", help="train or evaluate the route classifier")
    cls_sub = classifier.add_subparsers(dest="classifier_command", required=True)
    ctrain = cls_sub.add_parser("train", help="train on labelled JSONL ({label, messages|prompt} per line)")
    ctrain.add_argument("--data", required=True)
    ctrain.add_argument("--out", required=True, help="model file to write (.npz)")
    ctrain.add_argument("--dim-bits", type=int, default=16, help="hash buckets = 2**DIM_BITS")
    ctrain.add_argument("--epochs", type=int, default=6)
    ctrain.add_argument("--seed", type=int, default=0)
    ctrain.add_argument(
        "--average-seeds",
        type=int,
        default=3,
        help="train from this many seeds (SEED, SEED+1, ...) and average their weights (default 3: the bundled model)",
    )
    ctrain.add_argument(
        "--ask-chars", type=int, default=160, help="leading characters of the user turn hashed apart (0: one text)"
    )
    ctrain.add_argument("--cue-repeat", type=int, default=4, help="weight of each shape / task-word cue")
    ctrain.add_argument(
        "--ngrams", type=_ngram_sizes, default=(3, 4, 5), help="character n-gram sizes, comma-separated (default 3,4,5)"
    )
    ctrain.add_argument("--head-chars", type=int, default=512, help="leading characters of the user turn read")
    ctrain.add_argument("--tail-chars", type=int, default=256, help="trailing characters of the user turn read")
    ctrain.set_defaults(fn=cmd_classifier_train)
    ceval = cls_sub.add_parser("eval", help="confusion table and accuracy on labelled JSONL")
    ceval.add_argument("--data", default=str(HELD_OUT_DATA), help="default: the committed held-out set")
    ceval.add_argument("--model", default=str(BUNDLED_MODEL), help="default: the bundled model")
    ceval.set_defaults(fn=cmd_classifier_eval)

    sim = sub.add_parser("sim", help="simulate k policies on scenario files (a simulator, not an engine)")
    sim.add_argument("--scenarios", default="bench/scenarios", help="a scenario file or a folder of them")
    sim.add_argument("--policy", action="append", help="run only these (repeatable); default: all")
    sim.add_argument("--out", help="folder for sim-results.json and sim-k-traces.json")
    sim.set_defaults(fn=cmd_sim)

    adv = sub.add_parser(
        "advise",
        help="what speculation would do for recorded traffic (recording.enabled): per-route acceptance, TPOT per k "
        "and per policy in the simulator, a batch-size table for stock engines",
    )
    adv.add_argument(
        "--from",
        dest="records",
        nargs="+",
        required=True,
        help="record files (JSON lines) and / or Redis URLs holding the record stream (recording.sink: redis)",
    )
    adv.add_argument(
        "--stream", default="specgate:records", help="the stream's key in Redis: <state.namespace>:records"
    )
    adv.add_argument(
        "--engine-profile",
        default="gpu",
        choices=ENGINE_PROFILES,
        help=f"the simulator's step-time profile: {', '.join(ENGINE_PROFILES)}",
    )
    adv.add_argument("--max-k", type=int, default=None, help="default: the largest k in the record")
    adv.add_argument("--seeds", type=int, default=2, help="simulator seeds per acceptance level")
    adv.add_argument(
        "--arrivals",
        choices=["closed", "open"],
        default="closed",
        help="replay the record's requests in flight as users who send again when answered (closed, default), or "
        "its arrival rates (open)",
    )
    adv.add_argument("--out", help="folder for advice.json and advice.png")
    adv.set_defaults(fn=cmd_advise)

    bench = sub.add_parser("bench", help="phased load through a gateway on a real engine: adaptive vs static k")
    bench.add_argument("--engine", required=True, help="vLLM base URL (started with the scheduler plugin)")
    bench.add_argument("--model", default=DEFAULT_SERVED_NAME, help="the engine's served model name")
    bench.add_argument("--max-k", type=int, default=4)
    bench.add_argument(
        "--phases",
        help="the phases, NAME:SECONDS:CLIENTS:CODE_SHARE,... (default: low-concurrency-mixed:40:2:0.5,"
        "high-concurrency:40:24:0.5,shift-to-chat:40:8:0.1); e.g. a burst: low:40:2:0.5,burst:15:32:0.5,after:30:2:0.5",
    )
    bench.add_argument("--phase-seconds", type=float, help="override each phase's length")
    bench.add_argument(
        "--warm-up-seconds",
        type=float,
        default=20.0,
        help="load sent to the engine directly before the first policy, measured by none (default 20; 0: none)",
    )
    bench.add_argument(
        "--cost-prior",
        choices=["cpu", "knee", "gpu"],
        default="cpu",
        help="the gateways' step-time prior: cpu for the tiny testbed, knee for the knee testbed (default: cpu)",
    )
    bench.add_argument(
        "--method",
        choices=["ngram", "draft_model"],
        default="ngram",
        help="the engine's speculation method, declared by the gateways' pool: it sets what the controller charges "
        "for drafting (default: ngram)",
    )
    bench.add_argument(
        "--draft-cost",
        type=float,
        help="the drafting cost per position, as a fraction of the target's step, that the adaptive-draft-cost "
        "policy's pool declares (speculation.draft_cost; measured for the drafter, docs/testbeds.md)",
    )
    bench.add_argument("--out", help="JSON result file")
    bench.add_argument(
        "--record", help="write each policy's workload record to RECORD-POLICY.jsonl (for specgate advise)"
    )
    bench.add_argument(
        "--policy",
        action="append",
        help="'adaptive' (as shipped), 'adaptive-prior', 'adaptive-no-proposal-rate', 'adaptive-z0', "
        "'adaptive-step2' or 'adaptive-draft-cost' (variants; the last needs --draft-cost), or 'static-kN' "
        "(N up to --max-k), in the order to run, each through a fresh gateway (repeatable; any subset; default: "
        "static-k0, static-kMAX, adaptive)",
    )
    bench.set_defaults(fn=cmd_bench)

    dash = sub.add_parser("dashboards", help="build the Grafana dashboards, or check the committed ones")
    dash.add_argument(
        "action",
        choices=["build", "check"],
        help="build: write dashboards/json/ of the source checkout (developer command); "
        "check: compare the installed JSON with what the code builds",
    )
    dash.add_argument("--out", help="build: write the JSON into this folder instead of the source checkout")
    dash.set_defaults(fn=cmd_dashboards)

    demo = sub.add_parser("demo", help="local engine + gateway, with curl and openai examples")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=8000)
    demo.add_argument("--engine-port", type=int, default=8100)
    demo.add_argument("--engine-log", default="specgate-engine.log")
    demo.set_defaults(fn=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return int(args.fn(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
