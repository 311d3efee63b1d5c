"""A preflight as text: one table per job (check, verdict, found, expected), then one line per failure
naming the job, the check, what was expected and found, the job's log and what to change."""

from __future__ import annotations

from cockpit.preflight.checks import FAIL, PreflightReport


def report_lines(report: PreflightReport) -> list[str]:
    out = []
    for job in report.jobs:
        head = f"preflight {job.name}" + (f" (job {job.job_id}, {job.state})" if job.job_id else "")
        out.append(head)
        width = max((len(c.area) for c in job.checks), default=5)
        for c in job.checks:
            expected = f"  [expected {c.expected}]" if c.expected else ""
            out.append(f"  {c.area:<{width}}  {c.verdict:<7}  {c.found}{expected}")
    for job, c in report.failures():
        logs = f"; log: {', '.join(job.log_paths)}" if job.log_paths else ""
        out.append(f"FAILED preflight {job.name} {c.area}: expected {c.expected or 'success'}, found {c.found}"
                   f"{logs}; fix: {c.fix}")
    verdict = "passed" if report.passed else "FAILED: nothing of the study is submitted until it passes"
    out.append(f"preflight of {report.study} ({report.digest}): {verdict}")
    return out


def failure_summary(report: PreflightReport, fix: str | None = None) -> str:
    """One line for a refusal: the first failure, and how many more. ``fix``: what to change, in the words of
    the command that made the study (the demo's flags), instead of the check's own (a study file's keys)."""
    bad = report.failures()
    if not bad:
        return "passed"
    job, c = bad[0]
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    return f"preflight {job.name} {c.area} {FAIL}: {c.found}; fix: {fix or c.fix}{more}"
