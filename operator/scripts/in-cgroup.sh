#!/bin/sh
# in-cgroup.sh CGROUP_DIR COMMAND [ARG...]: runs COMMAND as a member of the (cgroup v1) CGROUP_DIR,
# as a container runtime does with a container's process: a JVM started this way sizes its heap
# from that cgroup's memory limit.
set -e
[ "$#" -ge 2 ] || { echo "usage: in-cgroup.sh CGROUP_DIR COMMAND [ARG...]" >&2; exit 2; }
echo $$ >"$1/cgroup.procs"
shift
exec "$@"
