#!/usr/bin/python3
"""Writes the TorchScript test models, as a user would, with Debian's
python3-torch and python3-torchvision (test-only dependencies).

usage: write_models.py OUTDIR

For each model NAME it writes OUTDIR/NAME.pt (torch.jit.script(...).save)
and OUTDIR/NAME.json: what PyTorch itself says about the eager model, for
the C++ tests to compare with (the output shape per sample of every named
submodule, from forward hooks on one sample; the parameter count of every
submodule; the total). Weights come from a fixed seed.
"""
import json
import os
import sys

try:
    import torch
    import torchvision
    from torch import nn
except ImportError as e:  # the message the test log shows
    sys.exit("write_models.py needs Debian's python3-torch and python3-torchvision "
             f"(apt-get install python3-torch python3-torchvision): {e}")


class Block(nn.Module):
    """A pre-norm transformer block: residual adds written in forward."""

    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        y = self.ln1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Encoder(nn.Module):
    """Token ids [T] -> 2 logits: embedding plus a learned position table
    (a parameter used by glue in forward), 3 blocks, mean pooling, head."""

    def __init__(self, vocab=100, d=32, heads=4, layers=3, seq=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 2)

    def forward(self, x):
        x = self.embed(x) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(1))


class Stack(nn.Module):
    """Blocks held by a module that is not a container (as in many
    transformer libraries): one unit unless the scenario splits inside it."""

    def __init__(self, d=32, heads=4, layers=2):
        super().__init__()
        self.layers = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class WrappedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.encoder = Stack()
        self.head = nn.Linear(32, 2)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x)).mean(1))


class Tied(nn.Module):
    """The same Linear used twice: no cut may separate its two uses."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.mid = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.a(self.mid(self.a(x))))


class WholeResidual(nn.Module):
    """x + b(a(x)): the input crosses every point, so it cannot be cut."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        return x + self.b(self.a(x))


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x, y):
        return self.b(self.a(x) + y)


class TupleOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        h = self.a(x)
        return self.b(h), h


class DataDependent(nn.Module):
    """A branch on the values (not traceable): it stays whole in one unit."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.pos = nn.Linear(8, 8)
        self.neg = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        x = self.stem(x)
        if bool(x.sum() > 0):
            x = self.pos(x)
        else:
            x = self.neg(x)
        return self.head(x)


def describe(model, example):
    """Output shape per sample of every named submodule, and parameters."""
    shapes = {}
    hooks = []
    for name, module in model.named_modules():
        if not name:
            continue

        def hook(_module, _inputs, output, name=name):
            if isinstance(output, torch.Tensor):
                shapes[name] = list(output.shape[1:])

        hooks.append(module.register_forward_hook(hook))
    model.eval()
    with torch.no_grad():
        out = model(example)
    for h in hooks:
        h.remove()
    model.train()
    params = {name: sum(p.numel() for p in m.parameters())
              for name, m in model.named_modules() if name}
    return {
        "output_shape": list(out.shape[1:]),
        "shapes": shapes,
        "parameters": params,
        "total_parameters": sum(p.numel() for p in model.parameters()),
    }


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    image = torch.randn(1, 3, 32, 32)
    tokens = torch.randint(0, 100, (1, 16))
    vec = torch.randn(1, 8)
    models = {
        "resnet18": (torchvision.models.resnet18(num_classes=10), image),
        "mobilenet_v2": (torchvision.models.mobilenet_v2(num_classes=10), image),
        "encoder": (Encoder(), tokens),
        # The old work-around: torchvision layers in an nn.Sequential, with
        # ReLU(inplace=True) and Dropout(inplace=True) first in a unit (the
        # dropout writes only in training).
        "sequential_inplace": (nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.5, inplace=True),
            nn.Linear(8, 10)), image),
        "wrapped_encoder": (WrappedEncoder(), tokens),
        "tied": (Tied(), vec),
        "whole_residual": (WholeResidual(), vec),
        "two_inputs": (TwoInputs(), None),
        "tuple_output": (TupleOutput(), None),
        "data_dependent": (DataDependent(), vec),
    }
    for name, (model, example) in models.items():
        torch.jit.script(model).save(os.path.join(out, name + ".pt"))
        if example is not None:
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump(describe(model, example), f, indent=1)
    print(f"wrote {len(models)} TorchScript models to {out}")


if __name__ == "__main__":
    main()
