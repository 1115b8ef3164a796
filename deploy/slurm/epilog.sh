#!/usr/bin/env bash
# firstfault from Slurm: each node ships its own logs, the controller sends the job's end state once.
#   slurm.conf:  Epilog=/etc/slurm/firstfault-epilog.sh            (compute nodes)
#                EpilogSlurmctld=/etc/slurm/firstfault-epilog.sh   (controller)
# Set FIRSTFAULT_KAFKA_BOOTSTRAP=host:port, or FIRSTFAULT_URL=http://firstfault:8080 (+ FIRSTFAULT_API_TOKEN).
# Logs are expected under $FIRSTFAULT_LOG_ROOT/<job id>/<host>/ (rank3.log, dmesg.log, ...): adapt to your site.
set -u
FIRSTFAULT=${FIRSTFAULT:-/opt/firstfault/bin/firstfault}
LOG_ROOT=${FIRSTFAULT_LOG_ROOT:-/shared/logs}
job=${SLURM_JOB_ID:?not run by Slurm}
dest=()
if [ -n "${FIRSTFAULT_URL:-}" ]; then dest=(--url "$FIRSTFAULT_URL"); fi

if [ "${SLURM_SCRIPT_CONTEXT:-}" = epilog_slurmctld ]; then
    status=${SLURM_JOB_EXIT_CODE:-0}          # a wait(2) status: exit code << 8, or the killing signal
    code=$(( status >> 8 )); signal=$(( status & 127 ))
    if [ "$signal" -ne 0 ]; then code=-$signal; fi
    state=failed; if [ "$status" -eq 0 ]; then state=succeeded; fi
    hosts=$(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null)
    batch_host=${hosts%%$'\n'*}                # the job script ran on the first node
    host_args=(); for h in $hosts; do host_args+=(--host "$h"); done
    timeout 60 "$FIRSTFAULT" ship --job "$job" --state "$state" --scheduler slurm "${host_args[@]}" \
        ${SLURM_CLUSTER_NAME:+--cluster "$SLURM_CLUSTER_NAME"} ${batch_host:+--exit-code "$batch_host=$code"} \
        ${SLURM_JOB_PARTITION:+--label "partition=$SLURM_JOB_PARTITION"} "${dest[@]}"
else
    host=$(hostname -s)
    dir="$LOG_ROOT/$job/$host"
    if [ -d "$dir" ]; then timeout 300 "$FIRSTFAULT" ship --job "$job" --host "$host" "${dest[@]}" "$dir"; fi
fi
exit 0  # never fail the epilog: Slurm drains a node whose epilog fails
