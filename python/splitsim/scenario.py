"""Scenario: one experiment, as a scenario file describes it
(scenarios/FORMAT.md), from a file, a dict or keyword arguments, or around
a live torch.nn.Module. Checked when made: a bad field raises InputError
naming its JSON path, as the command line says it."""
import contextlib
import copy
import json
import os
import shutil
import tempfile
import weakref

import pandas as pd

from ._native import _core, input_error


def _json_default(value):
    """numpy scalars and arrays (and anything with .item() / .tolist()) as JSON."""
    for method in ("tolist", "item"):
        if hasattr(value, method):
            return getattr(value, method)()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _dumps(data, where):
    try:
        return json.dumps(data, default=_json_default, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise input_error(where, f"not representable as JSON: {e}") from None


class Scenario:
    """A scenario: ``Scenario("file.json")``, ``Scenario({...})``,
    ``Scenario(name=..., model=..., batch_size=..., partition=[...], ...)``, or
    any of them with keyword arguments replacing top-level fields.

    ``model`` may be a model object ({"name": "resnet20"}), a model name, or a
    ``torch.nn.Module`` with ``example_input`` (a batch): the module is
    scripted (``torch.jit.script``) into a file this Scenario owns and deletes.
    ``base_dir``: where relative paths in a dict start (default: the working
    directory; a file's own directory for a file).
    """

    def __init__(self, source=None, *, model=None, example_input=None, base_dir=None, **fields):
        self._owned_dir = None
        if isinstance(source, Scenario):
            text, directory, name = source._text, source._dir, source._name
            self._owned_dir = source._owned_dir  # keeps the live model's file alive
            data = None
        elif source is None or isinstance(source, dict):
            text, name = None, "<dict>" if source is not None else "<arguments>"
            directory = os.getcwd()
            # Keyword arguments alone: the schema is implied.
            data = copy.deepcopy(source) if source is not None else {"schema": "splitsim.scenario/1"}
        elif isinstance(source, (str, os.PathLike)):
            name = os.fspath(source)
            try:
                with open(name, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise input_error(name, f"cannot read the scenario file: {e.strerror}") from None
            directory = os.path.dirname(name)
            data = None
        else:
            raise input_error("source", "a scenario file's path, a dict or a Scenario; got "
                              + type(source).__name__)
        if base_dir is not None:
            directory = os.fspath(base_dir)
        if model is not None or fields:
            if data is None:
                try:
                    data = json.loads(text)
                except ValueError as e:
                    raise input_error(name, f"not JSON: {e}") from None
            if not isinstance(data, dict):
                raise input_error("$", "a scenario is a JSON object")
            data.update(fields)
            if model is not None:
                data["model"] = self._model_field(model, example_input, data)
        if data is not None:
            text = _dumps(data, "$")
        self._text, self._dir, self._name = text, directory, name
        self._variants = _core.variants(text, directory, name)

    def _model_field(self, model, example_input, data):
        if isinstance(model, str):
            return {"name": model}
        if isinstance(model, dict):
            return model
        from . import live
        if not live.is_module(model):
            raise input_error("model", "a model object, a model name or a torch.nn.Module; got "
                              + type(model).__name__)
        self._owned_dir = tempfile.mkdtemp(prefix="splitsim-model-")
        weakref.finalize(self, shutil.rmtree, self._owned_dir, True)
        field, batch = live.script_to_file(model, example_input,
                                           os.path.join(self._owned_dir, "model.pt"))
        data.setdefault("batch_size", batch)
        return field

    @property
    def name(self):
        return self._name

    @property
    def variants(self):
        """The labels of the sweep's variants, in order ("base" without a sweep)."""
        return [label for label, _ in self._variants]

    def variant(self, label):
        """The scenario of one variant (the sweep applied), as a dict."""
        for each, text in self._variants:
            if each == label:
                return json.loads(text)
        raise input_error("variant", f'no variant is labelled "{label}"; the labels: '
                          + ", ".join(self.variants[:12]))

    def cuts(self, progress=None):
        """The model's valid cut points (``splitsim plan --list-cuts``): a
        DataFrame, one row per cut, and the tensor that crosses it."""
        return pd.DataFrame(self._model_report("cuts", progress)["cuts"])

    def units(self, progress=None):
        """The measured model unit by unit (``splitsim plan --units``): a DataFrame."""
        return pd.DataFrame(self._model_report("units", progress)["units"])

    def _model_report(self, what, progress):
        from .progress import Progress
        with contextlib.closing(Progress(progress)) as bar:
            return json.loads(_core.model_report(*self._source(), what, bar))

    def to_dict(self):
        return json.loads(self._text)

    def _source(self):
        return self._text, self._dir, self._name

    def __repr__(self):
        n = len(self._variants)
        return f"Scenario({self._name!r}, {n} variant{'s' if n != 1 else ''})"


def as_scenario(what, where="scenario"):
    """A Scenario from a Scenario, a dict or a file's path."""
    if isinstance(what, Scenario):
        return what
    if isinstance(what, (dict, str, os.PathLike)):
        return Scenario(what)
    raise input_error(where, "a Scenario, a dict or a scenario file's path; got "
                      + type(what).__name__)
