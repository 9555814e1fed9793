#!/usr/bin/env bash
# apt-get.sh ARGS...: apt-get, one at a time on this machine. The scripts and
# Makefile targets that install Debian's packages when they are missing call
# it instead of apt-get: .ci/run runs stages side by side, and a second
# apt-get update fails at once on the first's lock instead of waiting for it
# (apt 2.6: "Could not get lock /var/lib/apt/lists/lock").
exec flock -w 1800 /tmp/plantstore-apt.lock apt-get "$@"
