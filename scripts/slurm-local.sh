#!/usr/bin/env bash
# A private single-node Slurm cluster on this machine, for trying `ma run` under srun/salloc/sbatch and for
# the test suite's Slurm tests: its own munged, slurmctld and slurmd (the distribution's packages: munge,
# slurmctld, slurmd, slurm-client), everything under one directory, on free ports, as root.
#
#   scripts/slurm-local.sh start [DIR]   start it (DIR default: $TMPDIR/ma-slurm); prints `export SLURM_CONF=...`
#   scripts/slurm-local.sh stop [DIR]    cancel its jobs, stop its daemons, wait until they are gone
#   scripts/slurm-local.sh status [DIR]  sinfo of it
#
# Then: export SLURM_CONF=DIR/slurm.conf; srun -n 2 hostname; salloc -n 2 ...; sbatch ...
#
# Made to run in a container without systemd or cgroup delegation: process tracking by the parent-process
# tree (proctrack/linuxproc), no task plugin binding or cgroups (task/none), no accounting. The node claims
# MA_SLURM_CPUS CPUs (default 8, whatever the machine has; SlurmdParameters=config_overrides) so that
# small MPI tests of 3 or 4 ranks fit in one allocation on a 2-core machine, as they do under mpiexec.
set -euo pipefail

action=${1:-}
dir=${2:-${TMPDIR:-/tmp}/ma-slurm}
case "$action" in start|stop|status) ;; *) echo "usage: $0 start|stop|status [DIR]" >&2; exit 2 ;; esac
export SLURM_CONF="$dir/slurm.conf"

for program in munged slurmctld slurmd srun sinfo scancel; do
  command -v "$program" >/dev/null 2>&1 || {
    echo "slurm-local: $program not found: apt-get install munge slurmctld slurmd slurm-client" >&2; exit 1; }
done
if [ "$(id -u)" -ne 0 ]; then
  echo "slurm-local: needs root (slurmd starts the tasks as their user)" >&2; exit 1
fi

# Wait up to $1 seconds for the command after it to succeed.
wait_for() {
  local seconds=$1; shift
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

pid_of() { [ -s "$dir/$1.pid" ] && cat "$dir/$1.pid"; }
# A process that has not ended (a zombie has: the daemons are reparented to init, which reaps them later).
running() { [ -r "/proc/$1/stat" ] && [ "$(cut -d ' ' -f 3 "/proc/$1/stat")" != Z ]; }
alive() { local pid; pid=$(pid_of "$1") && running "$pid"; }
gone() { ! running "$1"; }
# Each job step's slurmstepd keeps a socket in the spool directory until it has cleaned up.
no_steps() { [ -z "$(find "$dir/spool" -maxdepth 1 -type s -print -quit)" ]; }

stop_daemon() {
  local pid  # read once: a daemon removes its PID file before it has ended
  if pid=$(pid_of "$1") && running "$pid"; then
    kill "$pid"
    wait_for 30 gone "$pid" || { kill -9 "$pid" 2>/dev/null || true; wait_for 5 gone "$pid" || true; }
  fi
  rm -f "$dir/$1.pid"
}

stop() {
  [ -f "$SLURM_CONF" ] || return 0
  if alive slurmctld; then  # no job step may outlive its slurmd
    scancel --full --quiet --partition=local 2>/dev/null || true
    wait_for 20 sh -c '[ -z "$(squeue --noheader --partition=local 2>/dev/null)" ]' ||
      echo "slurm-local: jobs still running after 20 s: $(squeue --noheader --partition=local)" >&2
  fi
  wait_for 20 no_steps || echo "slurm-local: job steps still cleaning up after 20 s: $dir/spool" >&2
  stop_daemon slurmd
  stop_daemon slurmctld
  stop_daemon munged
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start() {
  if alive slurmctld && alive slurmd; then
    echo "export SLURM_CONF=$SLURM_CONF"; return 0
  fi
  stop
  local node cpus ctld_port d_port
  node=$(hostname -s)
  cpus=${MA_SLURM_CPUS:-8}
  ctld_port=$(free_port)
  d_port=$(free_port)
  while [ "$d_port" = "$ctld_port" ]; do d_port=$(free_port); done
  mkdir -p "$dir"/{munge,state,spool,log,tmp}
  chmod 755 "$dir" "$dir/munge"  # munged refuses a socket directory others cannot reach, and a key others can
  [ -s "$dir/munge/munge.key" ] || mungekey --create --keyfile="$dir/munge/munge.key"
  chmod 600 "$dir/munge/munge.key"
  : > "$dir/plugstack.conf"  # no SPANK plugins from the system's configuration
  cat > "$SLURM_CONF" <<EOF
ClusterName=ma-local
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
TmpFS=$dir/tmp
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
# Job ids differ from those of another cluster of this script on the machine (pmix names /tmp files by them).
FirstJobId=$((ctld_port * 100))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=10
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
  munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --log-file="$dir/log/munged.log" --pid-file="$dir/munged.pid" --seed-file="$dir/munge/munged.seed"
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"
  if ! wait_for 60 sh -c '[ "$(sinfo --noheader --responding --states=idle --format=%t 2>/dev/null)" = idle ]'; then
    echo "slurm-local: the node did not come up within 60 s; the logs are in $dir/log" >&2
    tail -n 5 "$dir"/log/*.log >&2 || true
    stop
    exit 1
  fi
  echo "export SLURM_CONF=$SLURM_CONF"
}

case "$action" in
  start) start ;;
  stop) stop ;;
  status) sinfo ;;
esac
