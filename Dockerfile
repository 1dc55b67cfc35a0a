# The specgate gateway (no engine inside: it talks HTTP to vLLM).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY gateway gateway
COPY backends backends
COPY controllers controllers
COPY dashboards dashboards
COPY models/route-classifier models/route-classifier
RUN pip install --no-cache-dir -e .
EXPOSE 8000
# Unprivileged, as the Kubernetes manifests expect (deploy/k8s: runAsNonRoot, read-only root filesystem).
USER 10001
ENTRYPOINT ["specgate"]
CMD ["serve", "--config", "/etc/specgate/specgate.yaml"]
