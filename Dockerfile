# LeadGreen API: `leadgreen serve` on SQLite in /data, non-root, rate-limited, with a health check.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LEADGREEN_HOST=0.0.0.0 \
    LEADGREEN_PORT=8000 \
    LEADGREEN_DATABASE_URL=/data/leadgreen.db \
    LEADGREEN_RATE_LIMIT=true

WORKDIR /app
COPY pyproject.toml constraints.txt README.md ./
COPY analysis ./analysis
COPY db ./db
COPY graph ./graph
RUN pip install --no-cache-dir -c constraints.txt . \
    && useradd --system --uid 10001 --home-dir /data leadgreen \
    && mkdir -p /data && chown leadgreen /data

USER 10001
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]
CMD ["leadgreen", "serve"]
