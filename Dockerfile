# The specgate gateway (no engine inside: it talks HTTP to vLLM).
# Stage 1 builds the wheel with a C compiler (the classifier's n-gram pass, controllers/_ngram_scores.c; without one
# it would fall back to numpy, about 2-3x slower per classification). The package's folders are each mapped onto
# specgate.* by pyproject.toml (the classifier model and dashboards are package data).
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY specgate specgate
COPY gateway gateway
COPY runtime runtime
COPY backends backends
COPY controllers controllers
COPY dashboards dashboards
COPY offline offline
RUN pip wheel --no-cache-dir --no-deps -w /wheels . \
 && python -c "import zipfile, glob; w = glob.glob('/wheels/specgate-*.whl')[0]; \
assert any('_ngram_scores' in n for n in zipfile.ZipFile(w).namelist()), 'the C module was not built'"

# Stage 2: the wheel installed, not editable; no compiler, no sources.
FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir "$(ls /wheels/specgate-*.whl)[otlp]" && rm -rf /wheels
WORKDIR /app
EXPOSE 8000
# Unprivileged, as the Kubernetes manifests expect (deploy/k8s: runAsNonRoot, read-only root filesystem).
USER 10001
ENTRYPOINT ["specgate"]
CMD ["serve", "--config", "/etc/specgate/specgate.yaml"]
