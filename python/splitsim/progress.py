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
        self.note = ""

    def __call__(self, phase, done, total, note=""):
        if not self.show:
            return
        if note:
            self.note = note
            if not self.jupyter:
                self._end_line()
                print(note, file=sys.stderr, flush=True)
            elif total == 0:
                self._draw(phase, done, total)
            return
        now = time.monotonic()
        if done < total and now - self.last < self.interval_s:
            return
        self.last = now
        self._draw(phase, done, total)

    def _draw(self, phase, done, total):
        if self.jupyter:
            from IPython.display import display
            value = f'<progress value="{done}" max="{max(total, 1)}"></progress>' if total else ""
            html = _Html(f"<code>{phase} {done}/{total}</code> {value} <small>{self.note}</small>")
            if self.handle is None:
                self.handle = display(html, display_id=True)
            else:
                self.handle.update(html)
            return
        width = 30
        filled = width * done // total if total else 0
        line = f"{phase:<8} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
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
