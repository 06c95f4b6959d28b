# Serving image for the handwritten line recognizer: CPU-only torch, non-root, health-checked.
#   docker build -t text-recognizer .
#   docker run --rm -p 8000:8000 text-recognizer                       # bundled model
#   docker run --rm -p 8000:8000 -v "$PWD/best.pt:/models/model.pt:ro" \
#       -e TEXT_RECOGNIZER_CHECKPOINT=/models/model.pt text-recognizer   # your own checkpoint
FROM python:3.11-slim-bookworm

# CPU-only wheels from the PyTorch index: ~200 MB instead of several GB of CUDA libraries.
ARG TORCH_VERSION=2.14.1
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
RUN groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid app --home-dir /app --no-create-home --shell /usr/sbin/nologin app

COPY api/requirements.txt api/requirements.txt
RUN pip install --no-cache-dir --index-url "${TORCH_INDEX_URL}" "torch==${TORCH_VERSION}" \
 && pip install --no-cache-dir -r api/requirements.txt

# Only what serving needs: the library (with text_recognizer/artifacts/default.pt when bundled) and the API.
COPY text_recognizer/ text_recognizer/
COPY api/ api/

# Collections (api/collections): SQLite and page images in a volume the app user owns; mount one to keep them.
ENV TEXT_RECOGNIZER_DATA_DIR=/data
RUN mkdir /data && chown 10001:10001 /data
VOLUME /data

USER 10001:10001
EXPOSE 8000
# Readiness, not liveness: healthy once the model is loaded and warmed up (/health/ready answers 503 before).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/health/ready', timeout=4)"]
# The app writes JSON access logs itself; SIGTERM (docker stop) finishes in-flight requests for up to 10 s.
CMD ["uvicorn", "api.app:app", "--host", "0.0.0.0", "--port", "8000", "--no-server-header", "--no-access-log", \
     "--timeout-graceful-shutdown", "10"]
