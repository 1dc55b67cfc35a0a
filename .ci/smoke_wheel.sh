#!/usr/bin/env bash
# Wheel smoke test: build specgate's wheel and use it the two ways it is installed, far from the checkout.
#   1. the wheel: one top-level package (`specgate`), with its package data (classifier model, dashboards) and the
#      classifier's C pass;
#   2. full install (fresh venv, with dependencies): `specgate check-config`, `specgate dashboards check`, and a
#      gateway that routes a request by the bundled classifier (against a fake upstream, not an engine);
#   3. light install (`pip install --no-deps`, as in an engine's environment, docs/vllm-plugin.md): the vLLM
#      scheduler plugin imports, pulling in none of the gateway's dependencies.
# Run from anywhere: bash .ci/smoke_wheel.sh (needs .venv with vllm, as `make venv` builds it; PyPI for step 2).
# Prints PASS/FAIL lines; exits non-zero on the first failure. KEEP_SMOKE_DIR=1 keeps the temp folder.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=$ROOT/.venv/bin/python
unset PYTHONPATH PYTHONHOME   # only what is installed in each venv may be imported

WORK=$(mktemp -d "${TMPDIR:-/tmp}/specgate-smoke.XXXXXX")
RUN=$WORK/run   # the working folder of every check: outside the checkout
mkdir -p "$RUN"
PIDS=()
started=$SECONDS

cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    if [[ -n ${KEEP_SMOKE_DIR:-} ]]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'echo "FAIL: command failed at .ci/smoke_wheel.sh line $LINENO"' ERR

pass() { echo "PASS: $*"; }
fail() {
    echo "FAIL: $*"
    exit 1
}

[[ -x $PY ]] || fail "$PY not found: run make venv first"

# ---------------------------------------------------------------- 1. build and inspect the wheel
# Built from a copy of the tracked and new files: an in-tree build would reuse a stale ./build/ folder.
SRC=$WORK/src
mkdir -p "$SRC"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do if [[ -e $f ]]; then printf '%s\0' "$f"; fi; done |
        tar --null -T - -cf - | tar -xf - -C "$SRC"
else   # not a git checkout (an unpacked source archive): all but the local environment and build outputs
    tar --exclude=./.git --exclude=./.venv --exclude=./build --exclude='*.egg-info' -cf - . | tar -xf - -C "$SRC"
fi
if ! "$PY" -m pip wheel --no-deps -q -w "$WORK/dist" "$SRC" >"$WORK/build.log" 2>&1; then
    cat "$WORK/build.log"
    fail "pip wheel could not build the wheel"
fi
WHEELS=("$WORK"/dist/specgate-*.whl)
[[ ${#WHEELS[@]} -eq 1 && -f ${WHEELS[0]} ]] || fail "expected one specgate wheel, found: ${WHEELS[*]}"
WHEEL=${WHEELS[0]}
pass "built $(basename "$WHEEL")"

# Expected package data: every file the checkout has there, under specgate/<subpackage>/.
"$PY" - "$WHEEL" "$SRC" <<'EOF' || fail "wheel contents"
import re, sys, zipfile
from pathlib import Path

wheel, src = sys.argv[1], Path(sys.argv[2])
names = set(zipfile.ZipFile(wheel).namelist())
tops = {n.split("/", 1)[0] for n in names}
ok = True
info = {t for t in tops if re.fullmatch(r"specgate-[^/]+\.dist-info", t)}
if tops - info != {"specgate"} or len(info) != 1:
    print(f"  top-level entries: {sorted(tops)}; want only specgate/ and one specgate-*.dist-info/")
    ok = False
data = [src / "controllers" / "data" / "route-classifier.npz", src / "dashboards" / "alerts.yaml"]
data += sorted((src / "dashboards" / "json").glob("*.json"))
data += sorted((src / "dashboards" / "provisioning").glob("*/*.yaml"))
if not any(n.startswith("specgate/controllers/_ngram_scores") and n.endswith(".so") for n in names):
    print("  the classifier's C pass (specgate/controllers/_ngram_scores*.so) was not built into the wheel")
    ok = False
if len(list((src / "dashboards" / "json").glob("*.json"))) != 3:
    print("  the checkout should have three dashboards/json/*.json")
    ok = False
for path in data:
    name = "specgate/" + path.relative_to(src).as_posix()
    if name not in names:
        print(f"  missing from the wheel: {name}")
        ok = False
if not ok:
    sys.exit(1)
print(f"  {len(names)} files; top level: {', '.join(sorted(tops))}; package data: {len(data)} files")
EOF
pass "wheel has one top-level package (specgate) and its package data (classifier model, dashboards, alerts)"

# ---------------------------------------------------------------- 2. full install, used from outside the checkout
FULL=$WORK/venv-full
"$PY" -m venv --without-pip "$FULL"
# Pinned to the versions the test suite runs with (.venv), so that the smoke test checks the wheel, not PyPI.
"$PY" -m pip freeze --exclude-editable | grep -E '^[A-Za-z0-9._-]+==' >"$WORK/constraints.txt"
# With the otlp extra, as the Docker image installs it (Dockerfile: pip install ".[otlp]"); no Docker engine runs
# here, so this venv stands in for the image's environment.
if ! "$PY" -m pip --python "$FULL/bin/python" install -q -c "$WORK/constraints.txt" "$WHEEL[otlp]" >"$WORK/install.log" 2>&1; then
    cat "$WORK/install.log"
    fail "pip install of the wheel with its dependencies"
fi
cd "$RUN"
where=$("$FULL/bin/python" -c 'import specgate; print(specgate.__file__)')
[[ $where == "$FULL"/* ]] || fail "specgate imported from $where, not from the fresh venv"
pass "installed with dependencies into a fresh venv ($where)"
"$FULL/bin/python" -c 'from specgate.runtime.classifier_files import BUNDLED_MODEL, load_model
assert load_model(BUNDLED_MODEL).native' || fail "the installed classifier does not run its C pass"
pass "the installed classifier runs its C pass (controllers/_ngram_scores.c)"

cat >"$RUN/specgate.yaml" <<'EOF'
server: {host: 127.0.0.1, port: 8000}
pools:
  - name: fake
    model: fake-model
    endpoints: [http://127.0.0.1:9]
health: {interval_s: 1}
routing:
  default_route: chat
  routes:
    - name: code
      match: [{classes: [code]}]
    - name: chat
EOF
out=$("$FULL/bin/specgate" check-config specgate.yaml 2>&1) || fail "specgate check-config: $out"
[[ $out == *": ok"* ]] || fail "specgate check-config: $out"
pass "specgate check-config (loads the bundled classifier model): $out"

# The image's tracing exporters are there: a config asking for OTLP loads (it is refused where they are missing).
printf 'pools: [{name: p, model: m, endpoints: ["http://127.0.0.1:9"]}]\ntracing: {exporter: otlp-grpc}\n' >"$RUN/otlp.yaml"
out=$("$FULL/bin/specgate" check-config otlp.yaml 2>&1) || fail "specgate check-config with an OTLP exporter: $out"
pass "OTLP exporters installed with the otlp extra (the image's install): $out"

out=$("$FULL/bin/specgate" dashboards check 2>&1) || fail "specgate dashboards check: $out"
[[ $out == *"dashboards: ok"* ]] || fail "specgate dashboards check: $out"
pass "specgate dashboards check (committed JSON read as package data)"

# `build` is a developer command: from a wheel it must refuse, not write into site-packages.
if out=$("$FULL/bin/specgate" dashboards build 2>&1); then fail "specgate dashboards build wrote: $out"; fi
[[ $out == *"not run from a source checkout"* ]] || fail "specgate dashboards build: unclear refusal: $out"
pass "specgate dashboards build refuses outside a source checkout"

# A fake OpenAI-compatible upstream (fixed answers; not an engine), so the request succeeds and the answer carries
# the route header (error answers do not).
cat >"$RUN/fake_upstream.py" <<'EOF'
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = json.dumps({
    "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake-model",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 8, "completion_tokens": 1, "total_tokens": 9},
}).encode()


class FakeUpstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body=b"", ctype="text/plain"):
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.answer(200 if self.path in ("/health", "/metrics") else 404)

    def do_POST(self):
        if "chunked" in self.headers.get("transfer-encoding", ""):
            while size := int(self.rfile.readline().split(b";")[0], 16):
                self.rfile.read(size + 2)
            self.rfile.readline()
        else:
            self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path == "/v1/chat/completions":
            self.answer(200, ANSWER, "application/json")
        else:
            self.answer(404)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), FakeUpstream)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
EOF
"$FULL/bin/python" fake_upstream.py "$RUN/upstream.port" >"$RUN/upstream.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [[ -s $RUN/upstream.port ]] && break; sleep 0.1; done
[[ -s $RUN/upstream.port ]] || fail "the fake upstream did not start: $(cat "$RUN/upstream.log")"
UPSTREAM=http://127.0.0.1:$(cat "$RUN/upstream.port")
PORT=$("$FULL/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

"$FULL/bin/specgate" serve --config specgate.yaml --pool "fake-model=$UPSTREAM" --port "$PORT" >"$RUN/gateway.log" 2>&1 &
GATEWAY=$!
PIDS+=("$GATEWAY")
"$FULL/bin/python" - "$PORT" "$GATEWAY" <<'EOF' || { tail -n 40 "$RUN/gateway.log"; fail "the gateway did not become ready"; }
import os, sys, time, urllib.request

port, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("the gateway exited")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            if r.status == 200:
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.3)
sys.exit("no 200 from /readyz within 60 s")
EOF
pass "specgate serve is ready on 127.0.0.1:$PORT (pool: a fake upstream at $UPSTREAM)"

route_of() {
    "$FULL/bin/python" - "$PORT" "$1" <<'EOF'
import json, sys, urllib.error, urllib.request

port, prompt = sys.argv[1], sys.argv[2]
body = {"model": "fake-model", "messages": [{"role": "user", "content": prompt}], "max_tokens": 8}
request = urllib.request.Request(
    f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"}
)
try:
    with urllib.request.urlopen(request, timeout=30) as r:
        print(r.headers.get("x-specgate-route", "<no x-specgate-route header>"))
except urllib.error.HTTPError as exc:
    print(f"HTTP {exc.code}: {exc.read().decode(errors='replace')[:300]}")
EOF
}
route=$(route_of $'Write a Python function that returns the n-th Fibonacci number.\n\ndef fib(n):')
[[ $route == code ]] || { tail -n 20 "$RUN/gateway.log"; fail "a code prompt went to route '$route', not 'code'"; }
route=$(route_of "What a lovely day. How are you?")
[[ $route == chat ]] || { tail -n 20 "$RUN/gateway.log"; fail "a chat prompt went to route '$route', not 'chat'"; }
pass "POST /v1/chat/completions: the bundled classifier put a code prompt on route code, a chat prompt on chat"

kill -TERM "$GATEWAY"
for _ in $(seq 100); do kill -0 "$GATEWAY" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$GATEWAY" 2>/dev/null; then
    kill -KILL "$GATEWAY"
    fail "the gateway did not stop within 10 s of SIGTERM"
fi
wait "$GATEWAY" || true
pass "gateway stopped on SIGTERM"

# ---------------------------------------------------------------- 3. light install: the plugin in an engine's env
LIGHT=$WORK/venv-light
"$PY" -m venv --without-pip "$LIGHT"
"$PY" -m pip --python "$LIGHT/bin/python" install -q --no-deps "$WHEEL" >"$WORK/install-light.log" 2>&1 ||
    { cat "$WORK/install-light.log"; fail "pip install --no-deps of the wheel"; }
# vLLM (and whatever it needs) from .venv, as if the engine's environment: a path line in a .pth file. The .pth
# files in that folder are not processed, so .venv's editable specgate stays out of sight.
light_site=$("$LIGHT/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
"$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' >"$light_site/engine_env.pth"
"$LIGHT/bin/python" - "$LIGHT" <<'EOF' 2>"$RUN/plugin.log" || { tail -n 30 "$RUN/plugin.log"; fail "the plugin in a --no-deps install"; }
import sys

light = sys.argv[1]
import vllm.v1.core.sched.scheduler  # noqa: E402

baseline = set(sys.modules)
import specgate  # noqa: E402
import specgate.backends.vllm_scheduler  # noqa: E402

if not specgate.__file__.startswith(light + "/"):
    sys.exit(f"specgate imported from {specgate.__file__}, not from the --no-deps venv")
added = sorted(set(sys.modules) - baseline)
gateway_deps = {"fastapi", "starlette", "redis", "uvloop", "pydantic", "httpx", "numpy", "prometheus_client", "orjson"}
pulled = sorted({name.partition(".")[0] for name in added} & (gateway_deps | {"yaml"}))
if pulled:
    sys.exit(f"the plugin imported gateway dependencies: {pulled}")
from vllm.utils.import_utils import resolve_obj_by_qualname  # how vLLM loads --scheduler-cls  # noqa: E402

cls = resolve_obj_by_qualname("specgate.backends.vllm_scheduler.SpecCapScheduler")
if not issubclass(cls, vllm.v1.core.sched.scheduler.Scheduler):
    sys.exit(f"{cls} is not a vLLM Scheduler")
print(f"  from {specgate.__file__}; the import added: {', '.join(added)}")
EOF
pass "--no-deps install: specgate.backends.vllm_scheduler imports with vLLM alone and adds no gateway dependency"

echo "PASS: wheel smoke test ($((SECONDS - started)) s)"
