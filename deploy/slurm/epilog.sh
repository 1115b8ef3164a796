#!/usr/bin/env bash
# firstfault from Slurm: the controller sends the job's end state once, the batch host ships the job's output.
#   slurm.conf:  Epilog=/etc/slurm/firstfault-epilog.sh            (compute nodes)
#                EpilogSlurmctld=/etc/slurm/firstfault-epilog.sh   (controller)
# Set FIRSTFAULT_URL=http://firstfault:8080 (+ FIRSTFAULT_API_TOKEN), or FIRSTFAULT_KAFKA_BOOTSTRAP=host:port.
# `firstfault collect slurm` reads StdOut/StdErr from `scontrol show job` and the end state, exit codes and nodes
# from `sacct`; each node ships its kernel log since the job started (journalctl -k, else dmesg), and extra
# per-node logs under $FIRSTFAULT_LOG_ROOT/<job id>/<host>/ when present.
# Never delays or fails the epilog (Slurm drains a node whose epilog fails or hangs): every call is killed after
# FIRSTFAULT_EPILOG_TIMEOUT seconds (default 60; firstfault itself gives up 5 s sooner and says why), the
# script always exits 0, and what could not be done goes to syslog (logger -t firstfault-epilog).
set -u
FIRSTFAULT=${FIRSTFAULT:-/opt/firstfault/bin/firstfault}
LOG_ROOT=${FIRSTFAULT_LOG_ROOT:-/shared/logs}
BOUND=${FIRSTFAULT_EPILOG_TIMEOUT:-60}
job=${SLURM_JOB_ID:-}
if [ -z "$job" ]; then exit 0; fi
dest=()
if [ -n "${FIRSTFAULT_URL:-}" ]; then dest=(--url "$FIRSTFAULT_URL"); fi
inner=$(( BOUND > 10 ? BOUND - 5 : BOUND ))

log() {
    if command -v logger >/dev/null 2>&1; then logger -t firstfault-epilog; else cat >/dev/null; fi
}
bounded() {  # timeout(1) kills a hung call; -k: SIGKILL 2 s after the SIGTERM
    timeout -k 2 "$BOUND" "$@" 2>&1 | log
}

if [ "${SLURM_SCRIPT_CONTEXT:-}" = epilog_slurmctld ]; then
    bounded "$FIRSTFAULT" collect slurm --job-id "$job" --what all --timeout "$inner" \
        ${SLURM_JOB_EXIT_CODE:+--exit-status "$SLURM_JOB_EXIT_CODE"} "${dest[@]}"
else
    host=$(hostname -s)
    bounded "$FIRSTFAULT" collect slurm --job-id "$job" --what logs --host "$host" --timeout "$inner" "${dest[@]}"
    dir="$LOG_ROOT/$job/$host"
    if [ -d "$dir" ]; then bounded "$FIRSTFAULT" ship --job "$job" --host "$host" "${dest[@]}" "$dir"; fi
fi
exit 0  # never fail the epilog
