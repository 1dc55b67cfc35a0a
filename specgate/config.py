"""The gateway's one configuration file: a YAML document validated by pydantic.

Every field has a default that works, so an empty file (or none, with `--pool`) is a valid config.
`load_config` raises `ConfigError` listing every problem with its field path, which is what
`specgate check-config` prints.
"""

from __future__ import annotations

import base64
import binascii
import importlib.util
import ipaddress
import os
import re
import ssl
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

__all__ = [
    "AlertmanagerPushConfig",
    "AlertsConfig",
    "ApiKeyConfig",
    "AuthConfig",
    "BreakerConfig",
    "ClassifierConfig",
    "ConfigError",
    "ControllerConfig",
    "DriftConfig",
    "GatewayConfig",
    "HealthConfig",
    "KConfig",
    "PoolConfig",
    "ReceiverConfig",
    "RetryConfig",
    "RouteConfig",
    "RouteMatch",
    "RoutingConfig",
    "ScrapeConfig",
    "ServerConfig",
    "SpeculationConfig",
    "StateConfig",
    "TenantLimits",
    "TimeoutConfig",
    "TracingConfig",
    "load_config",
    "parse_pool_flag",
    "redact_url",
]


class _Strict(BaseModel):
    # Unknown keys are almost always typos in ops configs; reject them instead of ignoring them.
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerConfig(_Strict):
    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 8000
    max_body_bytes: Annotated[int, Field(ge=1024)] = 4 * 1024 * 1024
    # Seconds a client is told to wait in Retry-After when no endpoint can take its request.
    retry_after_s: Annotated[int, Field(ge=1, le=120)] = 2
    # Pass vLLM's per-request `metrics` field on to clients (engine-internal; off by default).
    expose_engine_metrics: bool = False
    # Generation requests handled at once by this replica; beyond it: 503 with Retry-After, never a pile-up.
    max_concurrent_requests: Annotated[int, Field(ge=1)] = 2048
    # On SIGTERM: stop accepting, let in-flight requests and streams finish for up to this long.
    shutdown_grace_s: Annotated[float, Field(ge=0)] = 30.0


class TimeoutConfig(_Strict):
    connect_s: Annotated[float, Field(gt=0)] = 5.0
    # Streams: until the upstream sends response headers and the first event (queueing and prefill).
    first_byte_s: Annotated[float, Field(gt=0)] = 120.0
    # Non-streaming requests: the whole generation (vLLM sends the headers with the finished answer). Not retried
    # when it runs out: the engine may have been generating all along.
    total_s: Annotated[float, Field(gt=0)] = 600.0
    # Longest silence tolerated between two reads of an upstream body.
    stream_idle_s: Annotated[float, Field(gt=0)] = 60.0
    # A client must have sent its whole request body within this time (slow clients get 408).
    client_body_s: Annotated[float, Field(gt=0)] = 30.0
    # Kept-alive engine connections idle longer than this are not reused. Keep it below the engines' own keep-alive
    # (vLLM: 5 s, VLLM_HTTP_TIMEOUT_KEEP_ALIVE), so that an engine never closes one as it is reused.
    upstream_idle_s: Annotated[float, Field(gt=0)] = 4.0


class RetryConfig(_Strict):
    # Total tries of one request, the first included; each retry goes to another endpoint.
    max_attempts: Annotated[int, Field(ge=1, le=5)] = 2


class HealthConfig(_Strict):
    interval_s: Annotated[float, Field(gt=0)] = 5.0
    timeout_s: Annotated[float, Field(gt=0)] = 2.0
    unhealthy_after: Annotated[int, Field(ge=1)] = 2
    healthy_after: Annotated[int, Field(ge=1)] = 1


class ScrapeConfig(_Strict):
    interval_s: Annotated[float, Field(gt=0)] = 2.0
    timeout_s: Annotated[float, Field(gt=0)] = 2.0
    # A scrape older than this many intervals means "load unknown", never "idle".
    stale_after_intervals: Annotated[int, Field(ge=1)] = 3


class PickingWeightsConfig(_Strict):
    """Scorer weights (controllers/picker.py); every scorer gives 0..1. Both 0: round-robin."""

    load: Annotated[float, Field(ge=0)] = 1.0
    # Prefix affinity: requests that start alike (a conversation's turns, one long system prompt) prefer the same
    # engine, whose prefix cache already holds that start; above twice `load`, the prefix's engine wins whenever it
    # is within the load bound. 0: off.
    prefix: Annotated[float, Field(ge=0)] = 3.0


class PickingConfig(_Strict):
    """How the gateway chooses an endpoint within a pool (docs/picking.md)."""

    weights: PickingWeightsConfig = PickingWeightsConfig()
    # Bounded load for requests with a prefix: an endpoint may take one only while its load is at most
    # load_bound x the mean of the pool's available endpoints + load_slack; above it the prefix spills to its next
    # engine. At high load no engine ends up more than about load_bound x the mean.
    load_bound: Annotated[float, Field(ge=1.0)] = 1.2
    load_slack: Annotated[float, Field(ge=0)] = 1.0
    # Prefixes (conversations) whose last engine each gateway process remembers: one that spilled past the load bound
    # stays where its newest history is instead of going back to its home. 0: homes only.
    placement_memory: Annotated[int, Field(ge=0)] = 65_536
    # A prefix this gateway has not placed yet (a new conversation; with placement memory only) goes to an endpoint
    # only while it carries at most this x the mean number of active conversations (placed within
    # `conversation_window_s`), without slack: its home when it is not the busier, else its second choice or the
    # fewest. New conversations are where balance costs no cache hits. null: the load bound alone (several replicas
    # without a shared store may prefer it: they do not see each other's placements).
    new_prefix_bound: Annotated[float, Field(ge=1.0)] | None = 1.0
    conversation_window_s: Annotated[float, Field(gt=0)] = 60.0
    # Prompts shorter than this (characters) have no affinity: load alone places them.
    prefix_min_chars: Annotated[int, Field(ge=1)] = 512
    prefix_max_chars: Annotated[int, Field(ge=1)] = 65_536
    # Completions (a plain prompt string, no message structure) are keyed by their first this many characters.
    completion_prefix_chars: Annotated[int, Field(ge=1)] = 2_048

    @model_validator(mode="after")
    def _lengths(self) -> PickingConfig:
        if self.prefix_max_chars < self.prefix_min_chars:
            raise ValueError("prefix_max_chars must be at least prefix_min_chars")
        if self.completion_prefix_chars < self.prefix_min_chars:
            raise ValueError("completion_prefix_chars must be at least prefix_min_chars")
        return self


class DiscoveryConfig(_Strict):
    """Learning what each endpoint really does (docs/engines.md): at startup, when an endpoint comes back, when its
    counters reset (a restart) and every `recheck_s`."""

    enabled: bool = True
    # Two 16-token probe requests per discovery verify that a cap is applied (the scheduler plugin is loaded) and
    # that per-request speculation metrics come back. Off: those stay unknown and the config is trusted.
    probe: bool = True
    recheck_s: Annotated[float, Field(gt=0)] = 600.0
    timeout_s: Annotated[float, Field(gt=0)] = 30.0


class StepTimeConfig(_Strict):
    """A pool's step time as measured on its engines (docs/controller.md): the controller's starting point for the
    step-time fit, in place of `controller.cost_prior`'s round numbers. The step takes floor_s + per_token_s x
    max(0, B (1 + draft_token_cost x kbar) - knee_tokens) at batch B with kbar drafts per request, plus the drafter's
    own cost (`draft_cost`, by method)."""

    # Seconds per decode step at batch 1 without drafts (with a drafter that runs every step: with it).
    floor_s: Annotated[float, Field(gt=0, le=10)]
    # Seconds each token of a step adds past the knee.
    per_token_s: Annotated[float, Field(ge=0, le=1)]
    # Tokens per step below which a step costs the same (memory-bound); 0 where each token costs from the first.
    knee_tokens: Annotated[float, Field(ge=0, le=100_000)] = 0.0
    # What a verified draft token costs relative to a decoded one (the drafter's tokens run through the target too).
    draft_token_cost: Annotated[float, Field(gt=0, le=2)] = 1.0


class SpeculationConfig(_Strict):
    """What the engines of a pool were started with; specgate cannot change it, only use it."""

    method: Literal["none", "ngram", "eagle", "eagle3", "dflash", "draft_model", "mtp", "suffix"] = "none"
    max_k: Annotated[int, Field(ge=0, le=16)] = 0
    # True when the engines load specgate's scheduler plugin, so each request may carry its own k.
    per_request_k: bool = False
    # Where routes' acceptance is learnt: each answer's per-request metrics, or the engines' counters shared between
    # the routes in flight (docs/engines.md). auto: counters where discovery found answers without metrics.
    acceptance_from: Literal["auto", "per_request", "counters"] = "auto"
    # What drafting one position costs, as a fraction of the target's decode step, where you measured it for your
    # drafter (docs/controller.md): the controller's starting point for drafting cost, which its step-time fit then
    # moves. Unset: a round number by method (draft_model 0.1, eagle/eagle3/mtp 0.04, dflash 0.01).
    draft_cost: Annotated[float, Field(ge=0, le=2)] | None = None
    # The pool's step time as measured on its engines (StepTimeConfig); unset: `controller.cost_prior`'s.
    step_time: StepTimeConfig | None = None
    # The engines' `--max-num-seqs` (the most requests one step runs), read under `controller.objective: goodput`
    # only. A batch that large is held there by a queue: there the controller picks the routes' k for their TPOT
    # rather than for the pool's tokens per second (docs/controller.md). Unset: tokens per second at every batch size
    # (vLLM's default differs by GPU: 256, or 1024 on H100/H200-class cards, 128 on CPU).
    max_num_seqs: Annotated[int, Field(ge=1, le=1_000_000)] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> SpeculationConfig:
        if self.method == "none" and self.max_k != 0:
            raise ValueError("max_k must be 0 when method is 'none'")
        if self.method != "none" and self.max_k == 0:
            raise ValueError(f"max_k must be >= 1 when method is '{self.method}'")
        if self.per_request_k and self.method == "none":
            raise ValueError("per_request_k needs speculation (method != 'none')")
        if self.acceptance_from == "counters" and self.method == "none":
            raise ValueError("acceptance_from 'counters' needs speculation (method != 'none')")
        if self.draft_cost is not None and self.method == "none":
            raise ValueError("draft_cost needs speculation (method != 'none')")
        if self.max_num_seqs is not None and self.method == "none":
            raise ValueError("max_num_seqs needs speculation (method != 'none'): without drafts it decides nothing")
        if self.step_time is not None and self.method == "none":
            raise ValueError("step_time needs speculation (method != 'none'): without drafts nothing is decided by it")
        return self


def _secret_from_environment(data: Any, key: str) -> Any:
    """`KEY_env: NAME` in raw config data -> `KEY: $NAME`, read when the config is loaded (a config error when NAME is
    not set, or when both are given)."""
    env_key = f"{key}_env"
    if not isinstance(data, dict) or data.get(env_key) is None:
        return data
    if data.get(key) is not None:
        raise ValueError(f"set {key} or {env_key}, not both")
    name = data[env_key]
    raw = os.environ.get(name) if isinstance(name, str) else None
    if not raw:
        raise ValueError(f"{env_key}: the environment variable {name} is not set")
    return {**data, key: raw}


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check_unique(kind: str, names: list[str]) -> None:
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"{kind} names must be unique; repeated: {', '.join(dupes)}")


def _check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"endpoint {url!r} must be an http(s) base URL like http://host:port")
    # What the relay's client cannot send is refused here, not as a 500 at the first request.
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"endpoint {url!r}: credentials in the URL are not sent; use the pool's auth")
    if parts.query or parts.fragment:
        raise ValueError(f"endpoint {url!r}: a query or fragment is not allowed in a base URL")
    if not parts.hostname or not url.isascii():
        raise ValueError(f"endpoint {url!r}: the host must be ASCII (punycode for international names)")
    try:
        parts.port  # noqa: B018  # raises on a port that is not a number or out of range
    except ValueError:
        raise ValueError(f"endpoint {url!r}: the port is not a valid number") from None
    return url.rstrip("/")


_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
# Set by the gateway per request or per connection: a pool's own headers must not replace them.
_RESERVED_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "content-type", "accept", "x-request-id"}
)


class UpstreamAuthConfig(_Strict):
    """Credentials the pool's engines want (`vllm serve --api-key`): sent with every request, health check, scrape
    and discovery probe to them. Never logged; `repr` shows `**********`."""

    api_key: SecretStr | None = None
    # The name of an environment variable holding the key (read when the config is loaded; missing: a config error).
    api_key_env: str | None = None
    # Other headers the engines (or a proxy in front of them) want, e.g. a tenant header.
    headers: dict[str, SecretStr] = {}

    @field_validator("headers")
    @classmethod
    def _header_names(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name, secret in value.items():
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid HTTP header name")
            if name.lower() in _RESERVED_HEADERS or name.lower() == "authorization":
                raise ValueError(f"header {name!r} is set by the gateway (use api_key for authorization)")
            raw = secret.get_secret_value()
            if not raw.isprintable() or not raw.isascii():
                raise ValueError(f"header {name!r}: the value must be printable ASCII")
        return value

    @model_validator(mode="before")
    @classmethod
    def _key_from_environment(cls, data: Any) -> Any:
        return _secret_from_environment(data, "api_key")

    @model_validator(mode="after")
    def _printable_key(self) -> UpstreamAuthConfig:
        if self.api_key is not None:
            raw = self.api_key.get_secret_value()
            if not raw or not raw.isprintable() or not raw.isascii():
                raise ValueError("api_key must be printable ASCII")
        return self

    def header_values(self) -> dict[str, str]:
        """The headers to send, secrets revealed (only ever handed to the HTTP clients)."""
        out = {name.lower(): value.get_secret_value() for name, value in self.headers.items()}
        if self.api_key is not None:
            out["authorization"] = f"Bearer {self.api_key.get_secret_value()}"
        return out


class UpstreamTlsConfig(_Strict):
    """How the pool's https:// endpoints are verified, and the client certificate they want (mTLS). The relay, the
    health checks, the scrapes and discovery all use it."""

    # CA bundle the engines' certificates chain to (default: the system's CAs).
    ca_file: Path | None = None
    # A client certificate and its key (PEM), for engines that require one.
    cert_file: Path | None = None
    key_file: Path | None = None
    # The name to verify the certificate against (and send as SNI) when the endpoint URL holds another (an IP).
    server_name: str | None = None

    @model_validator(mode="after")
    def _files(self) -> UpstreamTlsConfig:
        for name in ("ca_file", "cert_file", "key_file"):
            path = getattr(self, name)
            if path is not None and not path.is_file():
                raise ValueError(f"{name}: {path} is not a readable file")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        # Loaded once here, so that a file that is not PEM (or a key that does not fit its certificate) is a config
        # error naming the file, not a traceback when the gateway starts.
        try:
            context = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
            if self.cert_file is not None and self.key_file is not None:
                context.load_cert_chain(self.cert_file, self.key_file)
        except (ssl.SSLError, OSError) as exc:
            raise ValueError(f"cannot load the TLS files: {exc}") from None
        return self

    @property
    def configured(self) -> bool:
        return any(v is not None for v in (self.ca_file, self.cert_file, self.server_name))


class PoolConfig(_Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
    model: Annotated[str, Field(min_length=1, max_length=256)]
    # sglang: the OpenAI API and load metrics of an SGLang server; no per-request k (pool tiers only, docs/engines.md).
    engine: Literal["vllm", "sglang"] = "vllm"
    endpoints: Annotated[list[str], Field(min_length=1)]
    speculation: SpeculationConfig = SpeculationConfig()
    auth: UpstreamAuthConfig = UpstreamAuthConfig()
    tls: UpstreamTlsConfig = UpstreamTlsConfig()
    # This pool's engines' keep-alive is shorter than timeouts.upstream_idle_s allows for: reuse below it.
    upstream_idle_s: Annotated[float | None, Field(gt=0)] = None
    # Connections the gateway may hold open to each endpoint of the pool; beyond it requests wait (up to
    # timeouts.connect_s) for one to come back, then go to another endpoint. None: no cap.
    max_connections: Annotated[int | None, Field(ge=1)] = None
    # This pool's own timeouts.first_byte_s / timeouts.total_s (a slow model, long prompts).
    first_byte_s: Annotated[float | None, Field(gt=0)] = None
    total_s: Annotated[float | None, Field(gt=0)] = None

    @model_validator(mode="after")
    def _engine_can_do_it(self) -> PoolConfig:
        if self.engine == "sglang" and self.speculation.per_request_k:
            raise ValueError("speculation.per_request_k: SGLang takes no per-request k (use pool tiers)")
        if self.engine == "sglang" and self.speculation.acceptance_from != "auto":
            raise ValueError("speculation.acceptance_from: SGLang pools have neither per-request figures nor counters")
        return self

    @field_validator("endpoints")
    @classmethod
    def _urls(cls, value: list[str]) -> list[str]:
        urls = [_check_url(u) for u in value]
        if len(set(urls)) != len(urls):
            raise ValueError("endpoints must not repeat")
        return urls


class KConfig(_Strict):
    """A route's speculation bounds; `pin` fixes k (the controller then leaves the route alone)."""

    min: Annotated[int, Field(ge=0, le=16)] = 0
    max: Annotated[int, Field(ge=0, le=16)] = 16
    pin: Annotated[int | None, Field(ge=0, le=16)] = None

    @model_validator(mode="after")
    def _ordered(self) -> KConfig:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        if self.pin is not None and not self.min <= self.pin <= self.max:
            raise ValueError(f"pin ({self.pin}) must lie within [min, max] = [{self.min}, {self.max}]")
        return self


class RouteMatch(_Strict):
    """One rule: every condition given must hold. A route matches when any of its rules does."""

    models: list[str] | None = None
    api: Literal["chat", "completions"] | None = None
    tenants: list[str] | None = None
    system_regex: str | None = None
    has_tools: bool | None = None
    json_response: bool | None = None
    min_prompt_chars: Annotated[int | None, Field(ge=0)] = None
    max_prompt_chars: Annotated[int | None, Field(ge=0)] = None
    classes: list[str] | None = None

    @field_validator("system_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value


_ROUTE_NAME = r"^[a-z0-9][a-z0-9_-]{0,31}$"


class RouteConfig(_Strict):
    name: Annotated[str, Field(pattern=_ROUTE_NAME)]
    match: list[RouteMatch] = []
    k: KConfig = KConfig()
    # Per-token latency the route must keep (the controller's constraint); None = no SLO.
    tpot_slo_s: Annotated[float | None, Field(gt=0)] = None
    # Pools this route may use (by name); None = every pool serving the request's model.
    pools: list[str] | None = None
    # Response cache (when `cache.enabled`): auto = only answers the same request reproduces (temperature 0 or a
    # fixed seed); always = every complete answer (the route accepts repeated samples); off = never.
    cache: Literal["auto", "always", "off"] = "auto"
    # Near-duplicates of a kept request answered from it (cache.semantic); off unless the route opts in.
    semantic_cache: bool = False


class RouteCheckConfig(_Strict):
    """Split / merge advice from how alike a route's requests accept drafts (controllers/route_check.py)."""

    # A route whose per-request first-draft acceptance spreads more than this (standard deviation, binomial noise
    # taken out) is advised to split. A half-and-half mix of two workloads spreads half their gap: 0.25 flags halves
    # accepting 0.5 apart; lower it to catch smaller gaps at the risk of flagging routes whose prompts just vary.
    split_above: Annotated[float, Field(gt=0, le=0.5)] = 0.25
    # Two homogeneous routes of one pool whose mean acceptances are this close are advised to merge.
    merge_within: Annotated[float, Field(ge=0, le=1)] = 0.05
    # Routes with fewer recent (decayed) requests are not judged.
    min_requests: Annotated[float, Field(ge=2)] = 30.0


class RoutingConfig(_Strict):
    # Routes in priority order: the first whose rules match takes the request.
    routes: list[RouteConfig] = []
    default_route: Annotated[str, Field(pattern=_ROUTE_NAME)] = "default"
    # A client's `x-specgate-route` header picks the route (API keys will narrow who may).
    allow_route_header: bool = False
    # A client's own `vllm_xargs.num_speculative_tokens` is honoured instead of the route's k.
    allow_client_k: bool = False
    check: RouteCheckConfig = RouteCheckConfig()

    @field_validator("routes")
    @classmethod
    def _unique(cls, routes: list[RouteConfig]) -> list[RouteConfig]:
        _check_unique("route", [r.name for r in routes])
        return routes

    def route_names(self) -> list[str]:
        names = [r.name for r in self.routes]
        return names if self.default_route in names else [*names, self.default_route]

    def class_labels(self) -> frozenset[str]:
        """Every classifier label that a route rule uses."""
        return frozenset(label for r in self.routes for m in r.match for label in m.classes or ())

    def route(self, name: str) -> RouteConfig:
        for r in self.routes:
            if r.name == name:
                return r
        return RouteConfig(name=name)


class ClassifierConfig(_Strict):
    enabled: bool = True
    # None = the model bundled with specgate (package data: controllers/data/route-classifier.npz).
    model_path: str | None = None
    # Below this confidence the label is withheld: rules on `classes` do not match.
    min_confidence: Annotated[float, Field(ge=0, le=1)] = 0.0


class ControllerConfig(_Strict):
    """The adaptive k controller (docs/controller.md)."""

    enabled: bool = True
    tick_s: Annotated[float, Field(gt=0)] = 2.0
    # Acceptance evidence loses half its weight in this time.
    half_life_s: Annotated[float, Field(gt=0)] = 60.0
    # Relative gain a change must promise at some batch size: of goodput, or of the TPOT's mean square (`objective`:
    # 3% of it is ~1.5% of the rms TPOT).
    hysteresis: Annotated[float, Field(ge=0, le=1)] = 0.03
    min_dwell_s: Annotated[float, Field(ge=0)] = 10.0
    max_step: Annotated[int, Field(ge=1, le=16)] = 4
    explore_share: Annotated[float, Field(ge=0, le=0.5)] = 0.03
    # Where no k above a route's could pay even at the top of its acceptance interval, it explores at most this many
    # requests per `half_life_s` (0: `explore_share` alone).
    explore_futile_requests: Annotated[float, Field(ge=0, le=100_000)] = 1.0
    # A route without evidence yet explores this share of its requests where exploring could pay at its pool's load
    # (25% elsewhere).
    cold_start_paying_share: Annotated[float, Field(ge=0, le=1)] = 1.0
    stale_after_s: Annotated[float, Field(gt=0)] = 60.0
    safe_k: Annotated[int, Field(ge=0, le=16)] = 0
    # Step-time prior per engine kind until the online fit takes over.
    cost_prior: Literal["gpu", "cpu", "knee"] = "gpu"
    decision_log_size: Annotated[int, Field(ge=10, le=100_000)] = 500
    # Trials per draft position a new route borrows from its pool's measured acceptance (0, the default: none).
    prior_weight: Annotated[float, Field(ge=0, le=10_000)] = 0.0
    # Width of the acceptance intervals: decisions use each draft position's lower Wilson bound at this z, exploration
    # its upper one (0: the point estimates; a position without evidence still counts for nothing).
    z: Annotated[float, Field(ge=0, le=5)] = 1.28
    # A step change in a route's acceptance: when its requests of the last `recent_half_life_s` differ from the older
    # ones by more than `change_z` standard errors (of per-request rates), the evidence from before the change is
    # dropped at once instead of fading with `half_life_s`. 0: off.
    change_z: Annotated[float, Field(ge=0, le=20)] = 4.0
    recent_half_life_s: Annotated[float, Field(gt=0)] = 15.0
    # Charge a route's drafts per step at its measured proposal rate (n-gram steps without a proposal verify none).
    proposal_rate: bool = True
    # KV pressure (docs/controller.md), off by default (in the simulator it cost more than it saved): KV cache use (or
    # a preemption) at which a pool's k is capped where drafts are a material part of the cache, use below which the
    # cap rises again, after this long.
    kv_cap: bool = False
    kv_high: Annotated[float, Field(gt=0, le=1)] = 0.90
    kv_low: Annotated[float, Field(ge=0, le=1)] = 0.75
    kv_recover_s: Annotated[float, Field(ge=0)] = 30.0
    # Under pressure, the running requests' draft slots are kept within this share of the cache.
    kv_draft_share: Annotated[float, Field(ge=0, le=1)] = 0.05
    # What the routes' ks are chosen for at each batch size: the TPOT requests see, its root mean square over requests
    # ("tpot"), or the pool's tokens per second with the TPOT from `pools[].speculation.max_num_seqs` up ("goodput").
    objective: Literal["tpot", "goodput"] = "tpot"

    @model_validator(mode="after")
    def _kv_thresholds(self) -> ControllerConfig:
        if self.kv_low >= self.kv_high:
            raise ValueError(f"controller.kv_low ({self.kv_low}) must be below controller.kv_high ({self.kv_high})")
        return self


def _http_url(value: str, what: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what} must be an http(s) URL with a host, got {value!r}")
    return value.rstrip("/")


class BreakerConfig(_Strict):
    """Per-endpoint circuit breaker on real requests (controllers/breaker.py)."""

    failure_threshold: Annotated[int, Field(ge=1)] = 5
    open_s: Annotated[float, Field(gt=0)] = 10.0
    max_open_s: Annotated[float, Field(gt=0)] = 120.0


class ReceiverConfig(_Strict):
    """A webhook that gets drift alerts (docs/alerts.md)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
    url: str
    # alertmanager = Alertmanager webhook payload v4; slack = incoming-webhook text; json = one alert per body.
    format: Literal["alertmanager", "slack", "json"] = "alertmanager"
    # Standard Webhooks signing secret, `whsec_<base64>`; unsigned when absent.
    secret: SecretStr | None = None
    # Extra request headers, e.g. an Authorization header the receiver wants.
    headers: dict[str, SecretStr] = {}

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value, "url")

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        raw = value.get_secret_value()
        if not raw.startswith("whsec_"):
            raise ValueError("secret must look like whsec_<base64> (Standard Webhooks)")
        try:
            key = base64.b64decode(raw.removeprefix("whsec_"), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("secret: the part after whsec_ is not valid base64") from None
        if len(key) < 16:
            raise ValueError("secret: use at least 16 random bytes")
        return value


class AlertmanagerPushConfig(_Strict):
    """Also push alerts to an Alertmanager (`POST /api/v2/alerts`), re-sent while they are active."""

    url: str
    resend_s: Annotated[float, Field(gt=0)] = 60.0

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value, "url")


class DriftConfig(_Strict):
    """Per-route drift detection on acceptance (controllers/drift.py; docs/alerts.md)."""

    enabled: bool = True
    # Draft-position trials per window; windows learn the baseline first.
    min_trials: Annotated[int, Field(ge=10)] = 200
    baseline_windows: Annotated[int, Field(ge=2)] = 30
    cusum_k: Annotated[float, Field(ge=0)] = 0.5
    cusum_h: Annotated[float, Field(gt=0)] = 8.0
    ewma_lambda: Annotated[float, Field(gt=0, le=1)] = 0.1
    ewma_l: Annotated[float, Field(gt=0)] = 3.5
    # Consecutive windows that must agree before an alert fires or resolves ...
    confirm: Annotated[int, Field(ge=1, le=20)] = 2
    # ... and for at least this long (Prometheus' `for` and `keep_firing_for`): a blip of two windows pages no one.
    for_s: Annotated[float, Field(ge=0)] = 120.0
    keep_firing_for_s: Annotated[float, Field(ge=0)] = 120.0
    # Below break-even counts only with a drop of this many standard errors against the baseline (break-even rises
    # with load; that alone is the controller's business, not drift).
    break_even_z: Annotated[float, Field(ge=0)] = 2.0


class AlertsConfig(_Strict):
    receivers: list[ReceiverConfig] = []
    alertmanager: AlertmanagerPushConfig | None = None
    drift: DriftConfig = DriftConfig()
    # Per receiver: alerts waiting beyond this are dropped (and counted), never piled up.
    queue_size: Annotated[int, Field(ge=1, le=100_000)] = 1000
    max_attempts: Annotated[int, Field(ge=1, le=50)] = 8
    backoff_initial_s: Annotated[float, Field(gt=0)] = 0.5
    backoff_max_s: Annotated[float, Field(gt=0)] = 60.0
    timeout_s: Annotated[float, Field(gt=0)] = 10.0
    # Where operators reach this gateway; `externalURL` / `generatorURL` in payloads.
    external_url: str = "http://localhost:8000"

    @field_validator("receivers")
    @classmethod
    def _unique_receivers(cls, receivers: list[ReceiverConfig]) -> list[ReceiverConfig]:
        _check_unique("receiver", [r.name for r in receivers])
        return receivers


class TracingConfig(_Strict):
    """OpenTelemetry traces (docs/observability.md)."""

    exporter: Literal["none", "console", "otlp-http", "otlp-grpc"] = "none"
    # OTLP endpoint: the full traces URL for otlp-http, host:port (or http://host:port) for otlp-grpc.
    endpoint: str = "http://localhost:4318/v1/traces"
    service_name: str = "specgate"
    # Share of new traces sampled; a sampled parent (the client's traceparent) is always followed.
    sample_ratio: Annotated[float, Field(ge=0, le=1)] = 1.0

    @model_validator(mode="after")
    def _exporter_installed(self) -> TracingConfig:
        module = _OTLP_MODULES.get(self.exporter)
        if module is not None and not _installed(module):
            package = module.split(".trace_exporter")[0].replace("opentelemetry.", "opentelemetry-").replace(".", "-")
            raise ValueError(
                f"exporter {self.exporter} needs {package}, which is not installed: pip install 'specgate[otlp]'"
            )
        return self


_OTLP_MODULES = {
    "otlp-http": "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "otlp-grpc": "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


class SemanticCacheConfig(_Strict):
    """Near-duplicate requests answered from the response cache (runtime/semantic_cache.py, docs/cache.md). Needs
    `cache.enabled`; only routes with `semantic_cache: true` use it."""

    enabled: bool = False
    # Cosine similarity of the texts' embeddings at or above which a kept answer is reused (docs/cache.md has the
    # built-in embedding's precision and recall per threshold on a labelled set).
    threshold: Annotated[float, Field(gt=0, le=1)] = 0.95
    # Requests indexed in each replica (the oldest go first); each holds one vector (4 KiB built in).
    max_entries: Annotated[int, Field(ge=1)] = 2_000
    # An OpenAI-compatible embeddings server (POST {embedding_url}/v1/embeddings); None: the built-in hashed
    # lexical embedding.
    embedding_url: str | None = None
    embedding_model: str | None = None
    embedding_api_key: SecretStr | None = None
    embedding_api_key_env: str | None = None
    embedding_timeout_s: Annotated[float, Field(gt=0)] = 2.0

    @model_validator(mode="before")
    @classmethod
    def _key_from_environment(cls, data: Any) -> Any:
        return _secret_from_environment(data, "embedding_api_key")

    @field_validator("embedding_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return None if value is None else _check_url(value)

    @model_validator(mode="after")
    def _endpoint(self) -> SemanticCacheConfig:
        if self.embedding_url is not None and not self.embedding_model:
            raise ValueError("embedding_model is required with embedding_url")
        return self


class CacheConfig(_Strict):
    """Exact response cache (runtime/response_cache.py), in each replica's memory."""

    enabled: bool = False
    ttl_s: Annotated[float, Field(gt=0)] = 300.0
    max_entries: Annotated[int, Field(ge=1)] = 10_000
    max_bytes: Annotated[int, Field(ge=1)] = 64 * 1024 * 1024
    # Larger answers are not kept.
    max_entry_bytes: Annotated[int, Field(ge=1)] = 1024 * 1024
    semantic: SemanticCacheConfig = SemanticCacheConfig()

    @model_validator(mode="after")
    def _semantic_needs_the_cache(self) -> CacheConfig:
        if self.semantic.enabled and not self.enabled:
            raise ValueError("semantic.enabled needs cache.enabled (the semantic cache reuses its answers)")
        return self


class RecordingConfig(_Strict):
    """The workload record for `specgate advise` (runtime/recorder.py): one JSON line per finished request, no text."""

    enabled: bool = False
    # file: `path`, rotating; redis: the stream `<state.namespace>:records` in `state.redis_url`, where the lines of
    # every replica meet (backends/record_stream.py).
    sink: Literal["file", "redis"] = "file"
    path: str = "specgate-records.jsonl"
    # The file rotates at this size into path.1 .. path.N (`backups`).
    max_bytes: Annotated[int, Field(ge=4096)] = 64 * 1024 * 1024
    backups: Annotated[int, Field(ge=0, le=100)] = 3
    # The stream keeps about this many lines (XADD MAXLEN ~): ~0.5 KB each.
    stream_max_len: Annotated[int, Field(ge=1000)] = 1_000_000

    @model_validator(mode="after")
    def _writable(self) -> RecordingConfig:
        # Checked at load, like the TLS files: a record that cannot be written is a config error, not a surprise
        # at the first flush.
        if self.enabled and self.sink == "file":
            folder = Path(self.path).expanduser().resolve().parent
            if not folder.is_dir():
                raise ValueError(f"path: the folder {folder} does not exist")
            if not os.access(folder, os.W_OK):
                raise ValueError(f"path: the folder {folder} is not writable")
        return self


class StateConfig(_Strict):
    """Where replicas share state (docs/replicas.md). No `redis_url`: in memory, one replica."""

    # redis://, rediss:// (TLS) or redis+sentinel://host:port[,host:port]/service_name[/db]
    redis_url: str | None = None
    # Prefix of every key, so several gateway deployments can share one Redis.
    namespace: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")] = "specgate"
    # Leader lease; renewed every controller tick, so keep it a few ticks long.
    lease_ttl_s: Annotated[float, Field(gt=0)] = 6.0
    # Redis calls slower than this count as an outage for this tick.
    timeout_s: Annotated[float, Field(gt=0)] = 1.0
    # Observations kept locally while Redis is away (oldest dropped beyond, and counted).
    max_buffered_observations: Annotated[int, Field(ge=0)] = 10_000
    decision_log_size: Annotated[int, Field(ge=10, le=100_000)] = 500

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).scheme not in ("redis", "rediss", "unix", "redis+sentinel"):
            raise ValueError("redis_url must start with redis://, rediss://, unix:// or redis+sentinel://")
        return value


class ApiKeyConfig(_Strict):
    # SHA-256 (hex) of the key, never the key itself: `specgate hash-key` prints it.
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    tenant: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]


class TenantLimits(_Strict):
    requests_per_min: Annotated[int, Field(ge=1)] | None = None
    tokens_per_min: Annotated[int, Field(ge=1)] | None = None
    # Requests of the tenant in flight at once, per replica (429 beyond).
    max_concurrent: Annotated[int, Field(ge=1)] | None = None


class AuthConfig(_Strict):
    """API keys mapped to tenants, per-tenant limits (shared across replicas through Redis)."""

    # Keys from config; with a Redis state store, keys in the hash `<namespace>:keys` (sha256 -> tenant) count too.
    api_keys: list[ApiKeyConfig] = []
    # Requests without a valid key get 401. Default: required as soon as any key is configured.
    require_api_key: bool | None = None
    tenants: dict[str, TenantLimits] = {}
    # Bearer key for GET /metrics; open when unset.
    metrics_key: SecretStr | None = None

    def key_required(self) -> bool:
        return self.require_api_key if self.require_api_key is not None else bool(self.api_keys)


class LoggingConfig(_Strict):
    level: Literal["debug", "info", "warning", "error"] = "info"
    # Prompt bodies are user data: off unless an operator turns it on for debugging.
    log_prompts: bool = False


class GatewayConfig(_Strict):
    server: ServerConfig = ServerConfig()
    timeouts: TimeoutConfig = TimeoutConfig()
    retries: RetryConfig = RetryConfig()
    breaker: BreakerConfig = BreakerConfig()
    health: HealthConfig = HealthConfig()
    scrape: ScrapeConfig = ScrapeConfig()
    discovery: DiscoveryConfig = DiscoveryConfig()
    picking: PickingConfig = PickingConfig()
    cache: CacheConfig = CacheConfig()
    recording: RecordingConfig = RecordingConfig()
    logging: LoggingConfig = LoggingConfig()
    routing: RoutingConfig = RoutingConfig()
    classifier: ClassifierConfig = ClassifierConfig()
    controller: ControllerConfig = ControllerConfig()
    alerts: AlertsConfig = AlertsConfig()
    tracing: TracingConfig = TracingConfig()
    state: StateConfig = StateConfig()
    auth: AuthConfig = AuthConfig()
    # The admin API's bearer key (pins, kill switch, pause): required to listen beyond loopback.
    admin_key: SecretStr | None = None
    # The name of an environment variable holding it (read at load; unset: a config error).
    admin_key_env: str | None = None
    pools: list[PoolConfig] = []

    @model_validator(mode="before")
    @classmethod
    def _admin_key_from_environment(cls, data: Any) -> Any:
        return _secret_from_environment(data, "admin_key")

    @model_validator(mode="after")
    def _admin_api_is_not_open_to_the_network(self) -> GatewayConfig:
        if self.admin_key is None and not _loopback(self.server.host):
            raise ValueError(
                f"server.host is {self.server.host}: the admin API (pins, kill switch, pause) would be open to the "
                "network without a key. Set admin_key_env (an environment variable holding a key, e.g. "
                "SPECGATE_ADMIN_KEY) or admin_key, or listen on 127.0.0.1"
            )
        if self.admin_key is not None and len(self.admin_key.get_secret_value()) < 16:
            raise ValueError("admin_key: use at least 16 characters (e.g. `openssl rand -hex 16`)")
        return self

    @field_validator("pools")
    @classmethod
    def _unique_names(cls, pools: list[PoolConfig]) -> list[PoolConfig]:
        _check_unique("pool", [p.name for p in pools])
        return pools

    @model_validator(mode="after")
    def _route_pools_exist(self) -> GatewayConfig:
        known = {p.name for p in self.pools}
        for i, route in enumerate(self.routing.routes):
            missing = [p for p in route.pools or [] if p not in known]
            if missing:
                raise ValueError(f"routing.routes.{i}.pools: unknown pool(s) {', '.join(missing)}")
        if self.recording.enabled and self.recording.sink == "redis" and not self.state.redis_url:
            raise ValueError("recording.sink is redis but state.redis_url is not set: the stream lives in that Redis")
        if self.routing.class_labels() and not self.classifier.enabled:
            raise ValueError(
                "classifier.enabled is false but route rules use `classes`: those rules could never match"
                " (turn the classifier on or remove the `classes` conditions)"
            )
        return self

    def models(self) -> list[str]:
        """Each served model once, in config order."""
        return list(dict.fromkeys(p.model for p in self.pools))


class ConfigError(Exception):
    """A config that cannot be used; `problems` holds one line per error, each with its field path."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def _format_validation_error(exc: ValidationError) -> list[str]:
    lines = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"]) or "(root)"
        lines.append(f"{path}: {err['msg']}")
    return lines


def validate_config(data: Any) -> GatewayConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(["(root): the config must be a YAML mapping"])
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc)) from None


def load_config(path: str | Path) -> GatewayConfig:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"(file): cannot read {path}: {exc.strerror}"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError([f"(yaml): {_yaml_problem(exc)}"]) from None
    return validate_config(data)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """What is wrong and where, without the quoted source line: that line may hold a key or a password."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        context = f" ({exc.context})" if exc.context else ""
        return f"{exc.problem or 'invalid YAML'}{context}{where}"
    return type(exc).__name__


def redacted(config: GatewayConfig) -> dict[str, Any]:
    """The config as JSON for people to read (GET /admin/config): SecretStr fields masked by pydantic, and in every
    URL the password, the query string and, for alert receivers (a Slack webhook's path is its secret), the path."""
    data = config.model_dump(mode="json")

    def walk(value: Any, receiver: bool) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, receiver or k in ("receivers", "alertmanager")) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, receiver) for v in value]
        if isinstance(value, str) and "://" in value:
            return redact_url(value, hide_path=receiver)
        return value

    result: dict[str, Any] = walk(data, False)
    return result


def redact_url(url: str, hide_path: bool = False) -> str:
    """`url` with its password and query string masked (and its path, with `hide_path`): safe to show or log."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            netloc = f"{parts.username or ''}:**********@{parts.hostname or ''}"
            if parts.port is not None:
                netloc += f":{parts.port}"
    except ValueError:
        return "**********"
    path = "/**********" if hide_path and parts.path not in ("", "/") else parts.path
    query = "?**********" if parts.query else ""
    return f"{parts.scheme}://{netloc}{path}{query}"


def parse_pool_flag(flag: str, index: int) -> dict[str, Any]:
    """`MODEL=URL[,URL...]` from `specgate serve --pool` into a pool mapping (validated later)."""
    model, sep, urls = flag.partition("=")
    if not sep or not model or not urls:
        raise ConfigError([f"--pool {flag!r}: expected MODEL=URL[,URL...]"])
    return {"name": f"pool-{index}", "model": model, "endpoints": [u for u in urls.split(",") if u]}
