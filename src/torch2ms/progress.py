"""Progress for the long commands (convert, weights, compare, check-data, export): one line per phase with
its elapsed time, and a bar for phases that count steps (or bytes). :class:`Progress` itself shows nothing (library callers, logs);
:class:`RichProgress` draws on a terminal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Progress:
    """Phases and steps, shown nowhere. Subclasses draw them."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, phase: str, done: int, total: int | None = None) -> None:
        """``done`` of ``total`` steps of ``phase`` (the phase starts at its first update)."""

    def update_bytes(self, phase: str, done: int, total: int, items: str = "") -> None:
        """``done`` of ``total`` bytes of ``phase``; ``items``: what else to show (e.g. "3/12 tensors")."""

    def finish(self, phase: str) -> None:
        """The phase is over."""

    def close(self) -> None:
        """Stop drawing."""

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """A phase without steps: shown while the block runs, then marked done with its time."""
        self.update(name, 0, None)
        try:
            yield
        finally:
            self.finish(name)

    def steps(self, phase: str) -> Any:
        """A ``(done, total)`` callback for one phase's steps."""
        return lambda done, total: self.update(phase, done, total)


class RichProgress(Progress):
    """rich's live progress display on the given console (stderr, so that reports stay clean)."""

    def __init__(self, console: Any) -> None:
        from rich.progress import BarColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichBar

        self._bar = RichBar(
            SpinnerColumn(finished_text="[green]✓[/]"),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[steps]}"),
            TimeElapsedColumn(),
            console=console,
        )
        self._tasks: dict[str, Any] = {}
        self._counted: dict[Any, bool] = {}
        self._bar.start()

    def update(self, phase: str, done: int, total: int | None = None) -> None:
        task = self._tasks.get(phase)
        if task is None:  # a phase created without a total counts no steps (only its time is shown)
            task = self._tasks[phase] = self._bar.add_task(phase, total=total, steps="")
            self._counted[task] = total is not None
        steps = f"{done}/{total}" if self._counted[task] and total is not None else ""
        self._bar.update(task, completed=done, total=total, steps=steps)
        if total is not None and done >= total:
            self._bar.stop_task(task)

    def update_bytes(self, phase: str, done: int, total: int, items: str = "") -> None:
        from rich.filesize import decimal

        task = self._tasks.get(phase)
        if task is None:
            task = self._tasks[phase] = self._bar.add_task(phase, total=total, steps="")
            self._counted[task] = False
        shown = f"{decimal(done)}/{decimal(total)}" + (f", {items}" if items else "")
        self._bar.update(task, completed=done, total=total, steps=shown)
        if done >= total:
            self._bar.stop_task(task)

    def finish(self, phase: str) -> None:
        task = self._tasks.get(phase)
        if task is not None:
            self._bar.update(task, total=1, completed=1)
            self._bar.stop_task(task)

    def close(self) -> None:
        self._bar.stop()


def for_console(console: Any, quiet: bool = False) -> Progress:
    """RichProgress on a terminal, the silent Progress elsewhere (a log file gets the report only) or when
    ``quiet`` (--json: a program reads the output)."""
    return RichProgress(console) if console.is_terminal and not quiet else Progress()
