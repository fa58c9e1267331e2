#!/usr/bin/env bash
# Make sure a Docker engine answers: install Debian's docker.io if there is none, start
# dockerd if it is not running, wait until it answers. Idempotent; needs root for the install.
set -euo pipefail
# bubblewrap isolates the local backend (no network, read-only host view); best effort.
if ! command -v bwrap >/dev/null 2>&1; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } >/dev/null 2>&1 \
    || echo "ensure_docker: could not install bubblewrap; the local sandbox backend runs without it" >&2
fi
if docker info >/dev/null 2>&1; then exit 0; fi
if ! command -v dockerd >/dev/null 2>&1; then
  echo "ensure_docker: installing Debian's docker.io" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io debootstrap >/dev/null
fi
command -v debootstrap >/dev/null 2>&1 || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
if ! pgrep -x dockerd >/dev/null 2>&1; then
  echo "ensure_docker: starting dockerd (log: /var/log/fixrl-dockerd.log)" >&2
  # own session: stopping the job that ran `make` must not take the daemon with it
  setsid nohup dockerd >/var/log/fixrl-dockerd.log 2>&1 </dev/null &
fi
for _ in $(seq 1 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "ensure_docker: dockerd did not answer within 60 s; see /var/log/fixrl-dockerd.log" >&2
exit 1
