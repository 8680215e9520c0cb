#!/usr/bin/python3
"""bench_train_torch.py: PyTorch's training steps on a sente network, timed.

Usage: bench_train_torch.py MODEL.sente BATCH STEPS THREADS [nchw|nhwc]

Builds the network of MODEL (a .sente file, e.g. from `sente bench train
--save`; read by tests/train/torch_ref.py's reader) as float32 PyTorch
modules on the CPU and times STEPS steps, after two warm-up steps, of
what `sente bench train` times: random 0/1 planes, policy distributions and
values in {-1, 0, 1}, the forward pass, the policy cross-entropy plus the
value loss (squared error of tanh, or the win/draw/loss cross-entropy),
the backward pass and an SGD step with Nesterov momentum and weight decay.
Batch norm trains on the batch's statistics. Prints one JSON line with
samples/s, as `sente bench train` does.
"""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "train"))
from torch_ref import carve, read_model  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self, arch, tensors):
        super().__init__()
        self.arch = arch
        T = {name: t.float() for name, t, _ in tensors}
        c, hw = arch["channels"], arch["w"] * arch["h"]

        def cbn(name, cin, cout, k):
            conv = torch.nn.Conv2d(cin, cout, k, padding=k // 2)
            bn = torch.nn.BatchNorm2d(cout, eps=1e-5)
            with torch.no_grad():
                conv.weight.copy_(T[name + ".w"])
                conv.bias.copy_(T[name + ".b"])
                bn.weight.copy_(T[name + ".gamma"])
                bn.bias.copy_(T[name + ".beta"])
            return torch.nn.Sequential(conv, bn)

        def fc(name, nin, nout):
            lin = torch.nn.Linear(nin, nout)
            with torch.no_grad():
                lin.weight.copy_(T[name + ".w"])
                lin.bias.copy_(T[name + ".b"])
            return lin

        self.input = cbn("input", arch["in_planes"], c, 3)
        self.tower = torch.nn.ModuleList()
        for i in range(arch["blocks"]):
            self.tower.append(torch.nn.ModuleList([cbn("b%d.1" % i, c, c, 3),
                                                   cbn("b%d.2" % i, c, c, 3)]))
        self.pconv = cbn("pconv", c, arch["pc"], 1)
        self.pfc = fc("pfc", arch["pc"] * hw, arch["po"])
        self.vconv = cbn("vconv", c, arch["vc"], 1)
        self.vfc1 = fc("vfc1", arch["vc"] * hw, arch["vh"])
        self.vfc2 = fc("vfc2", arch["vh"], arch["vo"])

    def forward(self, x):
        x = F.relu(self.input(x))
        for a, b in self.tower:
            x = F.relu(b(F.relu(a(x))) + x)
        n = x.shape[0]
        p = self.pfc(F.relu(self.pconv(x)).reshape(n, -1))
        v = self.vfc2(F.relu(self.vfc1(F.relu(self.vconv(x)).reshape(n, -1))))
        return p, v


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__.strip().split("\n\n")[1])
    model, batch, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    layout = sys.argv[5] if len(sys.argv) == 6 else "nchw"
    if layout not in ("nchw", "nhwc"):
        sys.exit("layout: nchw or nhwc, not " + layout)
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    arch, data = read_model(model)
    net = Net(arch, carve(arch, data))
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    net = net.to(memory_format=fmt)
    n, na = batch, arch["po"]
    planes = torch.randint(0, 2, (n, arch["in_planes"], arch["h"], arch["w"])).float()
    planes = planes.contiguous(memory_format=fmt)
    policy = torch.softmax(torch.rand(n, na), 1)
    value = torch.randint(-1, 2, (n,)).float()
    wdl = torch.stack([value.clamp(min=0), 1 - value.abs(), (-value).clamp(min=0)], 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, nesterov=True,
                          weight_decay=1e-4)
    net.train()

    def step():
        opt.zero_grad(set_to_none=True)
        logits, vo = net(planes)
        loss = -(policy * F.log_softmax(logits, 1)).sum(1).mean()
        if arch["vo"] == 1:
            loss = loss + ((torch.tanh(vo[:, 0]) - value) ** 2).mean()
        else:
            loss = loss - (wdl * F.log_softmax(vo, 1)).sum(1).mean()
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(2):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    sec = time.perf_counter() - t0
    print(json.dumps({"bench": "train", "backend": "pytorch", "torch": torch.__version__,
                      "layout": layout, "board": arch["w"], "blocks": arch["blocks"],
                      "channels": arch["channels"], "batch": n, "steps": steps,
                      "threads": threads, "seconds": round(sec, 4),
                      "samples_per_s": round(n * steps / sec, 2), "loss": round(loss, 5)}))


if __name__ == "__main__":
    main()
