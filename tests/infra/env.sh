# Shared settings of the test infrastructure (Slurm and sshd bring-up scripts source this file).
# Override any of them from the environment before sourcing.

# Unprivileged user that owns and runs every test job and every test SSH login.
: "${HLM_TEST_USER:=hlmtest}"
# Another unprivileged account on the same machine (no login): what it may read of the test user's files is
# what any other user of a login node could.
: "${HLM_TEST_PEER:=hlmpeer}"
# A project's Unix group that both accounts belong to ([cluster].share_group shares a study with it).
: "${HLM_TEST_GROUP:=hlmproj}"
# Directory holding the test Slurm's configuration, state, logs, munge socket and fake GPU devices.
: "${HLM_SLURM_DIR:=/tmp/hlm-slurm}"
export HLM_TEST_USER HLM_TEST_PEER HLM_TEST_GROUP HLM_SLURM_DIR
