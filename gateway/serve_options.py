"""What `specgate serve` runs with, read from its command line: shared by the single process (gateway/cli.py) and
every worker (gateway/workers.py), which reads the same command line again."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["config_from_args", "uvicorn_options"]


def config_from_args(args: argparse.Namespace) -> Any:
    """The config file (if any) with the command line's overrides; raises ConfigError. Read again at each reload."""
    from specgate.config import load_config, parse_pool_flag, validate_config

    data = load_config(args.config).model_dump() if args.config else {}
    if args.pool:
        data["pools"] = [parse_pool_flag(flag, i) for i, flag in enumerate(args.pool)]
    data.setdefault("server", {})
    if args.host:
        data["server"]["host"] = args.host
    if args.port:
        data["server"]["port"] = args.port
    if args.redis:
        data["state"] = {**data.get("state", {}), "redis_url": args.redis}
    return validate_config(data)


def uvicorn_options(config: Any) -> dict[str, Any]:
    """How the gateway runs under uvicorn, one process or several (gateway/workers.py)."""
    return {
        "host": config.server.host,
        "port": config.server.port,
        "loop": "uvloop",
        "http": "httptools",
        "log_config": None,
        "access_log": False,
        # Nothing here reads the client address, and the middleware wraps every request.
        "proxy_headers": False,
        # SIGTERM: stop accepting, let in-flight requests and streams finish, then run the app's shutdown
        # (which flushes observations to the shared store and pending alerts).
        "timeout_graceful_shutdown": config.server.shutdown_grace_s,
    }
