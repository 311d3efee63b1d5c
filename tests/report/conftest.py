"""The real Slurm + sshd study fixtures of the control-plane tests, reused for the end-to-end report test."""

from tests.control.conftest import make_study, remote_workdir, slurm_env  # noqa: F401
