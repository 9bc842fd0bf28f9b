# Production image: `toolwire serve` on /app/proxy.yaml, port 8000, as a non-root user.
#
#   docker build -t toolwire .
#   docker run -p 8000:8000 -v $PWD/proxy.yaml:/app/proxy.yaml:ro \
#       -e TOOLWIRE_MASTER_KEY=... toolwire
#
# The server binds 0.0.0.0 inside the container so the published port reaches it: with no
# `auth:` section in the configuration anyone who can reach that port can use every tool,
# so publish it only on a trusted network or configure client keys (see the README).
# Inside the container 127.0.0.1 is the container itself: an upstream or MCP server on the
# host is `host.docker.internal` (or the host's address), not 127.0.0.1.

# Build stage: the package and its dependencies into a virtual environment.
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/toolwire
COPY pyproject.toml README.md ./
COPY proxy ./proxy
COPY registry ./registry
COPY policies ./policies
ARG EXTRAS=""
RUN /opt/toolwire/bin/pip install ".${EXTRAS:+[$EXTRAS]}"

# Run stage: the environment, the default configuration and the example tools; no build
# tools, no sources beyond what runs.
FROM python:3.11-slim
ENV PATH=/opt/toolwire/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin toolwire
WORKDIR /app
COPY --from=build /opt/toolwire /opt/toolwire
COPY proxy.yaml ./
COPY examples ./examples
USER 10001
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status != 200)"]
# SIGTERM (docker stop) drains: running turns finish within server.drain_s (30 s by
# default) while new requests get 503; give `docker stop` at least that long (--time 35).
STOPSIGNAL SIGTERM
CMD ["toolwire", "serve", "--config", "/app/proxy.yaml", "--host", "0.0.0.0", "--port", "8000"]
