"""The gateway's own Prometheus metrics: one prefix, base units, bounded labels.

Label values come from config (pool names, endpoint URLs) or from fixed sets (status class, reason),
never from raw client input. Histogram buckets are vLLM's, so gateway and engine quantiles line up.
Each app owns its registry, so several gateways can live in one process (tests) without clashes.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["ALERT_OUTCOMES", "TPOT_BUCKETS", "TTFT_BUCKETS", "UPSTREAM_ERROR_REASONS", "GatewayMetrics"]

UPSTREAM_ERROR_REASONS = (
    "connect",
    "timeout",
    "http_5xx",
    "stream",
    "protocol",
    "stale_connection",
    "connection_limit",
)
ALERT_OUTCOMES = ("delivered", "rejected", "failed", "dropped")

TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
TPOT_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
E2E_BUCKETS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)


class GatewayMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self._children: dict[tuple[object, tuple[str, ...]], Any] = {}
        r = self.registry
        self.requests = Counter(
            "specgate_requests",
            "Requests answered, by route, pool, API and HTTP status (route and pool 'none' before routing).",
            ["route", "pool", "api", "status"],
            registry=r,
        )
        self.request_duration = Histogram(
            "specgate_request_duration_seconds",
            "Time from request received to response complete.",
            ["pool", "api", "stream"],
            buckets=E2E_BUCKETS,
            registry=r,
        )
        self.ttft = Histogram(
            "specgate_time_to_first_token_seconds",
            "Time from request received to first streamed event.",
            ["pool"],
            buckets=TTFT_BUCKETS,
            registry=r,
        )
        self.tpot = Histogram(
            "specgate_time_per_output_token_seconds",
            "Streamed requests: time between first and last token over the tokens after the first.",
            ["route", "pool"],
            buckets=TPOT_BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge(
            "specgate_requests_in_flight",
            "Requests being handled now.",
            ["api"],
            registry=r,
        )
        self.upstream_errors = Counter(
            "specgate_upstream_errors",
            "Failed upstream tries, by reason (connect, timeout, http_5xx, stream, protocol).",
            ["pool", "reason"],
            registry=r,
        )
        self.retries = Counter(
            "specgate_upstream_retries",
            "Requests re-sent to another endpoint after a failed try.",
            ["pool"],
            registry=r,
        )
        self.endpoint_healthy = Gauge(
            "specgate_endpoint_healthy",
            "1 when the endpoint passes health checks, else 0.",
            ["pool", "endpoint"],
            registry=r,
        )
        self.endpoint_outstanding = Gauge(
            "specgate_endpoint_outstanding_requests",
            "Requests this gateway has outstanding at the endpoint.",
            ["pool", "endpoint"],
            registry=r,
        )
        self.circuit_opens = Counter(
            "specgate_endpoint_circuit_opens",
            "Times an endpoint's circuit breaker opened.",
            ["pool", "endpoint"],
            registry=r,
        )
        self.engine_accept_length = Gauge(
            "specgate_engine_spec_accept_length",
            "Mean tokens per verify step an engine reports as a gauge (SGLang's spec_accept_length), per endpoint.",
            ["pool", "endpoint"],
            registry=r,
        )
        self.upstream_connections = Gauge(
            "specgate_upstream_connections",
            "Connections open to the endpoint (in use or kept alive), at scrape time.",
            ["pool", "endpoint"],
            registry=r,
        )
        self.connection_waits = Counter(
            "specgate_upstream_connection_waits",
            "Requests that waited for a connection because the endpoint's pools[].max_connections were all busy.",
            ["pool", "endpoint"],
            registry=r,
        )
        self.cache_requests = Counter(
            "specgate_cache_requests",
            "Generation requests by response-cache result: hit, miss (generated, then kept if complete), bypass.",
            ["route", "result"],
            registry=r,
        )
        self.cache_errors = Counter(
            "specgate_cache_errors",
            "Response cache operations that failed, the request going on without them: read/write (the shared store),"
            " embed (the semantic cache's embeddings server).",
            ["operation"],
            registry=r,
        )
        self.replica_log_entries = Counter(
            "specgate_replica_log_entries",
            "Entries of the logs replicas share through the store (placements: where a conversation moved; semantic:"
            " the semantic cache's index): sent, received (taken in).",
            ["log", "direction"],
            registry=r,
        )
        self.replica_log_errors = Counter(
            "specgate_replica_log_errors",
            "Rounds of replica log sharing that failed (the shared store away); replicas go on with what they know.",
            registry=r,
        )
        self.records_dropped = Counter(
            "specgate_records_dropped",
            "Workload record lines dropped because the writer fell behind (recording.enabled).",
            registry=r,
        )
        self.config_reloads = Counter(
            "specgate_config_reloads",
            "Config reloads (SIGHUP, POST /admin/config/reload, the file watch) by result: applied, unchanged, or "
            "rejected (the old config keeps serving; the log lists every error).",
            ["result"],
            registry=r,
        )
        self.config_last_reload_ok = Gauge(
            "specgate_config_last_reload_successful",
            "1 when the last config reload was applied (or left nothing to change), 0 when it was rejected.",
            registry=r,
        )
        self.config_last_reload_ok.set(1)
        self.config_loaded_at = Gauge(
            "specgate_config_last_reload_success_timestamp_seconds",
            "Unix time the config in force was loaded (start, or the last applied reload).",
            registry=r,
        )
        self.config_loaded_at.set_to_current_time()
        self.cache_semantic_hits = Counter(
            "specgate_cache_semantic_hits",
            "Cache hits on a near-duplicate (semantic cache), also counted as hits in specgate_cache_requests.",
            ["route"],
            registry=r,
        )
        self.cache_bytes = Gauge("specgate_cache_bytes", "Bytes of answers held in the response cache.", registry=r)
        self.cache_entries = Gauge("specgate_cache_entries", "Answers held in the response cache.", registry=r)
        self.cache_evictions = Counter(
            "specgate_cache_evictions", "Answers dropped from the response cache to stay within its bounds.", registry=r
        )
        self.endpoint_capability = Gauge(
            "specgate_endpoint_capability",
            "What discovery verified per endpoint (docs/engines.md): 1 present, 0 absent; no series while unknown. "
            "capability: speculation, per_request_metrics, plugin.",
            ["pool", "endpoint", "capability"],
            registry=r,
        )
        self.endpoint_mismatches = Gauge(
            "specgate_endpoint_config_mismatches",
            "Ways the endpoint contradicts its pool's config (details: /readyz, GET /admin/pools, the log).",
            ["pool", "endpoint"],
            registry=r,
        )
        self.capability_lost = Counter(
            "specgate_endpoint_capability_lost",
            "A capability verified present was found absent later (an engine restarted with other flags).",
            ["pool", "endpoint", "capability"],
            registry=r,
        )
        self.circuit_state = Gauge(
            "specgate_endpoint_circuit_state",
            "Circuit breaker per endpoint: 0 closed, 1 half-open, 2 open.",
            ["pool", "endpoint"],
            registry=r,
        )
        self.overloaded = Counter(
            "specgate_overloaded", "Requests refused at the concurrent request limit (503).", registry=r
        )
        self.client_disconnects = Counter(
            "specgate_client_disconnects",
            "Requests whose client went away before the answer was complete.",
            ["api"],
            registry=r,
        )
        # Speculation, per route and pool, from vLLM's per-request metrics (one observation per request).
        self.route_requests = Counter(
            "specgate_route_requests",
            "Requests put on each route.",
            ["route"],
            registry=r,
        )
        self.spec_requests = Counter(
            "specgate_spec_requests",
            "Requests relayed, by route, pool and the k applied.",
            ["route", "pool", "k"],
            registry=r,
        )
        self.spec_draft_tokens = Counter(
            "specgate_spec_draft_tokens",
            "Draft tokens proposed and verified, from per-request engine metrics.",
            ["route", "pool"],
            registry=r,
        )
        self.attributed_draft_tokens = Counter(
            "specgate_route_attributed_draft_tokens",
            "Draft tokens credited to a route from the engines' counters (pools learning acceptance from counters).",
            ["route", "pool"],
            registry=r,
        )
        self.attributed_accepted_tokens = Counter(
            "specgate_route_attributed_accepted_tokens",
            "Accepted draft tokens credited to a route from the engines' counters.",
            ["route", "pool"],
            registry=r,
        )
        self.spec_accepted_tokens = Counter(
            "specgate_spec_accepted_tokens",
            "Draft tokens accepted, from per-request engine metrics.",
            ["route", "pool"],
            registry=r,
        )
        self.spec_verify_steps = Counter(
            "specgate_spec_verify_steps",
            "Verify steps that carried drafts. Mean acceptance length = "
            "1 + rate(accepted_tokens) / rate(verify_steps).",
            ["route", "pool"],
            registry=r,
        )
        self.spec_steps_by_k = Counter(
            "specgate_spec_steps_by_k",
            "Verify steps by the drafts they carried (per-step engine metrics): the k the engine applied, step by"
            " step, under the route's schedule; k 0: steps whose drafter proposed nothing.",
            ["route", "k"],
            registry=r,
        )
        self.route_schedule_k = Gauge(
            "specgate_route_schedule_k",
            "The route's k schedule in force: k for a step of `batch` requests or more (up to the next batch label).",
            ["route", "batch"],
            registry=r,
        )
        self.spec_observations = Counter(
            "specgate_spec_observations",
            "Finished requests observed, by where their numbers came from (engine, chunks, none).",
            ["route", "pool", "source"],
            registry=r,
        )
        self.observations_dropped = Counter(
            "specgate_observations_dropped",
            "Observations dropped because the controller's sink was full.",
            registry=r,
        )
        # vLLM's own speculation counters, scraped per endpoint (increments; engine restarts handled).
        self.engine_draft_tokens = Counter(
            "specgate_engine_spec_draft_tokens",
            "Draft tokens counted by the engine (scraped).",
            ["pool", "endpoint"],
            registry=r,
        )
        self.engine_accepted_tokens = Counter(
            "specgate_engine_spec_accepted_tokens",
            "Accepted draft tokens counted by the engine (scraped).",
            ["pool", "endpoint"],
            registry=r,
        )
        self.engine_drafts = Counter(
            "specgate_engine_spec_drafts",
            "Verify steps with drafts counted by the engine (scraped).",
            ["pool", "endpoint"],
            registry=r,
        )
        self.engine_counter_resets = Counter(
            "specgate_engine_counter_resets",
            "Engine counters seen going backwards (restarts).",
            ["pool", "endpoint"],
            registry=r,
        )
        self.engine_scrape_failures = Counter(
            "specgate_engine_scrape_failures",
            "Scrapes of an endpoint's /metrics that gave no reading (timeout, connect, status, parse): while they fail,"
            " the controller sees neither its load nor its KV pressure.",
            ["pool", "endpoint", "reason"],
            registry=r,
        )
        self.classification_seconds = Histogram(
            "specgate_classification_seconds",
            "Time to classify one request.",
            buckets=(2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2),
            registry=r,
        )
        self.classification_confidence = Histogram(
            "specgate_classification_confidence",
            "Probability the classifier gave its label.",
            buckets=(0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0),
            registry=r,
        )
        self.classifications = Counter(
            "specgate_classifications",
            "Classified requests by label (low_confidence: label withheld).",
            ["label"],
            registry=r,
        )
        self.classifier_errors = Counter(
            "specgate_classifier_errors",
            "Classifier failures (load, predict); the request goes to the default route.",
            ["reason"],
            registry=r,
        )
        # The controller
        self.route_k = Gauge("specgate_route_k", "k the decision table holds for each route.", ["route"], registry=r)
        self.route_expected_speedup = Gauge(
            "specgate_route_expected_speedup",
            "Controller's expected speed-up of the route's tokens/s versus k=0.",
            ["route"],
            registry=r,
        )
        self.route_measured_speedup = Gauge(
            "specgate_route_measured_speedup",
            "Per-token time of the route's requests at k = 0 over that at k > 0 (recent requests, both sides seen).",
            ["route"],
            registry=r,
        )
        self.route_acceptance_length = Gauge(
            "specgate_route_acceptance_length_estimate",
            "Estimated tokens per verify step at the route's k.",
            ["route"],
            registry=r,
        )
        self.route_position_acceptance = Gauge(
            "specgate_route_acceptance_rate_estimate",
            "Estimated P(first i drafts accepted), by draft position.",
            ["route", "position"],
            registry=r,
        )
        self.controller_ticks = Counter("specgate_controller_ticks", "Controller ticks run.", registry=r)
        self.controller_errors = Counter("specgate_controller_errors", "Controller ticks that failed.", registry=r)
        self.decision_changes = Counter(
            "specgate_controller_decision_changes",
            "Changes of a route's k.",
            ["route"],
            registry=r,
        )
        self.decision_version = Gauge(
            "specgate_decision_table_version",
            "Version of the decision table in use.",
            registry=r,
        )
        self.controller_paused = Gauge("specgate_controller_paused", "1 while paused.", registry=r)
        self.kill_switch = Gauge("specgate_controller_kill_switch", "1 while k is forced to 0.", registry=r)
        self.last_tick = Gauge(
            "specgate_controller_last_tick_timestamp_seconds",
            "Unix time of the last controller tick.",
            registry=r,
        )
        self.cost_fit_quality = Gauge(
            "specgate_cost_model_fit_quality",
            "1 - relative RMS error of the step-time model.",
            ["pool"],
            registry=r,
        )
        self.pool_k_cap = Gauge(
            "specgate_pool_k_cap",
            "Largest k the pool's schedules may take under KV pressure (its max k when no cap holds or the rule is"
            " off).",
            ["pool"],
            registry=r,
        )
        self.engine_step_samples = Counter(
            "specgate_engine_step_samples_total",
            "Step-time samples the controller fitted from engines' step counters (one per endpoint per scrape with"
            " enough steps); while they arrive, per-request timings do not feed the pool's step-time fit.",
            ["pool"],
            registry=r,
        )
        self.drift_state = Gauge(
            "specgate_drift_state",
            "Drift detector state per route: 0 learning the baseline, 1 ok, 2 firing.",
            ["route"],
            registry=r,
        )
        self.drift_acceptance = Gauge(
            "specgate_drift_window_acceptance",
            "First-draft acceptance of drafted steps in the route's last closed drift window.",
            ["route"],
            registry=r,
        )
        self.route_acceptance_spread = Gauge(
            "specgate_route_acceptance_spread",
            "Standard deviation of per-request first-draft acceptance around the route's mean, binomial noise taken "
            "out (recent requests): large means the route mixes requests that accept very differently (split it).",
            ["route"],
            registry=r,
        )
        self.route_advice = Gauge(
            "specgate_route_advice",
            "1 while the route check advises: kind split (the route mixes workloads) or merge (it behaves like "
            "another route on its pool). GET /admin/routes/check says why.",
            ["route", "kind"],
            registry=r,
        )
        self.drift_baseline = Gauge(
            "specgate_drift_baseline_acceptance",
            "The route's learned baseline acceptance.",
            ["route"],
            registry=r,
        )
        self.break_even = Gauge(
            "specgate_route_break_even_acceptance",
            "Per-position acceptance below which the route's speculation stops paying at the current load.",
            ["route"],
            registry=r,
        )
        self.alerts_fired = Counter(
            "specgate_alerts",
            "Alert state changes raised by the gateway.",
            ["alertname", "status"],
            registry=r,
        )
        self.alert_deliveries = Counter(
            "specgate_alert_deliveries",
            "Alert messages by receiver and outcome (delivered, rejected = 4xx, failed = gave up, dropped).",
            ["receiver", "outcome"],
            registry=r,
        )
        self.alert_retries = Counter(
            "specgate_alert_delivery_retries",
            "Delivery attempts after the first, per receiver.",
            ["receiver"],
            registry=r,
        )
        self.alert_queue_depth = Gauge(
            "specgate_alert_queue_depth",
            "Alert messages waiting per receiver.",
            ["receiver"],
            registry=r,
        )
        self.replica_role = Gauge(
            "specgate_replica_role",
            "1 for this replica's current role: leader (runs the controller), follower, standalone (store away).",
            ["role"],
            registry=r,
        )
        self.leader_changes = Counter(
            "specgate_leader_acquisitions", "Times this replica became the controller leader.", registry=r
        )
        self.store_up = Gauge(
            "specgate_state_store_up", "1 when the shared state store answered last tick.", registry=r
        )
        self.store_errors = Counter("specgate_state_store_errors", "Ticks on which the state store failed.", registry=r)
        self.auth_failures = Counter(
            "specgate_auth_failures", "Requests refused for a missing or invalid API key.", ["reason"], registry=r
        )
        self.rate_limited = Counter(
            "specgate_rate_limited", "Requests refused by a tenant limit.", ["tenant", "limit"], registry=r
        )
        self.explored_requests = Counter(
            "specgate_explored_requests",
            "Requests run at an exploration k.",
            ["route"],
            registry=r,
        )

    def child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, remembered: the request path asks for the same few series every time, and
        prometheus_client's own lookup (argument checks, a lock) cost more than the increment itself."""
        key = (metric, labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def forget(self, label: str, values: set[str]) -> None:
        """Drop the gauge series whose `label` is one of `values` (pools, routes or endpoints a reload removed), so no
        dashboard shows a last value for something that no longer exists. Counters stay: they only ever rose."""
        for collector in list(self.registry._collector_to_names):  # prometheus_client keeps no public list
            if not isinstance(collector, Gauge) or label not in collector._labelnames:
                continue
            at = collector._labelnames.index(label)
            for key in [k for k in list(collector._metrics) if k[at] in values]:
                collector.remove(*key)

    def init_series(self, pools: list[str], routes: list[str], receivers: list[str]) -> None:
        """Create the zero series of every label set known from the config, so dashboards and alert rules see 0
        (not "no data") for errors, retries, disconnects and deliveries that have not happened yet."""
        for pool in pools:
            self.retries.labels(pool)
            self.engine_step_samples.labels(pool)
            for reason in UPSTREAM_ERROR_REASONS:
                self.upstream_errors.labels(pool, reason)
        for api in ("chat", "completions"):
            self.client_disconnects.labels(api)
            self.in_flight.labels(api)
        for route in routes:
            self.decision_changes.labels(route)
            self.explored_requests.labels(route)
        for receiver in receivers:
            self.alert_retries.labels(receiver)
            self.alert_queue_depth.labels(receiver)
            for outcome in ALERT_OUTCOMES:
                self.alert_deliveries.labels(receiver, outcome)
