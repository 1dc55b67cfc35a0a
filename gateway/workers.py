"""`specgate serve --workers N`: N gateway processes on one port, for more than one core on a machine.

uvicorn's supervisor binds the port once and starts N worker processes that accept on it (and replaces one that
dies). Each worker is a full gateway and a replica like those on other machines: observations, decisions, admin
state, API keys, rate limits and the response cache are shared through the configured Redis store, and one
controller leader is elected among all processes of all replicas (runtime/coordination.py). With the in-memory
store each worker would run its own controller and its own limits, so N > 1 without Redis is refused.

Signals to the parent: SIGTERM / SIGINT stop every worker gracefully; SIGHUP is passed on to each worker, which
reloads its config in place (runtime/reload.py), instead of uvicorn's restart of the workers (which would drop
what each has learnt that is not in Redis). `/metrics` answers with every worker's series (runtime/worker_metrics.py).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["refusal", "serve_workers", "worker_app"]

_ARGS = "SPECGATE_SERVE_ARGS"
_DIR = "SPECGATE_WORKER_DIR"
_COUNT = "SPECGATE_WORKERS"


def refusal(config: Any, workers: int) -> str | None:
    """Why `workers` processes cannot serve `config`, or None."""
    if workers < 1:
        return f"--workers {workers}: must be at least 1"
    if workers > 1 and config.state.redis_url is None:
        return (
            f"--workers {workers} needs a shared state store: with the in-memory store each worker would run its own "
            "controller, rate limits and cache. Set state.redis_url (or --redis URL), or run one worker"
        )
    return None


def worker_app() -> Any:
    """uvicorn's app factory in each worker: the config from the same command line, read anew."""
    from specgate.gateway.app import create_app
    from specgate.gateway.serve_options import config_from_args
    from specgate.runtime.logs import setup_logging

    # Until the app installs its reload handler (and for good without a config file) SIGHUP would kill the worker.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    args = argparse.Namespace(**json.loads(os.environ[_ARGS]))
    config = config_from_args(args)
    setup_logging(config.logging.level)
    return create_app(
        config,
        reload_from=(lambda: config_from_args(args)) if args.config else None,
        watch=Path(args.config) if args.config and args.watch_config else None,
        worker_dir=Path(os.environ[_DIR]),
        workers=int(os.environ[_COUNT]),
    )


def serve_workers(args: argparse.Namespace, config: Any, workers: int) -> None:
    """Run the supervisor until SIGTERM / SIGINT; `args`: `specgate serve`'s, which each worker reads again."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    class Supervisor(Multiprocess):
        def handle_hup(self) -> None:
            if not args.config:
                return  # nothing to read again (uvicorn's own HUP would restart every worker at once)
            for process in self.processes:
                if process.pid is not None:
                    os.kill(process.pid, signal.SIGHUP)

    from specgate.gateway.serve_options import uvicorn_options
    from specgate.runtime.logs import setup_logging

    setup_logging(config.logging.level)
    with tempfile.TemporaryDirectory(prefix="specgate-workers-") as directory:
        os.environ[_ARGS] = json.dumps({k: v for k, v in vars(args).items() if k != "fn"})
        os.environ[_DIR] = directory
        os.environ[_COUNT] = str(workers)
        options = uvicorn_options(config)
        uv = uvicorn.Config("specgate.gateway.workers:worker_app", factory=True, workers=workers, **options)
        Supervisor(uv, sockets=[uv.bind_socket()]).run()
