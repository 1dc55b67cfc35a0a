"""The classifier as the request path uses it: timed, counted, and failing open.

Any failure (no model file, a broken one, an error while predicting) yields no label, so rules on
`classes` do not match and the request falls through to later rules or the default route. A request
is never delayed or failed by classification: the input is bounded (head and tail of the text), so
its cost is bounded too, and there is nothing to time out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from controllers.classifier import ClassifierModel, classification_text
from gateway.classifier_store import BUNDLED_MODEL, ClassifierLoadError, load_model
from gateway.config import ClassifierConfig
from gateway.metrics import GatewayMetrics

__all__ = ["RequestClassifier"]

log = logging.getLogger("specgate.classifier")


class RequestClassifier:
    def __init__(self, config: ClassifierConfig, metrics: GatewayMetrics) -> None:
        self._metrics = metrics
        self._min_confidence = config.min_confidence
        self.model: ClassifierModel | None = None
        self.load_error: str | None = None
        if config.enabled:
            path = config.model_path or str(BUNDLED_MODEL)
            try:
                self.model = load_model(path)
            except ClassifierLoadError as exc:
                self.load_error = str(exc)
                metrics.classifier_errors.labels("load").inc()
                log.error("classifier not loaded; requests go by rules alone", extra={"error": str(exc)})

    def __call__(self, body: Mapping[str, Any]) -> str | None:
        model = self.model
        if model is None:
            return None
        started = time.perf_counter()
        try:
            label, confidence = model.predict(classification_text(body))
        except Exception:  # fail open: a classifier bug must never fail a request
            self._metrics.classifier_errors.labels("predict").inc()
            log.exception("classifier failed; request goes by rules alone")
            return None
        self._metrics.classification_seconds.observe(time.perf_counter() - started)
        self._metrics.classification_confidence.observe(confidence)
        if confidence < self._min_confidence:
            self._metrics.child(self._metrics.classifications, "low_confidence").inc()
            return None
        self._metrics.child(self._metrics.classifications, label).inc()
        return label
