#!/bin/sh
# The official rabbitmq image's contract, for the Debian stand-in.
set -eu
if [ "$(id -u)" = 0 ]; then
  if [ -n "${RABBITMQ_ERLANG_COOKIE:-}" ]; then
    printf '%s' "$RABBITMQ_ERLANG_COOKIE" > /var/lib/rabbitmq/.erlang.cookie
    chmod 600 /var/lib/rabbitmq/.erlang.cookie
  fi
  if [ "$1" = rabbitmq-server ]; then
    # What the official image configures: listen everywhere; guest may log in from other hosts;
    # the default user, password and vhost from the environment.
    {
      echo 'loopback_users.guest = false'
      echo 'listeners.tcp.default = 5672'
      echo 'management.tcp.port = 15672'
      [ -z "${RABBITMQ_DEFAULT_USER:-}" ] || echo "default_user = $RABBITMQ_DEFAULT_USER"
      [ -z "${RABBITMQ_DEFAULT_PASS:-}" ] || echo "default_pass = $RABBITMQ_DEFAULT_PASS"
      [ -z "${RABBITMQ_DEFAULT_VHOST:-}" ] || echo "default_vhost = $RABBITMQ_DEFAULT_VHOST"
    } > /etc/rabbitmq/conf.d/10-defaults.conf
  fi
  chown -R rabbitmq:rabbitmq /var/lib/rabbitmq /etc/rabbitmq/conf.d/10-defaults.conf 2>/dev/null || true
  exec setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups "$0" "$@"
fi
exec "$@"
