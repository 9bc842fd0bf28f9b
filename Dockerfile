# Production image: `toolwire serve` on /app/proxy.yaml, port 8000.
# Mount your own proxy.yaml (and tool modules) over /app to configure it.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md proxy.yaml ./
COPY proxy ./proxy
COPY registry ./registry
COPY policies ./policies
COPY examples ./examples
RUN pip install --no-cache-dir . \
    && useradd --system --uid 10001 toolwire
USER toolwire
EXPOSE 8000
CMD ["toolwire", "serve", "--config", "/app/proxy.yaml", "--host", "0.0.0.0"]
