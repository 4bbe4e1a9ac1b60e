# Baton service image: Node 24, production dependencies only, the compiled service, CLI and dashboard (/ui).
#   docker build -t baton .
#   docker run -p 3000:3000 -v baton-data:/app/data baton
#   docker run --rm -v baton-data:/app/data baton baton tokens create --app shop
# No example worker runs and no token is printed unless asked (BATON_BOOTSTRAP_TOKEN=true).

FROM node:24-bookworm-slim AS build
WORKDIR /app
# Node 24 uses better-sqlite3 13's prebuilt binary; the toolchain builds the optional Node 20 copy (unused here).
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# The SDK is a workspace package (`@baton/sdk`: file:packages/sdk) that npm links in; it is
# compiled from src/sdk by `npm run build`, which the examples import it through.
COPY packages/sdk/package.json packages/sdk/README.md ./packages/sdk/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json tsconfig.sdk.json ./
COPY src ./src
COPY examples ./examples
COPY test/support/fixtures ./test/support/fixtures
COPY ui ./ui
COPY scripts ./scripts
# The SDK, the service and CLI, the service's bundle (dist/src/bundle) and the dashboard (vite, into dist/ui).
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    EVENT_STORE_URL=sqlite:/app/data/baton.db \
    BATON_EXAMPLE_WORKER=false \
    BATON_BOOTSTRAP_TOKEN=false \
    SHUTDOWN_GRACE_MS=25000
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/examples ./dist/examples
COPY --from=build /app/dist/ui ./dist/ui
# node_modules/@baton/sdk links here: the service imports the examples, which import the SDK.
COPY --from=build /app/packages/sdk/package.json ./packages/sdk/
COPY --from=build /app/packages/sdk/dist ./packages/sdk/dist
# `baton ...` inside the container runs the compiled CLI.
RUN ln -s /app/dist/src/cli/baton.js /usr/local/bin/baton \
  && chmod +x /app/dist/src/cli/baton.js \
  && mkdir -p /app/data && chown node:node /app/data
USER node
VOLUME ["/app/data"]
EXPOSE 3000
# node:*-slim has no curl: the probe is Node's own fetch. Ready only once the read models have
# caught up with the log (a long log on a new volume takes a while: about 4 s per million events
# on the bench machine); failures within the start period do not count, and the first success
# ends it, so a long one costs nothing.
HEALTHCHECK --interval=10s --timeout=3s --start-period=300s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM drains (see docs/OPERATIONS.md); exec form so node is PID 1's direct child of the runtime's init.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]
