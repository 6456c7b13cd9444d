# One image for the API and the worker; docker-compose.yml picks the entry point.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY schema ./schema
COPY src ./src
COPY test ./test
COPY bench ./bench
COPY bin ./bin
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
# package.json's config.nodeFlags (npm start's): a young generation of 64 MiB semi-spaces
# took 5-21% less of the platform's CPU at full load than Node's 16 MiB (ad hoc, docs/decisions/performance.md).
ENV NODE_OPTIONS=--max-semi-space-size=64
# package.json's config.mallocArenaMax: two glibc malloc arenas, not one per thread of the
# SDK's Rust core: 176 MiB at idle against 195 (docs/decisions/performance.md).
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
USER node
EXPOSE 8080
CMD ["node", "dist/src/main.js", "api"]
