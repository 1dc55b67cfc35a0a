"""Admin API (JSON): see and steer the loop.controller.

    GET    /admin/routes                      per route: k, acceptance, expected speed-up, pins, last decision
    GET    /admin/routes/check                per route: spread of per-request acceptance; split / merge advice
    GET    /admin/routes/{route}              one route, as in /admin/routes (the drift alert links here)
    PUT    /admin/routes/{name}/k   {"k": 3}  pin a route's k (within its bounds)
    DELETE /admin/routes/{name}/k             unpin
    GET    /admin/controller                  paused, kill switch, table version, ticks
    POST   /admin/controller/pause | resume
    POST   /admin/controller/kill-switch      {"enabled": true|false} (default true): k = 0 everywhere
    GET    /admin/decisions?limit=N           the decision log, newest last
    GET    /admin/pools                       per pool: config, what each endpoint was verified to do, mismatches
    GET    /admin/config                      the config in force (secrets masked) and the last reload's outcome
    POST   /admin/config/reload               re-read the config file and apply it (runtime/reload.py)

With `admin_key` set in the config every call needs `Authorization: Bearer <admin_key>` (else 403).
Each change takes effect at once (a tick runs immediately) and is logged. Handlers raise GatewayError; the
app's one handler for it (gateway/app.py) answers in the OpenAI error shape.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import orjson
from fastapi import APIRouter, Request
from pydantic import SecretStr
from specgate.controllers.decisions import DecisionTable, RouteDecision
from specgate.controllers.k_schedule import encode
from specgate.runtime.control_loop import ControlLoop
from specgate.runtime.coordination import Coordinator
from specgate.runtime.reload import ConfigReloader, ReloadOutcome
from starlette.responses import Response

from specgate.config import redacted
from specgate.errors import Forbidden, GatewayError, InvalidRequest, ModelNotFound

__all__ = ["admin_router"]

log = logging.getLogger("specgate.admin")
_JSON = "application/json"


class PoolNotFound(ModelNotFound):
    code = "pool_not_found"


class RouteNotFound(ModelNotFound):
    code = "route_not_found"


class ReloadUnavailable(GatewayError):
    status = 409
    type = "invalid_request_error"
    code = "reload_unavailable"


class ConfigRejected(GatewayError):
    """A reload refused: every error in the message (one per line) and in `errors`; the old config keeps serving."""

    status = 422
    type = "invalid_request_error"
    code = "config_rejected"

    def __init__(self, outcome: ReloadOutcome) -> None:
        super().__init__("config reload rejected; the running config stays:\n" + "\n".join(outcome.errors))
        self.outcome = outcome

    def body(self) -> bytes:
        data = orjson.loads(super().body())
        return orjson.dumps({**data, "reload": self.outcome.as_dict()})


def _ok(data: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type=_JSON)


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise InvalidRequest("body is not valid JSON") from None
    if not isinstance(data, dict):
        raise InvalidRequest("body must be a JSON object")
    return data


def _all_off(table: DecisionTable) -> MappingProxyType[str, RouteDecision]:
    return MappingProxyType(
        {name: RouteDecision(0, "kill switch (local, until the leader's table)") for name in table.routes}
    )


def admin_router(
    loop: ControlLoop,
    coordinator: Coordinator,
    admin_key: Callable[[], SecretStr | None],
    reloader: Callable[[], ConfigReloader | None] = lambda: None,
) -> APIRouter:
    """`admin_key` and `reloader` are read at each call, and the controller through `loop`: a reload replaces them."""
    router = APIRouter(prefix="/admin")

    def check(request: Request) -> None:
        key = admin_key()
        if key is None:
            return
        given = request.headers.get("authorization", "")
        token = given[7:] if given.lower().startswith("bearer ") else ""
        if not hmac.compare_digest(token.encode(), key.get_secret_value().encode()):
            raise Forbidden("this call needs the admin key")

    def route_or_404(name: str) -> None:
        if name not in loop.controller.route_names():
            raise RouteNotFound(f"no route named '{name}'", param="name")

    def follower() -> bool:
        return loop.follower

    def controller_status() -> dict[str, Any]:
        replica = coordinator.info
        return {
            "paused": loop.controller.paused,
            "kill_switch": loop.controller.kill_switch,
            "decision_table_version": loop.dispatcher.table.version,
            "ticks": loop.controller.ticks,
            "last_tick_unix": loop.last_tick_at,
            "enabled": loop.config.controller.enabled,
            "tick_s": loop.config.controller.tick_s,
            "replica_id": replica.replica_id,
            "role": replica.role,
            "leader": replica.leader,
            "lease_holder": replica.lease_holder,
            "state_store": replica.store,
            "state_store_up": replica.store_up,
        }

    async def share(field: str, value: str | None) -> bool:
        """Write an admin change to the shared store; then take effect here at once where this replica decides."""
        shared = await coordinator.write_admin(field, value)
        if not follower():
            loop.tick()
        return shared

    @router.get("/routes")
    async def routes(request: Request) -> Response:
        check(request)
        if follower():
            shared = await coordinator.shared_status()
            if shared is not None:
                return _ok({"version": shared["version"], "routes": shared["routes"], "served_by": "leader-state"})
        return _ok(
            {
                "version": loop.dispatcher.table.version,
                "routes": {name: loop.controller.route_status(name) for name in loop.controller.route_names()},
            }
        )

    @router.get("/routes/check")
    async def check_routes(request: Request) -> Response:
        """Do the routes group requests of similar acceptance? Per route the mean and spread of per-request
        first-draft acceptance over recent requests, and split / merge advice (controllers/route_check.py)."""
        check(request)
        if follower():
            shared = await coordinator.shared_status()
            if shared is not None and "route_check" in shared:
                return _ok({**shared["route_check"], "served_by": "leader-state"})
        return _ok(loop.route_check())

    @router.get("/routes/{name}")
    async def route(name: str, request: Request) -> Response:
        """One route: its k, reason, acceptance and expected speed-up (the drift alert's generatorURL)."""
        check(request)
        route_or_404(name)
        if follower():
            shared = await coordinator.shared_status()
            if shared is not None and name in shared.get("routes", {}):
                return _ok({**shared["routes"][name], "served_by": "leader-state"})
        return _ok(loop.controller.route_status(name))

    @router.put("/routes/{name}/k")
    async def pin(name: str, request: Request) -> Response:
        check(request)
        route_or_404(name)
        body = await _json_body(request)
        k = body.get("k")
        if not isinstance(k, int) or isinstance(k, bool):
            raise InvalidRequest("'k' must be an integer", param="k")
        try:
            loop.controller.pin(name, k)
        except ValueError as exc:
            raise InvalidRequest(str(exc), param="k") from None
        shared = await share(f"pin:{name}", str(k))
        log.info("route pinned", extra={"route": name, "k": k, "shared": shared})
        return _ok({**loop.controller.route_status(name), "shared": shared})

    @router.delete("/routes/{name}/k")
    async def unpin(name: str, request: Request) -> Response:
        check(request)
        route_or_404(name)
        loop.controller.pin(name, None)
        shared = await share(f"pin:{name}", None)
        log.info("route unpinned", extra={"route": name, "shared": shared})
        return _ok({**loop.controller.route_status(name), "shared": shared})

    @router.get("/controller")
    async def status(request: Request) -> Response:
        check(request)
        return _ok(controller_status())

    async def set_flag(request: Request, attr: str, value: bool | None) -> Response:
        check(request)
        if value is None:
            body = await _json_body(request)
            value = body.get("enabled", True)
            if not isinstance(value, bool):
                raise InvalidRequest("'enabled' must be a boolean", param="enabled")
        setattr(loop.controller, attr, value)
        shared = await share(attr, "1" if value else "0")
        if attr == "kill_switch" and value and follower():
            # Safety first: k = 0 here now, not only once the leader's next table arrives.
            loop.publish(replace(loop.dispatcher.table, routes=_all_off(loop.dispatcher.table)))
        log.warning("controller flag changed", extra={"flag": attr, "value": value, "shared": shared})
        return _ok({**controller_status(), "shared": shared})

    @router.post("/controller/pause")
    async def pause(request: Request) -> Response:
        return await set_flag(request, "paused", True)

    @router.post("/controller/resume")
    async def resume(request: Request) -> Response:
        return await set_flag(request, "paused", False)

    @router.post("/controller/kill-switch")
    async def kill(request: Request) -> Response:
        return await set_flag(request, "kill_switch", None)

    @router.get("/pools")
    async def pools(request: Request) -> Response:
        check(request)
        return _ok({"pools": {pool.name: pool.describe() for pool in loop.pools.pools}})

    @router.get("/pools/{name}/schedules")
    async def schedules(name: str, request: Request) -> Response:
        """k by batch size that the measurements imply now: per route, and one route-blind table for engines
        without the plugin, ready for vLLM's `--speculative-config`; and the schedules in force (what requests
        carry: the scheduler plugin applies them per step, other pools read them at dispatch)."""
        check(request)
        if name not in {p.name for p in loop.config.pools}:
            raise PoolNotFound(f"no pool named '{name}'", param="name")
        per_route, table = loop.controller.schedules(name)
        in_force = loop.dispatcher.table.routes
        return _ok(
            {
                "pool": name,
                "routes": {route: encode(s) for route, s in per_route.items()},
                # What requests carry now (behind hysteresis and dwell); null: static mode, a fixed k.
                "in_force": {
                    route: None if (s := in_force[route].schedule) is None else encode(s)
                    for route in per_route
                    if route in in_force
                },
                "num_speculative_tokens_per_batch_size": [list(row) for row in table],
            }
        )

    @router.get("/decisions")
    async def decisions(request: Request, limit: int = 100) -> Response:
        check(request)
        if follower():
            shared = await coordinator.shared_decisions(max(1, min(limit, 10_000)))
            if shared is not None:
                return _ok(shared)
        records = list(loop.controller.log)[-max(1, min(limit, 10_000)) :]
        return _ok([r.as_dict() for r in records])

    @router.get("/config")
    async def config(request: Request) -> Response:
        check(request)
        r = reloader()
        last = r.last if r is not None else None
        return _ok(
            {
                "reloadable": r is not None,
                "last_reload": None if last is None else last.as_dict(),
                "config": redacted(loop.config),
            }
        )

    @router.post("/config/reload")
    async def reload(request: Request) -> Response:
        check(request)
        r = reloader()
        if r is None:
            raise ReloadUnavailable(
                "this gateway was not started from a config file (`specgate serve --config FILE`): nothing to reload"
            )
        outcome = await r.reload("admin-api")
        if outcome.result == "rejected":
            raise ConfigRejected(outcome)
        return _ok(outcome.as_dict())

    return router
