# syntax=docker/dockerfile:1.7
#
# One image per service, from one Dockerfile:
#   docker build --build-arg SERVICE=patients -t clinic/patients:$(cat VERSION) .
# SERVICE is a name in packages/platform/services.json (the one list of services).
#
# The image starts the service (`node dist/server.js`); the same image runs the migrations
# (`node dist/db/migrate.js`) and, for gateway and audit, the admin CLI (`node dist/cli/admin.js`).
# See deploy/README.md.

# The base image by tag and digest: the digest is what is pulled, so a build today and one next month
# start from the same bytes. Refresh both together (deploy/README.md, "Images": Renovate, or
# `docker buildx imagetools inspect node:24-slim`); deploy/check.sh refuses a FROM without a digest.
ARG NODE_IMAGE=node:24-slim@sha256:cd84903a12dbd26b46f1f3b8144a2568c41c5d37ddd0c7a80a34c7a19786b35f

# ---------------------------------------------------------------------------------------------
# build: install the workspace from the lockfile, compile with tsc -b, and `pnpm deploy` the one
# service into /out with its production dependencies only.
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
ARG PNPM_VERSION=10.34.8
ENV CI=true
RUN npm install --global --no-fund --no-audit "pnpm@${PNPM_VERSION}" && pnpm --version
WORKDIR /src

# Dependencies first, from the lockfile alone, so this layer is shared by every service image
# and survives source edits.
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
RUN --mount=type=cache,id=clinic-pnpm-store,target=/pnpm/store \
    pnpm fetch --store-dir /pnpm/store

COPY . .
# --ignore-scripts: nothing the build or the services need has an install script (the ones
# allowed in pnpm-workspace.yaml serve the test tools), and the slim image has no compiler.
RUN --mount=type=cache,id=clinic-pnpm-store,target=/pnpm/store \
    pnpm install --offline --frozen-lockfile --ignore-scripts --store-dir /pnpm/store

ARG SERVICE
# SERVICE must be in packages/platform/services.json, the one list of services (naming.cjs reads it).
RUN node -e "const n=require('./packages/platform/naming.cjs').apps.map(s=>s.name);if(!n.includes(process.env.SERVICE)){console.error('build-arg SERVICE must be one of '+n.join(', ')+' (got \''+process.env.SERVICE+'\')');process.exit(1)}"

# tsc -b on the service follows its project references (packages/platform first).
RUN pnpm exec tsc -b "services/${SERVICE}"

# `pnpm deploy --prod`: the service's files and production dependencies only, workspace packages
# copied in (the workspace does not inject workspace packages, hence --legacy).
# Then the VERSION file: the platform reads ../../../VERSION from its own dist/, so it is copied
# where that resolves to; `node dist/...` (server, migrate, admin CLI, `docker exec`) then knows
# the version with no env. SERVICE_VERSION in the environment still wins.
RUN --mount=type=cache,id=clinic-pnpm-store,target=/pnpm/store \
    pnpm --filter "@clinic/${SERVICE}" deploy --prod --legacy --offline --store-dir /pnpm/store /out \
 && cd /out \
 && rm -rf src test jest.config.js tsconfig.json node_modules/.bin \
 && test -f dist/server.js && test -f dist/db/migrate.js \
 && cp /src/VERSION /out/VERSION \
 && node -e "const p=require('node:path'),f=require('node:fs');const d=p.dirname(require.resolve('@clinic/platform'));f.copyFileSync('/src/VERSION',p.resolve(d,'../../../VERSION'))" \
 && env -u SERVICE_VERSION node -e "process.stdout.write('version '+require('@clinic/platform').readVersion()+'\n')"

# ---------------------------------------------------------------------------------------------
# runtime: node, the deployed service, a non-root user. No compiler, no pnpm, no dev dependencies.
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ARG SERVICE
LABEL org.opencontainers.image.title="clinic-${SERVICE}" \
      org.opencontainers.image.description="Clinic API ${SERVICE} service"
# HOST: listen on every interface of the container (the services default to 127.0.0.1).
# NODE_ENV is not read by the services; configuration comes from the variables of DESIGN.md s6.
ENV SERVICE=${SERVICE} \
    HOST=0.0.0.0
WORKDIR /app
# Owned by root and not writable by the service user; var/ is the only writable path
# (comms writes .eml/.sms files under var/outbox when SMTP_URL / TWILIO_* are unset), and
# /var/lib/clinic the mount point of a service's data volume (audit's checkpoints), owned by the
# service user so that a new Docker volume mounted there is too.
COPY --from=build /out /app
RUN mkdir -p /app/var /var/lib/clinic && chown 1000:1000 /app/var /var/lib/clinic
# uid of the image's `node` user, numeric so Kubernetes runAsNonRoot can check it.
USER 1000:1000

# Port of this service: its <PREFIX>_PORT if set, else its default from services.json (the platform
# package, deployed with the service, exports both through @clinic/platform/naming).
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "const s=process.env.SERVICE,n=require('@clinic/platform/naming');const port=process.env[n.namesOf(s).env.port]||n.apps.find(x=>x.name===s).port;fetch('http://127.0.0.1:'+port+'/health/live',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

CMD ["node", "dist/server.js"]
