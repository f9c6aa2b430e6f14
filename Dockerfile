# LeadGreen API: `leadgreen serve` on SQLite in /data, non-root, rate-limited, with a health check,
# and GraphiQL served from the image's own assets.

# GraphiQL (web/graphiql/): the locked npm packages, bundled into static files by its build.
FROM node:20.20.2-bookworm-slim AS graphiql
WORKDIR /web/graphiql
COPY web/graphiql/package.json web/graphiql/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY web/graphiql/ ./
RUN node build.mjs /graphiql

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LEADGREEN_HOST=0.0.0.0 \
    LEADGREEN_PORT=8000 \
    LEADGREEN_DATABASE_URL=/data/leadgreen.db \
    LEADGREEN_RATE_LIMIT=true

# git: `leadgreen follow` keeps a mirror of the upstream repository. No version pin: Debian's
# stable updates replace a pinned version within weeks; the base image's release is the pin.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# The locked dependencies and build backend, every file checked against its hash (scripts/lock),
# in a layer of their own; then the project alone, built with that backend.
COPY requirements.lock ./
RUN pip install --no-cache-dir --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY analysis ./analysis
COPY db ./db
COPY graph ./graph
COPY --from=graphiql /graphiql ./graph/server/static/graphiql
RUN pip install --no-cache-dir --no-deps --no-build-isolation . \
    && useradd --system --uid 10001 --home-dir /data leadgreen \
    && mkdir -p /data && chown leadgreen /data

USER 10001
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]
CMD ["leadgreen", "serve"]
