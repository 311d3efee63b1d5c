#!/usr/bin/env bash
# A real Slurm on loopback for the launch and control-plane tests (this host, plus extra slurmd "nodes").
#
#   tests/infra/slurm.sh up      start munged, MariaDB, slurmdbd, slurmctld and one slurmd per node (no-op
#                                when already up)
#   tests/infra/slurm.sh down    stop them by their pid files
#   tests/infra/slurm.sh status  exit 0 when every daemon runs, accounting answers and every node is
#                                usable, else 1
#   tests/infra/slurm.sh env     print the KEY=VALUE lines a client needs (SLURM_CONF, user, ...)
#   tests/infra/slurm.sh ctld stop|start|pause|resume
#                                the controller alone, for the tests of a controller away mid-study: stop
#                                (SIGTERM: it saves its state and exits; the jobs go on on their nodes), start
#                                (again, from its saved state; returns once it answers), pause/resume
#                                (SIGSTOP/SIGCONT: a controller that hangs; requests time out)
#
# Installs nothing: the Debian packages slurmctld slurmd slurm-client slurmdbd munge mariadb-server must
# already be there (tests/infra/install.sh).
# Must run as root. Everything lives under $HLM_SLURM_DIR (default /tmp/hlm-slurm, see env.sh).
#
# Changes it makes outside that directory, so that jobs can run as an unprivileged user:
#   - creates the test user $HLM_TEST_USER when missing (password field '*': no password, keys allowed),
#     another account $HLM_TEST_PEER (locked: no login) and the group $HLM_TEST_GROUP with both as members,
#     for the tests of who may read a study's files;
#   - `chmod o+x` on every directory above the Python interpreter (e.g. /root, which is 0700 when Python
#     lives under /root/.pyenv; for a virtual environment both its bin/ and the base interpreter its
#     python3 links to) and above this checkout, so the test user can run the project's Python with its
#     packages and import the project (it warns when the checkout itself is not readable by others);
#   - writes ~$HLM_TEST_USER/.hlm_env (PATH with that interpreter) and sources it from the user's
#     ~/.bash_profile and ~/.bashrc, so batch scripts (`bash -l`) and SSH commands find it;
#   - points /etc/slurm/slurm.conf at the generated file when that path is free, so `sbatch` works
#     without SLURM_CONF too (clients that set SLURM_CONF, like the test fixtures, do not depend on it).
#
# Nodes: the first node is this host (partition $HLM_SLURM_PARTITION, the default, holds only it: a
# single-node cluster for every test that does not ask for more); with
# HLM_SLURM_NODES=N > 1 (default 2) nodes <host>-2..N run as extra slurmd daemons on this host (ports
# $HLM_SLURM_D_PORT+i) and partition $HLM_SLURM_MULTI_PARTITION holds all of them, for multi-node jobs.
#
# Site-shaped nodes (MeluXina, sbatch_templates/sites/meluxina.toml), more slurmd daemons on this host that
# declare what the site's nodes have (SlurmdParameters=config_overrides lets a node declare more than the
# host has): partition `gpu` = HLM_SLURM_GPU_NODES (default 2) nodes mel2001.. of 64 cores (2 sockets x 32,
# 2 threads each: 128 CPUs), 512 GB and gpu:4; partition `cpu` = HLM_SLURM_CPU_NODES (default 1) nodes
# mel0001.. of 128 cores (256 CPUs), 512 GB, no GPU. Both MaxTime=2-00:00:00. The first nodes keep this
# host's real CPU count, so jobs there are scheduled as before.
#
# Accounting (tests/infra/accounting.sh): slurmdbd on a MariaDB, AccountingStorageEnforce=associations,limits,
# qos: a job's account and QOS must exist and be the user's, and a --time over the QOS's MaxWall is refused
# by sbatch. Jobs without -A/-q get account hlm and QOS normal (no limit).
#
# Fake GPUs: gres.conf lists character devices made with `mknod c 1 3` (clones of /dev/null); Slurm then
# sets CUDA_VISIBLE_DEVICES for --gpus-per-node / --gres=gpu:N jobs and refuses more than exist at submit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"

: "${HLM_SLURM_GPUS:=4}"          # fake GPUs per node
: "${HLM_SLURM_CPUS:=}"           # CPUs each node declares (default: what `slurmd -C` reports)
: "${HLM_SLURM_PARTITION:=debug}" # the default partition (this host only)
: "${HLM_SLURM_CTLD_PORT:=6817}"
: "${HLM_SLURM_D_PORT:=6818}"     # first node's slurmd port; node i uses this + i - 1
: "${HLM_SLURM_NODES:=2}"         # slurmd daemons (nodes) on this host
: "${HLM_SLURM_MULTI_PARTITION:=multi}"
: "${HLM_SLURM_GPU_NODES:=2}"     # site-shaped GPU nodes (partition gpu)
: "${HLM_SLURM_CPU_NODES:=1}"     # site-shaped CPU nodes (partition cpu)

dir=$HLM_SLURM_DIR
user=$HLM_TEST_USER
conf=$dir/etc/slurm.conf

die() { echo "slurm.sh: $*" >&2; exit "${2:-1}"; }

pid_alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# shellcheck source=accounting.sh
source "$here/accounting.sh"

python_bin_dir() {
    # The directory of the interpreter that runs the tests, as it was started: a virtual environment's
    # bin/ stays itself (resolving its python symlink would leave the venv and lose its packages), and a
    # pyenv shim is never seen here (sys.executable is the interpreter the shim started).
    if [[ -n "${HLM_PYTHON:-}" ]]; then
        dirname "$HLM_PYTHON"
    else
        python3 -c 'import os, sys; print(os.path.dirname(os.path.abspath(sys.executable)))'
    fi
}

python_real_dir() {
    # Where the interpreter binary really lives (a venv's python is a symlink into its base installation).
    "${HLM_PYTHON:-$(python_bin_dir)/python3}" -c 'import os, sys; print(os.path.dirname(os.path.realpath(sys.executable)))'
}

status() {
    local n
    pid_alive "$dir/run/munged.pid" && pid_alive "$dir/run/slurmctld.pid" || return 1
    for n in $(all_node_names); do pid_alive "$dir/run/slurmd-$n.pid" || return 1; done
    db_alive && dbd_alive && all_nodes_up
}

print_env() {
    echo "SLURM_CONF=$conf"
    echo "HLM_SLURM_DIR=$dir"
    echo "HLM_TEST_USER=$user"
    echo "HLM_TEST_PEER=$HLM_TEST_PEER"
    echo "HLM_TEST_GROUP=$HLM_TEST_GROUP"
    echo "HLM_SLURM_PARTITION=$HLM_SLURM_PARTITION"
    echo "HLM_SLURM_MULTI_PARTITION=$( (( HLM_SLURM_NODES > 1 )) && echo "$HLM_SLURM_MULTI_PARTITION")"
    echo "HLM_SLURM_NODES=$HLM_SLURM_NODES"
    echo "HLM_SLURM_GPUS=$HLM_SLURM_GPUS"
    echo "HLM_SLURM_ACCOUNTING=slurmdbd"
    echo "HLM_SLURM_SITE_PARTITIONS=$(site_partitions)"
    echo "HLM_PYTHON_BIN=$(python_bin_dir)"
}

node_names() {
    local host i
    host=$(hostname -s)
    [[ "$HLM_SLURM_NODES" =~ ^[1-9][0-9]*$ ]] || die "HLM_SLURM_NODES must be a positive number, got '$HLM_SLURM_NODES'" 2
    echo "$host"
    for ((i = 2; i <= HLM_SLURM_NODES; i++)); do echo "$host-$i"; done
}

site_node_names() {
    # The site-shaped nodes: MeluXina's GPU nodes are mel2001.., its CPU nodes mel0001..
    local i
    [[ "$HLM_SLURM_GPU_NODES" =~ ^[0-9]+$ && "$HLM_SLURM_CPU_NODES" =~ ^[0-9]+$ ]] \
        || die "HLM_SLURM_GPU_NODES and HLM_SLURM_CPU_NODES must be numbers" 2
    for ((i = 1; i <= HLM_SLURM_GPU_NODES; i++)); do printf 'mel%04d\n' $((2000 + i)); done
    for ((i = 1; i <= HLM_SLURM_CPU_NODES; i++)); do printf 'mel%04d\n' "$i"; done
}

all_node_names() { node_names; site_node_names; }

site_partitions() {
    local p=()
    if ((HLM_SLURM_CPU_NODES > 0)); then p+=(cpu); fi
    if ((HLM_SLURM_GPU_NODES > 0)); then p+=(gpu); fi
    (IFS=,; echo "${p[*]}")
}

all_nodes_up() {
    # Every node answers and is usable (idle, mixed or allocated), none down or still unknown.
    local states
    states=$(SLURM_CONF=$conf sinfo -h -N -o '%N %t' 2>/dev/null | sort -u) || return 1
    [[ $(grep -cE ' (idle|mix|alloc)$' <<<"$states") -eq $(all_node_names | wc -l) ]]
}

down() {
    # SIGTERM to every daemon first, then wait for each (they shut down in parallel); SIGKILL after 10 s.
    local f pid pids=()
    for f in "$dir"/run/slurmd-*.pid "$dir/run/slurmctld.pid" $(stop_accounting_pids) "$dir/run/munged.pid"; do
        [[ -s "$f" ]] || continue
        pid=$(cat "$f")
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" && pids+=("$pid")
        fi
        rm -f "$f"
    done
    for pid in "${pids[@]}"; do
        for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    done
    return 0
}

ensure_user() {
    [[ "$user" =~ ^[a-z_][a-z0-9_-]*$ ]] || die "refusing test user name '$user'" 2
    if ! id "$user" >/dev/null 2>&1; then
        useradd --create-home --shell /bin/bash "$user"
    fi
    # '!' locks the account (sshd then refuses key logins too); '*' only disables passwords.
    if [[ "$(getent shadow "$user" | cut -d: -f2)" == '!'* ]]; then
        usermod -p '*' "$user"
    fi
    [[ "$HLM_TEST_PEER" =~ ^[a-z_][a-z0-9_-]*$ && "$HLM_TEST_GROUP" =~ ^[a-z_][a-z0-9_-]*$ ]] \
        || die "refusing peer or group name '$HLM_TEST_PEER' / '$HLM_TEST_GROUP'" 2
    id "$HLM_TEST_PEER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$HLM_TEST_PEER"
    getent group "$HLM_TEST_GROUP" >/dev/null || groupadd "$HLM_TEST_GROUP"
    local member
    for member in "$user" "$HLM_TEST_PEER"; do
        id -nG "$member" | tr ' ' '\n' | grep -qx "$HLM_TEST_GROUP" || usermod -aG "$HLM_TEST_GROUP" "$member"
    done
}

traversable() {
    # Make a directory and every one above it traversable by others (o+x only: nothing becomes listable).
    local d=$1 why=$2
    while [[ "$d" != / ]]; do
        if [[ $(( 0$(stat -c '%a' "$d") & 1 )) -eq 0 ]]; then
            echo "slurm.sh: chmod o+x $d (so $user can $why)" >&2
            chmod o+x "$d"
        fi
        d=$(dirname "$d")
    done
}

expose_python() {
    local bin repo
    bin=$(python_bin_dir)
    traversable "$bin" "run $bin/python3"
    # A venv's python3 is a symlink: the user must also reach the base interpreter it points to.
    traversable "$(python_real_dir)" "run the interpreter behind $bin/python3"
    # The jobs import the project from this checkout (editable install or PYTHONPATH).
    repo=$(cd "$here/../.." && pwd)
    traversable "$repo" "read the project in $repo"
    if [[ $(( 0$(stat -c '%a' "$repo") & 4 )) -eq 0 ]]; then
        echo "slurm.sh: warning: $repo is not readable by others; $user's jobs cannot import the project" >&2
    fi
    local home envfile
    home=$(getent passwd "$user" | cut -d: -f6)
    [[ -d "$home" ]] || { mkdir -p "$home"; chown "$user:" "$home"; }
    envfile=$home/.hlm_env
    {
        echo "# Written by tests/infra/slurm.sh: the project's Python (and the test Slurm) for this user."
        echo "export PATH=\"$bin:\$PATH\""
        # Without /etc/slurm the clients need SLURM_CONF; otherwise /etc/slurm/slurm.conf links the first
        # test cluster, and a second one (other HLM_SLURM_DIR) must not redirect this user's commands.
        [[ -d /etc/slurm ]] || echo "export SLURM_CONF=\"\${SLURM_CONF:-$conf}\""
    } > "$envfile"
    chown "$user:" "$envfile"
    local rc
    for rc in .bash_profile .bashrc; do
        if ! grep -qs 'hlm_env' "$home/$rc"; then
            # .bashrc's own early return for non-interactive shells must not skip us: prepend.
            { echo '[ -r "$HOME/.hlm_env" ] && . "$HOME/.hlm_env"  # hlm_env'
              [[ -f "$home/$rc" ]] && cat "$home/$rc"
              [[ "$rc" == .bash_profile && ! -f "$home/$rc" ]] && echo '[ -r "$HOME/.profile" ] && . "$HOME/.profile"'
            } > "$home/$rc.new"
            mv "$home/$rc.new" "$home/$rc"
            chown "$user:" "$home/$rc"
        fi
    done
}

write_config() {
    local host cpus layout mem g
    host=$(hostname -s)
    layout=$(slurmd -C | head -1)
    mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$layout")
    if [[ -n "$HLM_SLURM_CPUS" ]]; then
        [[ "$HLM_SLURM_CPUS" =~ ^[0-9]+$ ]] || die "HLM_SLURM_CPUS must be a number, got '$HLM_SLURM_CPUS'" 2
        cpus="CPUs=$HLM_SLURM_CPUS Boards=1 SocketsPerBoard=1 CoresPerSocket=$HLM_SLURM_CPUS ThreadsPerCore=1"
    else
        cpus=$(sed -n 's/.*\(CPUs=.*ThreadsPerCore=[0-9]*\).*/\1/p' <<<"$layout")
    fi
    mkdir -p "$dir"/{etc,run,log,state,spool,munge,dev}
    chown root: "$dir/etc"
    chmod 755 "$dir" "$dir/etc" "$dir/run" "$dir/log" "$dir/dev"
    chmod 711 "$dir/munge"           # clients must reach the socket inside
    chmod 700 "$dir/state"
    chmod 755 "$dir/spool"
    local site_gpus=4
    for ((g = 0; g < (HLM_SLURM_GPUS > site_gpus ? HLM_SLURM_GPUS : site_gpus); g++)); do
        [[ -c "$dir/dev/gpu$g" ]] || mknod -m 666 "$dir/dev/gpu$g" c 1 3
    done
    cat > "$conf.new" <<EOF
# Generated by tests/infra/slurm.sh: test cluster on loopback (this host, extra slurmd nodes, MeluXina-shaped
# nodes and accounting).
ClusterName=hlmtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$HLM_SLURM_CTLD_PORT
SlurmdPort=$HLM_SLURM_D_PORT
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
PlugStackConfig=$dir/etc/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
ReturnToService=2
MailProg=/bin/true
SchedulerType=sched/backfill
# The backfill every second and the main scheduling loop every 2 s (Slurm's default is 60 s): a job whose begin
# time passes (a requeued job, let start sooner) starts then, not at the next minute's pass.
SchedulerParameters=batch_sched_delay=0,bf_interval=1,sched_interval=2
EnforcePartLimits=ALL
SlurmdParameters=config_overrides
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$HLM_SLURM_DBD_PORT
AccountingStoragePass=socket=$dir/munge/munge.socket
AccountingStorageEnforce=associations,limits,qos
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/none
MinJobAge=3600
KillWait=5
GresTypes=gpu
EOF
    local i=0 n shape gres gpu_nodes=() cpu_nodes=()
    for n in $(node_names); do
        echo "NodeName=$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$((HLM_SLURM_D_PORT + i)) $cpus RealMemory=$mem Gres=gpu:$HLM_SLURM_GPUS State=UNKNOWN" >> "$conf.new"
        i=$((i + 1))
    done
    for n in $(site_node_names); do
        if [[ $n == mel2* ]]; then  # MeluXina GPU node: 2x AMD EPYC 7452, 4x A100
            shape="CPUs=128 Boards=1 SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=2" gres=" Gres=gpu:$site_gpus"
            gpu_nodes+=("$n")
        else                        # MeluXina CPU node: 2x AMD EPYC 7H12
            shape="CPUs=256 Boards=1 SocketsPerBoard=2 CoresPerSocket=64 ThreadsPerCore=2" gres=""
            cpu_nodes+=("$n")
        fi
        echo "NodeName=$n NodeHostname=$host NodeAddr=127.0.0.1 Port=$((HLM_SLURM_D_PORT + i)) $shape RealMemory=512000$gres State=UNKNOWN" >> "$conf.new"
        i=$((i + 1))
    done
    echo "PartitionName=$HLM_SLURM_PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP" >> "$conf.new"
    if (( HLM_SLURM_NODES > 1 )); then
        echo "PartitionName=$HLM_SLURM_MULTI_PARTITION Nodes=$(node_names | paste -sd,) MaxTime=INFINITE State=UP" >> "$conf.new"
    fi
    if ((${#cpu_nodes[@]})); then
        echo "PartitionName=cpu Nodes=$(IFS=,; echo "${cpu_nodes[*]}") MaxTime=2-00:00:00 State=UP" >> "$conf.new"
    fi
    if ((${#gpu_nodes[@]})); then
        echo "PartitionName=gpu Nodes=$(IFS=,; echo "${gpu_nodes[*]}") MaxTime=2-00:00:00 State=UP" >> "$conf.new"
    fi
    mv "$conf.new" "$conf"
    {
        echo "AutoDetect=off"
        for n in $(node_names); do
            for ((g = 0; g < HLM_SLURM_GPUS; g++)); do
                echo "NodeName=$n Name=gpu File=$dir/dev/gpu$g"
            done
        done
        for n in $(site_node_names | grep '^mel2'); do
            for ((g = 0; g < site_gpus; g++)); do
                echo "NodeName=$n Name=gpu File=$dir/dev/gpu$g"
            done
        done
    } > "$dir/etc/gres.conf"
    : > "$dir/etc/plugstack.conf"
    chmod 644 "$conf" "$dir/etc/gres.conf" "$dir/etc/plugstack.conf"
    # Let plain `sbatch` (and SSH logins) find this cluster when /etc/slurm/slurm.conf is free.
    # (Only when the path is absent: a second test cluster never takes it over.)
    if [[ -d /etc/slurm && ! -e /etc/slurm/slurm.conf && ! -L /etc/slurm/slurm.conf ]]; then
        ln -s "$conf" /etc/slurm/slurm.conf
    fi
}

start_munge() {
    pid_alive "$dir/run/munged.pid" && return 0
    [[ -s "$dir/munge/munge.key" ]] || mungekey --create --keyfile="$dir/munge/munge.key"
    chmod 600 "$dir/munge/munge.key"
    munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" 9>&- \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
}

up() {
    [[ $EUID -eq 0 ]] || die "must run as root (it starts slurmd and creates the test user)" 2
    local b
    for b in munged mungekey slurmctld slurmd sbatch sinfo slurmdbd sacctmgr mariadbd mariadb-install-db; do
        command -v "$b" >/dev/null || die "$b not found: bash tests/infra/install.sh (Debian packages slurmctld slurmd slurm-client slurmdbd munge mariadb-server)" 3
    done
    ensure_user
    expose_python
    if status; then
        SLURM_CONF=$conf init_accounting  # a no-op unless what accounting.sh wants changed since
        print_env
        return 0
    fi
    down
    write_config
    start_munge
    export SLURM_CONF=$conf
    start_db
    start_dbd
    init_accounting
    slurmctld -f "$conf" 9>&-
    local n
    for n in $(all_node_names); do
        mkdir -p "$dir/spool/$n"
        slurmd -f "$conf" -N "$n" 9>&-
    done
    for _ in $(seq 200); do
        if all_nodes_up; then
            print_env
            return 0
        fi
        sleep 0.05
    done
    die "the nodes did not become idle within 10 s; see $dir/log/slurmctld.log and $dir/log/slurmd-*.log" 4
}

ctld() {
    [[ $EUID -eq 0 ]] || die "must run as root" 2
    local f=$dir/run/slurmctld.pid pid
    case "${1:-}" in
        stop)
            pid_alive "$f" || return 0
            pid=$(cat "$f")
            kill -CONT "$pid"; kill "$pid"
            for _ in $(seq 400); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
            die "slurmctld $pid did not stop within 20 s" 4 ;;
        start)
            pid_alive "$f" || SLURM_CONF=$conf slurmctld -f "$conf" 9>&-
            for _ in $(seq 400); do
                SLURM_CONF=$conf scontrol ping 2>/dev/null | grep -q UP && return 0
                sleep 0.05
            done
            die "slurmctld does not answer 20 s after its start; see $dir/log/slurmctld.log" 4 ;;
        pause) pid_alive "$f" && kill -STOP "$(cat "$f")" ;;
        resume) pid_alive "$f" && kill -CONT "$(cat "$f")" ;;
        *) die "usage: slurm.sh ctld stop|start|pause|resume" 2 ;;
    esac
}

locked() {
    # One `up` or `down` at a time: test sessions running in parallel share this cluster, and a second `up`
    # waits for the first, then finds everything running. Every daemon starts with the lock's descriptor
    # closed (9>&-), so the lock ends with this script.
    [[ $EUID -eq 0 ]] || die "must run as root" 2
    mkdir -p "$dir"
    exec 9>>"$dir/.lock"
    flock -w 180 9 || die "another tests/infra/slurm.sh held $dir/.lock for 3 minutes" 4
    "$@"
}

case "${1:-}" in
    up) locked up ;;
    down) locked down ;;
    status) status ;;
    env) print_env ;;
    ctld) ctld "${2:-}" ;;
    *) die "usage: slurm.sh up|down|status|env|ctld" 2 ;;
esac
