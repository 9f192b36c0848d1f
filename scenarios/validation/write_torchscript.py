#!/usr/bin/python3
"""Writes the TorchScript models of the validation set beside this script,
as a user brings one: torchvision's ShuffleNetV2 (x1.0, 10 classes),
scripted with Debian's python3-torch and python3-torchvision (the LibTorch
series). The scenarios that name it (shufflenet_v2_*.json) find it here
(scenarios/FORMAT.md, "torchscript"). Weights from a fixed seed.

usage: /usr/bin/python3 scenarios/validation/write_torchscript.py [OUTDIR]
"""
import os
import sys

try:
    import torch
    import torchvision
except ImportError as e:
    sys.exit("write_torchscript.py needs Debian's python3-torch and python3-torchvision "
             f"(apt-get install python3-torch python3-torchvision): {e}")


def main():
    if len(sys.argv) > 2:
        sys.exit(__doc__)
    out = sys.argv[1] if len(sys.argv) == 2 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    models = {"shufflenet_v2.pt": torchvision.models.shufflenet_v2_x1_0(num_classes=10)}
    for name, model in models.items():
        path = os.path.join(out, name)
        tmp = path + ".tmp"
        torch.jit.script(model).save(tmp)
        os.replace(tmp, path)  # never a half-written model
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
