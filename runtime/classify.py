"""The classifier as the request path uses it: timed, counted, and failing open.

A model that cannot be loaded is a start-up error when a route rule uses class labels (those rules could
never match), and so is a rule naming a label the model does not have. Without such rules a load failure is
logged and counted, and the gateway serves by its other rules. An error while predicting yields no label,
so rules on `classes` do not match and the request falls through to later rules or the default route. A
request is never delayed or failed by classification: the input is bounded (head and tail of the text), so
its cost is bounded too, and there is nothing to time out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from specgate.controllers.classifier import ClassifierModel, classification_text
from specgate.runtime.classifier_files import BUNDLED_MODEL, ClassifierLoadError, load_model
from specgate.runtime.metrics import GatewayMetrics

from specgate.config import ClassifierConfig

__all__ = ["RequestClassifier", "load_classifier"]

log = logging.getLogger("specgate.classifier")


def load_classifier(config: ClassifierConfig, required_labels: frozenset[str] = frozenset()) -> ClassifierModel | None:
    """The configured model (None when the classifier is off). Raises ClassifierLoadError when it cannot be
    loaded, with a message that names the route labels at stake, or when it lacks a label that rules use."""
    if not config.enabled:
        return None
    path = config.model_path or BUNDLED_MODEL
    try:
        model = load_model(path)
    except ClassifierLoadError as exc:
        if required_labels:
            raise ClassifierLoadError(
                f"route rules use classifier labels ({', '.join(sorted(required_labels))}) but {exc}"
            ) from None
        raise
    unknown = required_labels - set(model.labels)
    if unknown:
        raise ClassifierLoadError(
            f"route rules use labels the classifier does not have: {', '.join(sorted(unknown))}"
            f" (it has {', '.join(model.labels)})"
        )
    return model


class RequestClassifier:
    def __init__(
        self, config: ClassifierConfig, metrics: GatewayMetrics, required_labels: frozenset[str] = frozenset()
    ) -> None:
        """`required_labels`: the class labels that route rules use (see `load_classifier`)."""
        self._metrics = metrics
        self._min_confidence = config.min_confidence
        self.model: ClassifierModel | None = None
        self.load_error: str | None = None
        try:
            self.model = load_classifier(config, required_labels)
        except ClassifierLoadError as exc:
            if required_labels:
                raise
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
