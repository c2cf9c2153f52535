#!/bin/sh
# The broker's per-service users, from definitions.json (users without passwords, vhost `clinic`,
# permissions, topic permissions, exchanges), then each user's password from the environment:
# clinic-<name> gets <NAME>_AMQP_PASSWORD. Safe to run again: the import resets the passwords, which
# are then set again. Compose runs it as the one-shot `broker-users` (rabbitmqctl of the broker's
# image, with the broker's Erlang cookie). By hand: RABBITMQ_NODE=rabbit@<host> sh users.sh.
set -eu

definitions=${DEFINITIONS:-$(dirname "$0")/definitions.json}
# RABBITMQ_NODE: the broker's node (rabbitmqctl's own default when unset).
ctl() { rabbitmqctl -q ${RABBITMQ_NODE:+-n "$RABBITMQ_NODE"} "$@"; }

users=$(grep -o '"name": *"clinic-[a-z0-9-]*"' "$definitions" | sed 's/.*"\(clinic-[a-z0-9-]*\)"/\1/' | sort -u)
[ -n "$users" ] || { echo "no clinic-<name> users in $definitions" >&2; exit 1; }
varOf() { echo "$(echo "${1#clinic-}" | tr 'a-z-' 'A-Z_')_AMQP_PASSWORD"; }
passwordOf() { printenv "$(varOf "$1")" || true; }
# Every password first: a missing one changes nothing on the broker.
for user in $users; do
  [ -n "$(passwordOf "$user")" ] || {
    echo "$(varOf "$user") is not set (the password of $user)" >&2
    exit 1
  }
done

ctl import_definitions "$definitions"
# The import is asynchronous: wait until every user exists, one listing per try (each rabbitmqctl
# starts an Erlang VM: seconds on a busy machine).
tries=0
while :; do
  listed=$(ctl list_users --no-table-headers | cut -f1)
  missing=
  for user in $users; do
    echo "$listed" | grep -qx "$user" || missing="$missing $user"
  done
  [ -n "$missing" ] || break
  tries=$((tries + 1))
  [ "$tries" -lt 30 ] || { echo "not there after the import:$missing" >&2; exit 1; }
  sleep 1
done
for user in $users; do
  # `--`: a password may begin with "-" (base64url does, one time in 64), which rabbitmqctl would
  # read as an option.
  ctl change_password "$user" -- "$(passwordOf "$user")"
  echo "$user: password set"
done
