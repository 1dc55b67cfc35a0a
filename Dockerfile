# The specgate gateway (no engine inside: it talks HTTP to vLLM).
FROM python:3.11-slim
# The package's folders, each mapped onto specgate.* by pyproject.toml (the classifier model and dashboards are
# package data). Installed as a wheel, not editable; the sources are not kept.
WORKDIR /src
COPY pyproject.toml README.md ./
COPY specgate specgate
COPY gateway gateway
COPY runtime runtime
COPY backends backends
COPY controllers controllers
COPY dashboards dashboards
COPY offline offline
RUN pip install --no-cache-dir ".[otlp]" && rm -rf /src
WORKDIR /app
EXPOSE 8000
# Unprivileged, as the Kubernetes manifests expect (deploy/k8s: runAsNonRoot, read-only root filesystem).
USER 10001
ENTRYPOINT ["specgate"]
CMD ["serve", "--config", "/etc/specgate/specgate.yaml"]
