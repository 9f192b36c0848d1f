"""Loads the extension module splitsim._core after telling it where the
simulation worker, the splitsim executable and the shipped scenarios are (_layout.py, written by the
build: paths relative to this package). Variables already set win."""
import os

from . import _layout

_here = os.path.dirname(os.path.abspath(__file__))


def _beside(parts):
    return os.path.normpath(os.path.join(_here, *parts))


# Without a worker executable the C++ side would fork this interpreter for
# each simulation worker; the worker beside the build is always used.
os.environ.setdefault("SPLITSIM_SIMWORKER", _beside(_layout.WORKER))
# validate runs `splitsim exec` for each party: the executable of this build.
os.environ.setdefault("SPLITSIM_EXEC_BIN", _beside(_layout.SPLITSIM))
if os.path.isdir(_beside(_layout.DATA)):
    os.environ.setdefault("SPLITSIM_DATA_DIR", _beside(_layout.DATA))

from . import _core  # noqa: E402  (after the environment above)

InputError = _core.InputError
InputError.__doc__ = (
    "A mistake in the input (a scenario, a keyword argument, a file): a ValueError "
    "whose `where` names the JSON path ('$.partition[1].to'), the file or the argument.")


def input_error(where, message):
    """An InputError as the C++ side makes them: 'where: message'."""
    error = InputError(f"{where}: {message}")
    error.where = where
    return error
