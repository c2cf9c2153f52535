#!/bin/sh
# The official postgres image's contract, for the Debian stand-in: on an empty PGDATA, initdb as
# POSTGRES_USER (password POSTGRES_PASSWORD), host connections by POSTGRES_HOST_AUTH_METHOD
# (scram-sha-256 unless set), database POSTGRES_DB, the scripts of /docker-entrypoint-initdb.d;
# then `postgres` as the postgres user.
set -eu
if [ "${1#-}" != "$1" ]; then set -- postgres "$@"; fi
if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  POSTGRES_USER=${POSTGRES_USER:-postgres}
  POSTGRES_DB=${POSTGRES_DB:-$POSTGRES_USER}
  auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
    echo 'Error: Database is uninitialized and superuser password is not specified.' >&2
    echo '       Set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust.' >&2
    exit 1
  fi
  pwfile=
  if [ -n "${POSTGRES_PASSWORD:-}" ]; then
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  fi
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of arguments
  initdb --username="$POSTGRES_USER" ${pwfile:+--pwfile="$pwfile"} --encoding=UTF8 --locale=C.UTF-8 \
    ${POSTGRES_INITDB_ARGS:-} -D "$PGDATA"
  [ -z "$pwfile" ] || rm -f "$pwfile"
  printf '\nhost all all all %s\n' "$auth" >> "$PGDATA/pg_hba.conf"
  printf "\nlisten_addresses = '*'\n" >> "$PGDATA/postgresql.conf"
  # A server on the socket only while the database and the init scripts are made.
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
  export PGUSER="$POSTGRES_USER" PGPASSWORD="${POSTGRES_PASSWORD:-}"
  if [ "$POSTGRES_DB" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --dbname postgres --set db="$POSTGRES_DB" <<'SQL'
CREATE DATABASE :"db";
SQL
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "running $f"; . "$f" ;;
      *.sql) echo "running $f"; psql -v ON_ERROR_STOP=1 --dbname "$POSTGRES_DB" -f "$f" ;;
      *) ;;
    esac
  done
  unset PGPASSWORD
  pg_ctl -D "$PGDATA" -m fast -w stop
  echo 'PostgreSQL init process complete; ready for start up.'
fi
exec "$@"
