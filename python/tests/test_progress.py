"""The progress display: a bar rewritten in place on a terminal, an HTML
<progress> element updated in place in Jupyter, nothing when not shown."""
import pytest

from splitsim.progress import Progress


def test_a_terminal_gets_one_line_rewritten_and_notes_on_lines_of_their_own(capsys):
    p = Progress(True)
    p.jupyter, p.tty = False, True
    p("measure", 0, 0, "measuring resnet20")
    p("simulate", 0, 10)
    p("simulate", 10, 10, "66 feasible candidates")
    p.close()
    err = capsys.readouterr().err
    assert err.startswith("measuring resnet20\n")
    assert "\rsimulate [" + "." * 30 + "] 0/10" in err
    assert "\rsimulate [" + "#" * 30 + "] 10/10 66 feasible candidates\n" in err


def test_jupyter_gets_one_html_bar_updated_in_place(monkeypatch):
    display = pytest.importorskip("IPython.display")
    shown = []

    class Handle:
        def update(self, html):
            shown.append(("update", html._repr_html_()))

    def fake_display(html, display_id=False):
        shown.append(("display", html._repr_html_()))
        return Handle()

    monkeypatch.setattr(display, "display", fake_display)
    p = Progress(True)
    p.jupyter = True
    p("measure", 0, 0, "measuring resnet20")
    p("simulate", 4, 4, "12 feasible candidates")
    assert [kind for kind, _ in shown] == ["display", "update"]
    assert "measuring resnet20" in shown[0][1]
    assert '<progress value="4" max="4">' in shown[1][1] and "12 feasible" in shown[1][1]


def test_nothing_when_not_shown(capsys):
    p = Progress(False)
    p("simulate", 5, 5, "x")
    p.close()
    assert capsys.readouterr().err == ""
