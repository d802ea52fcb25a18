# One image for the worker, the API and the demo model; the command picks the role.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY examples ./examples
COPY tests ./tests
COPY bench ./bench
RUN npx tsc -p tsconfig.json && node dist/src/cli/bundle-workflows.js && mkdir -p /app/.data && chown node:node /app/.data
# Dev dependencies stay: tsc built dist/, and the example config runs server-everything from them.
ENV NODE_ENV=production
USER node
CMD ["node", "dist/src/worker.js"]
