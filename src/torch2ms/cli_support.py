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

EXIT_OK, EXIT_FOUND, EXIT_USAGE = 0, 1, 2


RUN_USAGE = (
    "usage or input error: a bad option, spec or file, a model/pipeline that cannot be\n"
    "     imported or built, or a run that could not complete (one line on stderr says which\n"
    "     and what to do)"
)


def exit_codes(ok: str, found: str, usage: str = "usage error: bad arguments, a path that cannot be used") -> str:
    """The ``exit codes`` section every subcommand's --help ends with."""
    return f"exit codes:\n  0  {ok}\n  1  {found}\n  2  {usage}"


def exit_codes_epilog(ok: str, found: str) -> str:
    """The ``exit codes`` section of a command that imports and runs user code (compare, check-data, export)."""
    return exit_codes(ok, found, RUN_USAGE)


def add_subcommand(sub: argparse._SubParsersAction, name: str, help_text: str, epilog: str) -> argparse.ArgumentParser:
    return sub.add_parser(
        name, help=help_text, description=help_text, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def add_verbose(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show MindSpore's own log warnings (hidden by default)"
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

    Console(stderr=True).print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


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
            f"{command} stopped on an unexpected {type(exc).__name__}: {text}; this input is not handled yet — "
            "please report it (rerun with -v for the traceback)"
        )
        return EXIT_USAGE
