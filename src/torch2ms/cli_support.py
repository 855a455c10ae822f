"""What the proving commands (compare, check-data, export) share in their command shells: exit codes in
``--help``, one-line errors, MindSpore's own logging kept out of the output, and a stdout that holds
only the report."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator

from .i18n import N_, _

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2


RUN_USAGE = N_(
    "usage or input error: a bad option, spec or file, a model/pipeline that cannot be\n"
    "     imported or built, or a run that could not complete (one line on stderr says which\n"
    "     and what to do)"
)
USAGE = N_("usage error: bad arguments, a path that cannot be used")

# argparse's own words (it looks ``_`` and ``ngettext`` up in its module at call time): listed here
# so that extraction puts them in torch2ms's catalog.
ARGPARSE_MESSAGES = (
    N_("usage: "),
    N_("options"),
    N_("positional arguments"),
    N_("show this help message and exit"),
    N_("show program's version number and exit"),
    N_("%(prog)s: error: %(message)s\n"),
    N_("the following arguments are required: %s"),
    N_("unrecognized arguments: %s"),
    N_("invalid choice: %(value)r (choose from %(choices)s)"),
    N_("invalid %(type)s value: %(value)r"),
    N_("expected one argument"),
    N_("ambiguous option: %(option)s could match %(matches)s"),
    N_("argument %(argument_name)s: %(message)s"),
    N_("not allowed with argument %s"),
)


def language_from_argv(argv: list[str]) -> str | None:
    """``--lang zh`` / ``--lang=zh`` anywhere on the command line, read before the parser exists."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg.startswith("--lang="):
            value = arg.split("=", 1)[1]
        elif arg == "--lang" and i + 1 < len(argv):
            value = argv[i + 1]
        else:
            continue
        return value if value in ("zh", "en") else None
    return None


def localise_argparse() -> None:
    """argparse's own words (usage:, options, its errors) in the current language."""
    from . import i18n

    argparse._ = i18n._  # type: ignore[attr-defined]
    argparse.ngettext = i18n.ngettext  # type: ignore[attr-defined]


def exit_codes(ok: str, found: str, usage: str | None = None) -> str:
    """The ``exit codes`` section every subcommand's --help ends with."""
    usage = usage or _(USAGE)
    return _("exit codes:") + f"\n  0  {ok}\n  1  {found}\n  2  {usage}"


def exit_codes_epilog(ok: str, found: str) -> str:
    """The ``exit codes`` section of a command that imports and runs user code (compare, check-data, export)."""
    return exit_codes(ok, found, _(RUN_USAGE))


def add_subcommand(
    sub: argparse._SubParsersAction, name: str, help_text: str, epilog: str, description: str | None = None
) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        name,
        help=help_text,
        description=description or help_text,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_lang(parser)
    return parser


def add_lang(parser: argparse.ArgumentParser) -> None:
    """``--lang`` on the top-level parser and on every subcommand (`torch2ms lookup X --lang zh` works like
    `torch2ms --lang zh lookup X`): language_from_argv reads it anywhere before the parser is built, and a
    subcommand's copy must not reset the top-level value, hence SUPPRESS."""
    parser.add_argument(
        "--lang",
        choices=["zh", "en"],
        default=argparse.SUPPRESS,
        help=_("language of messages, reports and code marks (default: from LANGUAGE/LC_ALL/LC_MESSAGES/LANG)"),
    )


def add_verbose(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v", "--verbose", action="store_true", help=_("show MindSpore's own log warnings (hidden by default)")
    )


def quiet_frameworks(verbose: bool) -> None:
    """MindSpore logs through glog (GLOG_v, read when it is imported) and Python warnings: errors only,
    unless -v. Set before the first MindSpore import; child processes inherit it."""
    if verbose:
        os.environ.setdefault("GLOG_v", "2")
        return
    os.environ["GLOG_v"] = "3"
    warnings.filterwarnings("ignore", module=r"mindspore(\.|$)")


def print_error(message: str) -> None:
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True).print("[red]" + _("error:") + f"[/] {escape(message)}", highlight=False, soft_wrap=True)


@contextlib.contextmanager
def stdout_to_stderr(enabled: bool) -> Iterator[None]:
    """While the user's code runs, what it prints goes to stderr: stdout holds only the report (--json)."""
    if not enabled:
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield


def run_guarded(action: Callable[[], int], command: str, verbose: bool) -> int:
    """The last line of defence: whatever escapes becomes one line and exit 2 (-v adds the traceback)."""
    try:
        return action()
    except KeyboardInterrupt:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - never a traceback for the user
        if verbose:
            import traceback

            traceback.print_exc()
        text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        print_error(
            _(
                "{command} stopped on an unexpected {kind}: {text}; this input is not handled yet — "
                "please report it (rerun with -v for the traceback)"
            ).format(command=command, kind=type(exc).__name__, text=text)
        )
        return EXIT_USAGE
