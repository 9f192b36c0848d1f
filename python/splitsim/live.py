"""A live torch.nn.Module as a scenario's model: scripted with
torch.jit.script and saved where the Scenario says, then named in the
scenario as a TorchScript model (scenarios/FORMAT.md "Model"), exactly as if
the user had saved it and written the file's path. torch is imported only
here, so the rest of the package runs without python3-torch."""
from ._native import input_error

_DTYPES = {"torch.float32": "float32", "torch.int64": "int64"}


def is_module(model):
    try:
        import torch
    except ImportError:
        return False
    return isinstance(model, torch.nn.Module)


def script_to_file(module, example_input, path):
    """Scripts `module` (a ScriptModule is saved as it is) to `path`; returns
    the scenario's model field and the example's batch size."""
    import torch
    if not isinstance(example_input, torch.Tensor) or example_input.dim() < 1:
        raise input_error("example_input", "a live model needs example_input, a batch "
                          "(a tensor whose first dimension is the batch)")
    dtype = _DTYPES.get(str(example_input.dtype))
    if dtype is None:
        raise input_error("example_input", f"dtype {example_input.dtype}; splitsim feeds "
                          "float32 inputs or int64 token ids")
    scripted = module
    if not isinstance(module, torch.jit.ScriptModule):
        try:
            scripted = torch.jit.script(module)
        except Exception as e:  # torch raises several kinds; all mean "cannot script"
            raise input_error("model", f"torch.jit.script failed: {e}") from None
    scripted.save(path)
    field = {"name": "torchscript", "path": path, "input_shape": list(example_input.shape[1:])}
    if dtype != "float32":
        field["input_dtype"] = dtype
    return field, int(example_input.shape[0])
