# One image per service, from one Dockerfile:
#   docker build --build-arg SERVICE=patients -t clinic/patients:$(cat VERSION) .
# SERVICE is a name in packages/platform/services.json (the one list of services). The build stage
# does not depend on SERVICE: it compiles and deploys every service once, so building the eight
# images builds it once and each image adds only its runtime stage. Plain Dockerfile syntax (no
# `# syntax=` frontend to pull, no cache mounts): the classic builder and BuildKit build it alike.
#
# The image starts the service (`node dist/server.js`); the same image runs the migrations
# (`node dist/db/migrate.js`) and, for gateway and audit, the admin CLI (`node dist/cli/admin.js`).
# See deploy/README.md.

# The base image by tag and digest: the digest is what is pulled, so a build today and one next month
# start from the same bytes. Refresh both together (deploy/README.md, "Images": Renovate, or
# `docker buildx imagetools inspect node:24-slim`); deploy/check.sh refuses a FROM without a digest.
ARG NODE_IMAGE=node:24-slim@sha256:cd84903a12dbd26b46f1f3b8144a2568c41c5d37ddd0c7a80a34c7a19786b35f

# ---------------------------------------------------------------------------------------------
# build: install the workspace from the lockfile, compile with tsc -b, and `pnpm deploy` every
# service into /out/<service> with its production dependencies only.
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
ARG PNPM_VERSION=10.34.8
ENV CI=true
RUN npm install --global --no-fund --no-audit "pnpm@${PNPM_VERSION}" && pnpm --version
WORKDIR /src

# Dependencies first, from the lockfile alone, so this layer survives source edits.
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
RUN pnpm fetch --store-dir /pnpm/store

COPY . .
# --ignore-scripts: nothing the build or the services need has an install script (the ones
# allowed in pnpm-workspace.yaml serve the test tools), and the slim image has no compiler.
RUN pnpm install --offline --frozen-lockfile --ignore-scripts --store-dir /pnpm/store

# tsc -b of the services follows their project references (packages/platform first). Then
# `pnpm deploy --prod` of each into /out/<service>: its files and production dependencies only,
# workspace packages copied in (the workspace does not inject workspace packages, hence --legacy).
# Then the VERSION file: the platform reads ../../../VERSION from its own dist/, so it is copied
# where that resolves to; `node dist/...` (server, migrate, admin CLI, `docker exec`) then knows
# the version with no env. SERVICE_VERSION in the environment still wins.
RUN set -eu; \
    services=$(node -p "require('./packages/platform/naming.cjs').apps.map(s=>s.name).join(' ')"); \
    pnpm exec tsc -b $(for s in $services; do echo "services/$s"; done); \
    for s in $services; do \
      pnpm --filter "@clinic/$s" deploy --prod --legacy --prefer-offline --store-dir /pnpm/store "/out/$s"; \
      cd "/out/$s"; \
      rm -rf src test jest.config.js tsconfig.json node_modules/.bin; \
      test -f dist/server.js && test -f dist/db/migrate.js; \
      cp /src/VERSION VERSION; \
      node -e "const p=require('node:path'),f=require('node:fs');const d=p.dirname(require.resolve('@clinic/platform'));f.copyFileSync('/src/VERSION',p.resolve(d,'../../../VERSION'))"; \
      env -u SERVICE_VERSION node -e "process.stdout.write('$s version '+require('@clinic/platform').readVersion()+'\\n')"; \
      cd /src; \
    done

# ---------------------------------------------------------------------------------------------
# runtime: node, the deployed service, a non-root user. No compiler, no pnpm, no dev dependencies.
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# What does not depend on SERVICE first: those steps are built once and shared by the eight images
# (on a storage driver that copies every layer, as vfs does, each step after the service's files
# would copy them again). The service's files come last.
# HOST: listen on every interface of the container (the services default to 127.0.0.1).
# NODE_ENV is not read by the services; configuration comes from the variables of DESIGN.md s6.
ENV HOST=0.0.0.0
WORKDIR /app
# /app and what COPY puts there are owned by root and not writable by the service user; var/ is the
# only writable path (comms writes .eml/.sms files under var/outbox when SMTP_URL / TWILIO_* are
# unset), and /var/lib/clinic the mount point of a service's data volume (audit's checkpoints),
# owned by the service user so that a new Docker volume mounted there is too.
RUN mkdir -p /app/var /var/lib/clinic && chown 1000:1000 /app/var /var/lib/clinic
# uid of the image's `node` user, numeric so Kubernetes runAsNonRoot can check it.
USER 1000:1000

# Port of this service: its <PREFIX>_PORT if set, else its default from services.json (the platform
# package, deployed with the service, exports both through @clinic/platform/naming).
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "const s=process.env.SERVICE,n=require('@clinic/platform/naming');const port=process.env[n.namesOf(s).env.port]||n.apps.find(x=>x.name===s).port;fetch('http://127.0.0.1:'+port+'/health/live',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

CMD ["node", "dist/server.js"]

ARG SERVICE
LABEL org.opencontainers.image.title="clinic-${SERVICE}" \
      org.opencontainers.image.description="Clinic API ${SERVICE} service"
ENV SERVICE=${SERVICE}
# SERVICE must be a name of packages/platform/services.json: the build stage made /out/<each>.
COPY --from=build /out/${SERVICE} /app
