"""The training dashboard in the terminal: a textual app over a `RunState`.

What it shows: a tab per metric (←/→; the active one is highlighted and named in the
chart's title) with the train and valid curves, drawn as the full history downsampled to
250 points, the recent 1,000 points, or a summary table (↑/↓), smoothed with ``+``/``-``;
gauges for the epoch and the run with their ETA and items/s; a status panel (what the run
is doing, its step, the process's CPU and memory, the device's memory); and a log of the
run's messages and of everything written to stdout and stderr meanwhile (warnings
included), so that a print never breaks the screen. Keys ``p`` pause/resume, ``c``
checkpoint, ``s`` stop after a checkpoint, ``k`` abort (after a confirmation), ``?`` help,
``q`` quit once the run is over.

Given a `fit` function, the app runs it on a thread of its own when it starts and closes
when it returns (`Learner(..., dashboard="tui")`); without one it shows runs, read only: one
or several (`pyburn dash RUN...`: their curves in one chart), kept current by `poll`.
"""

from __future__ import annotations

import io
import math
import os
import sys
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, ProgressBar, RichLog, Static, Tab, Tabs

from ..control import Control
from ..metrics.system import resident_memory
from .chart import downsample, draw, smooth, summary_line
from .state import RunState

#: the plot kinds ↑/↓ cycle through, and the points "full" and "recent" draw
KINDS = ("full", "recent", "summary")
FULL_POINTS = 250
RECENT_POINTS = 1000
#: smoothing weights +/- step through
SMOOTHING = (0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.99)
#: the colours of the splits' curves (one run), and of the curves of several runs in turn
COLOURS = {"train": "cyan", "valid": "magenta"}
PALETTE = ("cyan", "magenta", "green", "yellow", "bright_blue", "red", "white", "bright_cyan")
#: seconds between two redraws
REFRESH_S = 0.25
#: the actions that steer a run (none in a read-only view)
STEERING = ("pause", "checkpoint", "stop", "abort")
#: what ``?`` shows
HELP = """\
p      pause / resume (at the next step boundary)
c      checkpoint now
s      stop after a checkpoint
k      abort, with no checkpoint (asks first)
←/→    previous / next metric
↑/↓    plot kind: full history, recent points, summary
+/-    more / less smoothing
q      quit (once the run is over)
?      this help (any key closes it)"""


class Confirm(ModalScreen[bool]):
    """A yes/no question; dismissed with True for ``y``."""

    BINDINGS = [Binding("y", "answer(True)", "yes"), Binding("n,escape", "answer(False)", "no")]

    def __init__(self, question: str):
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        yield Label(f"{self.question}  [y/n]", id="question")

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)


class Help(ModalScreen[None]):
    """The keys, until any key is pressed."""

    def compose(self) -> ComposeResult:
        yield Static(HELP, id="help")

    def on_key(self, event: events.Key) -> None:
        event.stop()
        self.dismiss(None)


class _Capture(io.TextIOBase):
    """While it is open, `sys.stdout`, `sys.stderr` and the warnings a run shows are written
    here instead of over the screen, from any thread; `take` gives the complete lines."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._partial = ""
        self._lines: list[str] = []
        self._saved = (sys.stdout, sys.stderr, warnings.showwarning)
        sys.stdout = sys.stderr = self
        warnings.showwarning = self._warning

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        """Keep `text` (a line is complete at its newline: ``print(a, b)`` is several
        writes)."""
        with self._lock:
            *complete, self._partial = (self._partial + text).split("\n")
            self._lines.extend(complete)
        return len(text)

    def _warning(self, message: Warning | str, category: type[Warning], filename: str,
                 lineno: int, file: Any = None, line: str | None = None) -> None:
        self.write(warnings.formatwarning(message, category, filename, lineno, line))

    def take(self) -> list[str]:
        """The lines written since the last call."""
        with self._lock:
            lines, self._lines = self._lines, []
            return lines

    def close(self) -> None:
        """Put back what is still this capture's (textual, which puts its own stdout in
        place while an app runs, may have put the terminal's back already)."""
        stdout, stderr, show = self._saved
        if sys.stdout is self:
            sys.stdout = stdout
        if sys.stderr is self:
            sys.stderr = stderr
        if warnings.showwarning == self._warning:
            warnings.showwarning = show
        super().close()


class Log(RichLog):
    """The log pane: the run's messages and what it printed."""

    def __init__(self, **options: Any):
        super().__init__(**options)
        #: every line shown, in order (what a test reads)
        self.lines_shown: list[str] = []

    def add(self, line: str) -> None:
        """Show one line."""
        self.lines_shown.append(line)
        self.write(line)


class Dashboard(App[None]):
    """The dashboard over `runs` (a `RunState`, or several by name: the first is the one the
    gauges follow); `control` (None: a read-only view) takes the keys that steer the run;
    `fit` (None: nothing to run) is run on a thread when the app starts, and the app closes
    when it returns (`error` then holds what it raised); `poll` is called before each redraw
    (followers of run folders read their new events); `device`, the training device, has
    its memory shown."""

    TITLE = "pyburn"
    CSS = """
    #chart { height: 1fr; min-height: 5; border: round $primary; padding: 0 1; }
    #panel { height: auto; }
    #gauges { width: 2fr; height: auto; }
    #status { width: 1fr; height: auto; border: round $secondary; padding: 0 1; }
    .gauge { height: 1; }
    .gauge Label { width: 8; }
    #log { height: 8; border: round $secondary; }
    Confirm, Help { align: center middle; }
    #question, #help { border: thick $warning; padding: 1 2; width: auto; height: auto;
                       background: $surface; }
    """
    BINDINGS = [
        Binding("p", "pause", "pause/resume"),
        Binding("c", "checkpoint", "checkpoint"),
        Binding("s", "stop", "stop"),
        Binding("k", "abort", "abort"),
        Binding("left", "tab(-1)", "metric", show=False),
        Binding("right", "tab(1)", "metric", show=False),
        Binding("up", "kind(-1)", "plot", show=False),
        Binding("down", "kind(1)", "plot", show=False),
        Binding("plus,equals_sign", "smoothing(1)", "smoother", show=False),
        Binding("minus", "smoothing(-1)", "rougher", show=False),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit_when_over", "quit"),
        Binding("ctrl+c", "stop", "stop", show=False, priority=True),
    ]

    def __init__(self, runs: RunState | Mapping[str, RunState], control: Control | None = None,
                 fit: Callable[[], Any] | None = None, title: str = "training",
                 poll: Callable[[], object] | None = None, device: Any = None):
        super().__init__()
        self.runs = {title: runs} if isinstance(runs, RunState) else dict(runs)
        self.state = next(iter(self.runs.values()))
        self.control, self._fit, self._poll = control, fit, poll
        #: the device the run trains on, whose memory the status panel shows (None: none)
        self.device = device
        self.sub_title = title
        self.kind = 0
        self.smoothing = 2
        self.metric: str | None = None
        self.error: BaseException | None = None
        self.result: Any = None
        self._shown_messages = {name: 0 for name in self.runs}
        self._cpu: tuple[Any, float | None] = (os.times(), None)
        #: the thread running `fit`, once started
        self.trainer: threading.Thread | None = None

    # ---- layout ----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield Tabs(id="metrics")
        yield Static(id="chart")
        with Horizontal(id="panel"):
            with Vertical(id="gauges"):
                with Horizontal(classes="gauge"):
                    yield Label("epoch")
                    yield ProgressBar(id="epoch", show_eta=False)
                with Horizontal(classes="gauge"):
                    yield Label("run")
                    yield ProgressBar(id="run", show_eta=False)
                yield Static(id="speed")
            yield Static(id="status")
        yield Log(id="log", wrap=True, max_lines=2000)
        yield Footer()

    def on_mount(self) -> None:
        self._captured = _Capture()
        self.set_interval(REFRESH_S, self.refresh_view)
        self.refresh_view()
        if self._fit is not None:
            self.trainer = threading.Thread(target=self._train, name="pyburn-fit", daemon=True)
            self.trainer.start()

    def on_unmount(self) -> None:
        self._captured.close()

    def _train(self) -> None:
        try:
            self.result = self._fit()  # type: ignore[misc]  # set when _thread is
        except BaseException as error:  # handed to the caller once the app has closed
            self.error = error
        finally:
            self.call_from_thread(self.exit)

    # ---- drawing ---------------------------------------------------------------------
    def refresh_view(self) -> None:
        """Redraw everything from the runs' states (on a timer, and after each key)."""
        if self._poll is not None:
            self._poll()
        names = sorted({name for state in self.runs.values() for name in state.metric_names()},
                       key=lambda name: (name != "loss", name))
        try:
            self._tabs(names)
            self._chart()
            self._gauges()
            self._status()
            self._logs()
        except NoMatches:  # a widget not mounted yet, or taken down as the app closes: the
            pass  # timer can fire then on a loaded machine; the next refresh draws it all

    def _tabs(self, names: list[str]) -> None:
        tabs = self.query_one(Tabs)
        have = [tab.id for tab in tabs.query(Tab)]
        for name in names:
            if f"m-{name}" not in have:
                tabs.add_tab(Tab(name, id=f"m-{name}"))
        if self.metric is None and names:
            self.metric = names[0]
            tabs.active = f"m-{self.metric}"

    def on_tabs_tab_activated(self, message: Tabs.TabActivated) -> None:
        """A tab was chosen (by key or by mouse): its metric is drawn."""
        if message.tab is not None and message.tab.id:
            self.metric = message.tab.id.removeprefix("m-")
            self._chart()

    def _chart(self) -> None:
        chart = self.query_one("#chart", Static)
        kind = KINDS[self.kind]
        weight = SMOOTHING[self.smoothing]
        if self.metric is None:
            chart.border_title = "no metric values yet"
            chart.update("waiting for the first logged values…")
            return
        chart.border_title = (f"{self.metric}  ·  {kind}"
                              + (f"  ·  smoothing {weight:g}" if kind != "summary" else ""))
        series = self._series(self.metric)
        if kind == "summary":
            chart.update(_summary(series, self._colours(list(series))))
            return
        shown = {}
        for split, points in series.items():
            if kind == "recent":
                points = points[-RECENT_POINTS:]
            shown[split] = downsample(smooth(points, weight), FULL_POINTS) if kind == "full" \
                else smooth(points, weight)
        width = max(chart.size.width - 2, 10)
        height = max(chart.size.height - 1, 2)
        chart.update(_render(shown, width, height, self._colours(list(shown))))

    def _series(self, metric: str) -> dict[str, list[tuple[int, float]]]:
        """`metric`'s curves: by split for one run, by run and split for several."""
        if len(self.runs) == 1:
            return self.state.series(metric)
        return {f"{name} {split}": points for name, state in self.runs.items()
                for split, points in state.series(metric).items()}

    def _colours(self, names: list[str]) -> list[str]:
        if len(self.runs) == 1:
            return [COLOURS.get(name, "white") for name in names]
        return [PALETTE[k % len(PALETTE)] for k in range(len(names))]

    def _gauges(self) -> None:
        where = self.state.where
        epoch_bar, run_bar = self.query_one("#epoch", ProgressBar), self.query_one("#run",
                                                                                   ProgressBar)
        if where.batches:
            epoch_bar.update(total=where.batches, progress=where.batch)
            if where.epochs:
                run_bar.update(total=where.epochs * where.batches,
                               progress=(max(where.epoch, 1) - 1) * where.batches + where.batch)
        speed = (f"{where.items_per_second:,.0f} items/s" if where.items_per_second else
                 "- items/s")
        left = "" if where.run_left is None else f"  ·  {_clock(where.run_left)} left"
        self.query_one("#speed", Static).update(
            f"epoch {where.epoch}/{where.epochs or '?'}  ·  batch {where.batch}/"
            f"{where.batches or '?'}  ·  {speed}{left}")

    def _status(self) -> None:
        status = self.state.status
        if status == "paused":
            status = ("PAUSED: the loss is not finite (p resumes, s stops)"
                      if self.state.paused_for == "nan" else "PAUSED (p resumes)")
        now, (before, _) = os.times(), self._cpu
        wall = now.elapsed - before.elapsed
        cpu = self._cpu[1]
        if wall >= 1.0:
            cpu = 100 * (now.user + now.system - before.user - before.system) / wall
            self._cpu = (now, cpu)
        memory = resident_memory()
        if len(self.runs) == 1:
            lines = [f"status  {status}", f"step    {self.state.where.step:,}"]
        else:
            lines = [f"{name}: {state.status}, step {state.where.step:,}"
                     for name, state in self.runs.items()]
        lines += [f"cpu     {'-' if cpu is None else f'{cpu:.0f}%'}",
                  f"memory  {'-' if memory is None else f'{memory / 2**20:,.0f} MiB'}"]
        if self.device is not None:
            held = self.device.backend.memory_in_use()
            lines.append(f"device  {self.device.plain().name}" +
                         ("" if held is None else f": {held / 2**20:,.1f} MiB"))
        if self.control is None:
            lines.append("(read only)")
        self.query_one("#status", Static).update("\n".join(lines))
        shown = status if len(self.runs) == 1 else f"{len(self.runs)} runs"
        self.query_one("#title", Static).update(
            Text.assemble(("pyburn ", "bold"), (self.sub_title, ""), "  ",
                          (shown, "bold reverse" if "PAUSED" in shown else "bold")))

    def _logs(self) -> None:
        log = self.query_one(Log)
        for name, state in self.runs.items():
            messages = list(state.messages)
            if len(messages) < self._shown_messages[name]:  # read again from the start
                self._shown_messages[name] = 0
            for line in messages[self._shown_messages[name]:]:
                log.add(line if len(self.runs) == 1 else f"{name}: {line}")
            self._shown_messages[name] = len(messages)
        for line in self._captured.take():
            log.add(line)

    # ---- keys ------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The keys that steer a run are not offered by a read-only view."""
        return self.control is not None or action not in STEERING

    def _steer(self, what: str) -> bool:
        if self.control is None:
            self.notify("this view is read only", severity="warning")
            return False
        if self.state.status in ("stopped", "aborted", "ended", "failed"):
            self.notify(f"the run has {self.state.status}", severity="warning")
            return False
        return True

    def action_pause(self) -> None:
        """Pause or resume the run."""
        if self._steer("pause") and self.control is not None:
            self.control.toggle_pause()
            self.notify("resuming…" if not self.control.paused else "pausing at the next step…")

    def action_checkpoint(self) -> None:
        """Ask for a checkpoint."""
        if self._steer("checkpoint") and self.control is not None:
            self.control.checkpoint()
            self.notify("checkpoint at the next step boundary")

    def action_stop(self) -> None:
        """Ask for a stop after a checkpoint."""
        if self._steer("stop") and self.control is not None:
            self.control.stop()
            self.notify("stopping after a checkpoint…")

    def action_abort(self) -> None:
        """Abort the run, once confirmed."""
        if not self._steer("abort"):
            return

        def answered(yes: bool | None) -> None:
            if yes and self.control is not None:
                self.control.abort()
                self.notify("aborting…", severity="error")
        self.push_screen(Confirm("Abort the run, with no checkpoint?"), answered)

    def action_tab(self, step: int) -> None:
        """The previous (-1) or next (1) metric."""
        tabs = self.query_one(Tabs)
        (tabs.action_next_tab if step > 0 else tabs.action_previous_tab)()

    def action_kind(self, step: int) -> None:
        """The previous or next plot kind."""
        self.kind = (self.kind + step) % len(KINDS)
        self._chart()

    def action_smoothing(self, step: int) -> None:
        """More or less smoothing."""
        self.smoothing = min(max(self.smoothing + step, 0), len(SMOOTHING) - 1)
        self._chart()

    def action_help(self) -> None:
        """Show the keys."""
        self.push_screen(Help())

    def action_quit_when_over(self) -> None:
        """Close, unless a run is still training here."""
        if self.trainer is not None and self.trainer.is_alive():
            self.notify("the run is still training: s stops it after a checkpoint, k aborts",
                        severity="warning")
            return
        self.exit()


def _render(series: dict[str, list[tuple[float, float]]], width: int, height: int,
            colours: list[str]) -> Text:
    """The curves as Braille in `colours` (one a series), with the value range and a
    legend."""
    cells = draw(series, width, height - 1)
    text = Text()
    for row in cells:
        for char, owner in row:
            text.append(char, colours[owner] if owner is not None else "")
        text.append("\n")
    values = [y for points in series.values() for _, y in points if math.isfinite(y)]
    if values:
        text.append(f"{min(values):.4g} … {max(values):.4g}   ", "dim")
    for (name, points), colour in zip(series.items(), colours):
        last = points[-1][1] if points else math.nan
        text.append(f"■ {name} {last:.4g}  ", colour)
    return text


def _summary(series: dict[str, list[tuple[int, float]]], colours: list[str]) -> Text:
    """Per series: the last value, the lowest and the highest with their steps, the count."""
    text = Text()
    width = max([8, *(len(name) + 2 for name in series)])
    text.append(f"{'series':{width}}{'last':>12}{'min':>12}{'at step':>10}{'max':>12}"
                f"{'at step':>10}{'points':>8}\n", "bold")
    for (name, points), colour in zip(series.items(), colours):
        text.append(summary_line(name, points, width) + "\n", colour)
    return text


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"
