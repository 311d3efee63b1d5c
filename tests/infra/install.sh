#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine (as root): the real Slurm (with its
# accounting daemon slurmdbd), munge, MariaDB and OpenSSH server from Debian, then torch (CPU build) and the
# project with its train and test extras. The packages' own services are not started (tests/infra/slurm.sh
# starts its own daemons). Idempotent: what is already installed is skipped, so running it twice costs
# seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."

# chromium: tests/report/test_html_in_browser.py lays the HTML report out in a real headless browser
apt_packages=(slurmctld slurmd slurm-client slurmdbd munge mariadb-server openssh-server chromium)
missing=()
for pkg in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    # No service starts during the install (MariaDB's and slurmdbd's would listen on their default ports):
    # a policy-rc.d that denies every start, unless the machine already has one.
    policy=/usr/sbin/policy-rc.d
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\n# tests/infra/install.sh: no service starts while it installs\nexit 101\n' > "$policy"
        chmod 755 "$policy"
        trap 'rm -f "$policy"' EXIT
    fi
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

python3 -c 'import torch' 2>/dev/null || python3 -m pip install -q torch==2.13.0
python3 -m pip install -q -e '.[train,test]'
