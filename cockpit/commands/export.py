"""`cockpit export STUDY --tensorboard DIR | --wandb [--online] [--out DIR]`: a study in the experiment
trackers (cockpit/report/trackers.py, docs/trackers.md).

STUDY is what `cockpit report` takes: a study file (.toml; its store, else its local run directories) or a
store (.sqlite), read the same way and never written. The trackers are the optional extra
`pip install 'hlm-cockpit[tracking]'`, imported only when this command exports.
"""

from __future__ import annotations

import argparse

from cockpit.commands._args import STUDY, STUDY_OR_STORE_HELP, error


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar=STUDY, help=STUDY_OR_STORE_HELP)
    parser.add_argument("--study", metavar="NAME", help="which study of a store holding several")
    parser.add_argument("--tensorboard", metavar="DIR",
                        help="write one TensorBoard run per configuration under DIR/<study>/ (tensorboard --logdir DIR)")
    parser.add_argument("--wandb", action="store_true",
                        help="write one W&B run per configuration, grouped by the study (offline unless --online)")
    parser.add_argument("--online", action="store_true", help="with --wandb: send the runs now (needs `wandb login`)")
    parser.add_argument("--out", metavar="DIR", default=".",
                        help="with --wandb: where W&B keeps its runs, DIR/wandb/offline-run-*/ (default: the current "
                             "directory, so ./wandb/); upload them later with `wandb sync DIR/wandb/offline-run-*`")
    parser.add_argument("--project", default="hlm-cockpit", help="with --wandb: the W&B project (default hlm-cockpit)")
    parser.add_argument("--entity", help="with --wandb: the W&B entity (default: your W&B default entity)")


def main(args: argparse.Namespace) -> int:
    from cockpit.report.source import ReportError
    from cockpit.report.study_data import load_study_data
    from cockpit.report.trackers import TrackerMissing, export_tensorboard, export_wandb

    if not args.tensorboard and not args.wandb:
        return error("name a tracker: --tensorboard DIR and/or --wandb")
    if args.online and not args.wandb:
        return error("--online goes with --wandb")
    try:
        data = load_study_data(args.source, args.study)
    except ReportError as exc:
        return error(str(exc))
    try:
        if args.tensorboard:
            done = export_tensorboard(data, args.tensorboard)
            print(f"{data.name}: {len(done)} TensorBoard runs (tensorboard --logdir {args.tensorboard})")
            for e in done:
                print(f"  {e.label}: {e.where} ({e.points} points)")
        if args.wandb:
            done = export_wandb(data, args.out, online=args.online, project=args.project, entity=args.entity)
            how = "sent" if args.online else "offline; upload with `wandb sync` on each directory"
            print(f"{data.name}: {len(done)} W&B runs in group {data.name!r} ({how})")
            for e in done:
                print(f"  {e.label}: {e.where} ({e.points} points)")
    except TrackerMissing as exc:
        return error(str(exc))
    except OSError as exc:  # an unwritable DIR: one line naming it
        return error(f"cannot write {exc.filename or ''} ({exc.strerror or exc})")
    except Exception as exc:  # the tracker's own refusal (no W&B login when --online, ...): one line
        if type(exc).__module__.split(".")[0] != "wandb":
            raise
        return error(f"W&B: {exc}")
    finally:
        data.close()
    for problem in data.input.problems:  # exported without these runs, as the report is written without them
        error(f"{data.input.source}: {problem}")
    return 2 if data.input.problems else 0
