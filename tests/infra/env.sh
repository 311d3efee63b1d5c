# Shared settings of the test infrastructure (Slurm and sshd bring-up scripts source this file).
# Override any of them from the environment before sourcing.

# Unprivileged user that owns and runs every test job and every test SSH login.
: "${HLM_TEST_USER:=hlmtest}"
# Directory holding the test Slurm's configuration, state, logs, munge socket and fake GPU devices.
: "${HLM_SLURM_DIR:=/tmp/hlm-slurm}"
export HLM_TEST_USER HLM_SLURM_DIR
