"""Progress of long calls: a bar rewritten in place on a terminal's stderr,
an HTML <progress> element updated in place in Jupyter, nothing elsewhere.
The C++ side calls back with (phase, done, total, note) between steps."""
import sys
import time


def _in_jupyter():
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class _Html:
    def __init__(self, html):
        self.html = html

    def _repr_html_(self):
        return self.html

    def __repr__(self):
        return ""


class Progress:
    """show: None (a terminal or Jupyter: yes; a log or a pipe: no), True or False."""

    interval_s = 0.2  # redraw at most this often, and at the end of each phase

    def __init__(self, show=None):
        self.jupyter = _in_jupyter()
        tty = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
        self.show = (self.jupyter or tty) if show is None else bool(show)
        self.tty = tty
        self.handle = None
        self.last = 0.0
        self.open_line = False
        self.note = ""    # the last line of its own (measuring a model, ...)
        self.detail = ""  # what came with the count (explore: feasible candidates)

    def __call__(self, phase, done, total, note=""):
        """A note alone (total 0) is a line of its own (in Jupyter: the text
        beside the bar); with a total it is shown after the count."""
        if not self.show:
            return
        if total == 0:
            self.note = note
            if self.jupyter:
                self._draw(phase, done, total)
            elif note:
                self._end_line()
                print(note, file=sys.stderr, flush=True)
            return
        self.detail = note
        now = time.monotonic()
        if done < total and now - self.last < self.interval_s:
            return
        self.last = now
        self._draw(phase, done, total)

    def _draw(self, phase, done, total):
        if self.jupyter:
            from IPython.display import display
            value = f'<progress value="{done}" max="{max(total, 1)}"></progress>' if total else ""
            text = self.detail if total else self.note
            html = _Html(f"<code>{phase} {done}/{total}</code> {value} <small>{text}</small>")
            if self.handle is None:
                self.handle = display(html, display_id=True)
            else:
                self.handle.update(html)
            return
        width = 30
        filled = width * done // total if total else 0
        bar = "#" * filled + "." * (width - filled)
        line = f"{phase:<8} [{bar}] {done}/{total} {self.detail}"
        if self.tty:
            print("\r" + line, end="", file=sys.stderr, flush=True)
            self.open_line = True
            if done >= total:
                self._end_line()
        elif done >= total:
            print(line, file=sys.stderr, flush=True)

    def _end_line(self):
        if self.open_line:
            print(file=sys.stderr, flush=True)
            self.open_line = False

    def close(self):
        self._end_line()
