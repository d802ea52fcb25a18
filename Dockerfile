# One image for the API, the worker, the example MCP servers and the demo model; the command picks the
# role (see docker-compose.yml). Two stages: the build has the dev dependencies (TypeScript, the
# workflow bundler's inputs); the image has production dependencies only, the compiled code, the
# prebuilt workflow bundle and the example data. No tests, no sources.
# An exact Node release; to pin it by digest, or to update it: README, "Updating images"
# (docker compose build --build-arg NODE_IMAGE=node:22.x.y-bookworm-slim@sha256:...).
ARG NODE_IMAGE=node:22.23.3-bookworm-slim
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY examples ./examples
RUN npx tsc -p tsconfig.json && node dist/src/cli/bundle-workflows.js

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
# jemalloc under every process of the image (decision 0046): glibc's malloc keeps the native memory a
# load peak took, so a replica's RSS rose in steps it never came down from; jemalloc returns it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libjemalloc2 \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(find /usr/lib -name libjemalloc.so.2 | head -n 1)" /usr/local/lib/libjemalloc.so.2 \
 && test -f /usr/local/lib/libjemalloc.so.2
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
# The example servers the stack runs (not the test-only OAuth example, which needs express).
COPY --from=build /app/dist/examples/servers/school ./dist/examples/servers/school
COPY --from=build /app/dist/examples/servers/notes-server.js /app/dist/examples/servers/http-util.js ./dist/examples/servers/
COPY console ./console
COPY examples/demo-model ./examples/demo-model
COPY examples/host.json examples/policy.json examples/audit-redaction.json ./examples/
# The compose stack mounts the user's files over these.
COPY deploy/config/mcp.json examples/host.json examples/policy.json ./config/
ENV MCP_CONFIG=/app/config/mcp.json HOST_CONFIG=/app/config/host.json POLICY_FILE=/app/config/policy.json
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node
CMD ["node", "dist/src/worker.js"]
