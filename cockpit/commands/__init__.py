"""One module per `cockpit` subcommand, each with `add_arguments(parser)` and `main(args) -> int`."""
