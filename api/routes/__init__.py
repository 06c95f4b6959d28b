"""The API's routers: ``health`` (liveness, readiness, model info), ``predict`` (recognition) and
``pages`` (web page, Swagger UI, Prometheus metrics)."""
