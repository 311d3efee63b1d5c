#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine (as root): the real Slurm, munge and
# OpenSSH server from Debian, then torch (CPU build) and the project with its train and test extras.
# Idempotent: what is already installed is skipped, so running it twice costs seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."

apt_packages=(slurmctld slurmd slurm-client munge openssh-server)
missing=()
for pkg in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

python3 -c 'import torch' 2>/dev/null || python3 -m pip install -q torch==2.13.0
python3 -m pip install -q -e '.[train,test]'
