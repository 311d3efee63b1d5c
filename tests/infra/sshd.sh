#!/usr/bin/env bash
# A real OpenSSH server on loopback for the control-plane tests.
#
#   tests/infra/sshd.sh start STATE_DIR [PORT] [USER]   -> prints KEY=VALUE lines (port, user, key, known_hosts)
#   tests/infra/sshd.sh stop  STATE_DIR                 -> stops the server by its pid file
#
# The server has its own host key and accepts only the generated client key (no passwords, no PAM).
# USER (default: $HLM_TEST_USER of env.sh, the user that runs the test Slurm's jobs) is created when absent
# (password field '*', so public-key login is allowed).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=env.sh
source "$here/env.sh"

cmd=${1:?usage: sshd.sh start|stop STATE_DIR [PORT] [USER]}
state=${2:?usage: sshd.sh start|stop STATE_DIR [PORT] [USER]}
port=${3:-2222}
user=${4:-$HLM_TEST_USER}

stop() {
    if [[ -f "$state/sshd.pid" ]]; then
        pid=$(cat "$state/sshd.pid")
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid"
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        fi
        rm -f "$state/sshd.pid"
    fi
}

if [[ "$cmd" == stop ]]; then
    stop
    exit 0
fi
[[ "$cmd" == start ]] || { echo "sshd.sh: unknown command '$cmd' (expected start or stop)" >&2; exit 2; }
[[ "$user" =~ ^[a-z_][a-z0-9_-]*$ ]] || { echo "sshd.sh: refusing user name '$user'" >&2; exit 2; }
[[ "$port" =~ ^[0-9]+$ ]] || { echo "sshd.sh: port must be a number, got '$port'" >&2; exit 2; }

sshd_bin=$(command -v sshd || echo /usr/sbin/sshd)
[[ -x "$sshd_bin" ]] || { echo "sshd.sh: sshd not found (apt-get install openssh-server)" >&2; exit 3; }

if ! id "$user" >/dev/null 2>&1; then
    useradd --create-home --shell /bin/bash "$user"
fi
# '!' locks the account and sshd then refuses even key logins; '*' only disables passwords.
if [[ "$(getent shadow "$user" | cut -d: -f2)" == '!'* ]]; then
    usermod -p '*' "$user"
fi

mkdir -p "$state" /run/sshd
chmod 755 "$state"
[[ -f "$state/host_ed25519" ]] || ssh-keygen -q -t ed25519 -N '' -C hlm-test-host -f "$state/host_ed25519"
[[ -f "$state/client_ed25519" ]] || ssh-keygen -q -t ed25519 -N '' -C hlm-test-client -f "$state/client_ed25519"
cp "$state/client_ed25519.pub" "$state/authorized_keys"
chmod 644 "$state/authorized_keys" "$state/client_ed25519.pub"
chmod 600 "$state/client_ed25519"
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$state/host_ed25519.pub")" > "$state/known_hosts"

cat > "$state/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $state/host_ed25519
PidFile $state/sshd.pid
AuthorizedKeysFile $state/authorized_keys
AllowUsers $user
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
UsePAM no
StrictModes no
PermitRootLogin no
MaxSessions 64
MaxStartups 64:30:128
ClientAliveInterval 0
Subsystem sftp internal-sftp
LogLevel ERROR
EOF

stop
"$sshd_bin" -t -f "$state/sshd_config"
"$sshd_bin" -f "$state/sshd_config" -E "$state/sshd.log"
for _ in $(seq 50); do [[ -s "$state/sshd.pid" ]] && break; sleep 0.05; done
[[ -s "$state/sshd.pid" ]] || { echo "sshd.sh: sshd did not start; see $state/sshd.log" >&2; exit 4; }

echo "SSHD_PORT=$port"
echo "SSHD_USER=$user"
echo "SSHD_KEY=$state/client_ed25519"
echo "SSHD_KNOWN_HOSTS=$state/known_hosts"
echo "SSHD_PID=$(cat "$state/sshd.pid")"
