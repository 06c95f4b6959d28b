"""Prometheus metrics (``GET /metrics``), kept in a registry per app so tests can build many apps."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "text_recognizer_http_requests_total",
            "HTTP requests by method, route and status",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "text_recognizer_http_request_duration_seconds",
            "HTTP request latency, first byte to response",
            ("route",),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.inference = Histogram(
            "text_recognizer_inference_seconds",
            "time in the model per request (forward pass + decoding)",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.preprocess = Histogram(
            "text_recognizer_preprocess_seconds",
            "time decoding images and running the stem per request",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.images = Counter("text_recognizer_images_total", "images recognised", registry=self.registry)
        self.rejected = Counter(
            "text_recognizer_rejected_inputs_total",
            "requests rejected for bad input, by error code",
            ("code",),
            registry=self.registry,
        )
        self.queue = Gauge(
            "text_recognizer_queue_depth", "requests waiting for an inference worker", registry=self.registry
        )

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
