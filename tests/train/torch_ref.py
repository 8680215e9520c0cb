#!/usr/bin/env python3
"""torch_ref.py: the PyTorch reference for sente's trainer (tests/train).

Usage: torch_ref.py MODEL.sente BATCH.bin OUT.bin STEPS LR MOMENTUM WD VALUE_WEIGHT BN_MOMENTUM
                   [adamw BETA1 BETA2 EPS CLIP] [heads OPP_WEIGHT OWN_WEIGHT SCORE_WEIGHT]

Reads a .sente model (format at the top of nn/net.h) and a batch written by
the test (little-endian: i32 n, in_size, n_actions, has_wdl; f32 planes
[n][in_size], policy [n][n_actions], value [n], wdl [n][3] when has_wdl;
then for the heads the model has: the opponent's reply [n][n_actions], the
owners [n][points] and their weights [n], the score [n] and its weights [n]),
builds the same network in float64, and runs STEPS steps of
torch.optim.SGD(nesterov=True) on the loss

    policy cross-entropy + VALUE_WEIGHT * value loss + WD * sum(w^2)
    + OPP_WEIGHT * opponent-reply cross-entropy
    + OWN_WEIGHT * ownership cross-entropy (per point, (1 + tanh z) / 2)
    + SCORE_WEIGHT * score squared error

(the heads' terms where the model has them, as train/trainer.h defines
them)
(w: conv and FC weights), batch norm in training mode with running
statistics updated by BN_MOMENTUM. With "adamw": torch.optim.AdamW
(BETA1, BETA2, EPS; MOMENTUM unused) with decoupled decay WD on the same
weights only, the loss without the l2 term (still reported), and the
gradient scaled by CLIP / norm when its global L2 norm exceeds CLIP > 0
(sente's clipping, see train/trainer.h). Writes OUT: f64 [STEPS][7] (the
losses of each step, before its update, see below), then the updated
tensors as f32 in the model file's order. Each step's losses are then
f64 [7]: policy, value, l2, total, opponent reply, ownership, score
(0 for a head the model lacks).
"""
import struct
import sys

import torch
import torch.nn.functional as F

EPS = 1e-5


def read_model(path):
    b = open(path, "rb").read()
    assert b[:8] == b"SENTENET", "not a sente model"
    version, hlen = struct.unpack_from("<II", b, 8)
    h = b[16:16 + hlen]
    f = struct.unpack_from("<14I", h, 0)
    arch = dict(zip(["game", "w", "h", "enc", "in_planes", "blocks", "channels", "se",
                     "pc", "po", "vc", "vh", "vo", "flags"], f))
    assert arch["flags"] & 1 == 0, "folded nets do not train"
    kinds = h[14 * 4 + 16 + 128:14 * 4 + 16 + 128 + arch["blocks"]]
    assert all(k in (0, 1) for k in kinds), "block kinds: plain (0) and SE (1) only"
    arch["kinds"] = list(kinds)
    pos = 16 + hlen
    (n,) = struct.unpack_from("<Q", b, pos)
    data = torch.frombuffer(bytearray(b[pos + 8:pos + 8 + 4 * n]), dtype=torch.float32)
    return arch, data.to(torch.float64)


def carve(arch, data):
    """Tensors in file order: list of (name, tensor, kind) with kind in
    'w' (decayed weight), 'p' (other parameter), 'r' (running stat)."""
    out = []
    pos = 0
    hw = arch["w"] * arch["h"]

    def take(name, shape, kind):
        nonlocal pos
        cnt = 1
        for s in shape:
            cnt *= s
        t = data[pos:pos + cnt].clone().reshape(shape)
        pos += cnt
        out.append((name, t, kind))

    def conv(name, cin, cout, k):
        take(name + ".w", (cout, cin, k, k), "w")
        take(name + ".b", (cout,), "p")
        take(name + ".mean", (cout,), "r")
        take(name + ".var", (cout,), "r")
        take(name + ".gamma", (cout,), "p")
        take(name + ".beta", (cout,), "p")

    def fc(name, nin, nout):
        take(name + ".w", (nout, nin), "w")
        take(name + ".b", (nout,), "p")

    c = arch["channels"]
    conv("input", arch["in_planes"], c, 3)
    for i in range(arch["blocks"]):
        conv("b%d.1" % i, c, c, 3)
        conv("b%d.2" % i, c, c, 3)
        if arch["kinds"][i] == 1:
            fc("b%d.se1" % i, c, arch["se"])
            fc("b%d.se2" % i, arch["se"], 2 * c)
    conv("pconv", c, arch["pc"], 1)
    fc("pfc", arch["pc"] * hw, arch["po"])
    conv("vconv", c, arch["vc"], 1)
    fc("vfc1", arch["vc"] * hw, arch["vh"])
    fc("vfc2", arch["vh"], arch["vo"])
    if arch["flags"] & 2:
        fc("ofc", arch["pc"] * hw, arch["po"])
    if arch["flags"] & 4:
        fc("own", arch["vc"], 1)
    if arch["flags"] & 8:
        fc("sfc", arch["vh"], 1)
    assert pos == data.numel()
    return out


def main():
    (model, batch, outp, steps, lr, mom, wd, vw, bnm) = sys.argv[1:10]
    steps, lr, mom, wd, vw, bnm = int(steps), float(lr), float(mom), float(wd), float(vw), float(bnm)
    rest, adamw, hw_opp, hw_own, hw_score = sys.argv[10:], False, 0.0, 0.0, 0.0
    while rest:
        if rest[0] == "adamw":
            adamw = True
            b1, b2, eps, clip = (float(v) for v in rest[1:5])
            rest = rest[5:]
        elif rest[0] == "heads":
            hw_opp, hw_own, hw_score = (float(v) for v in rest[1:4])
            rest = rest[4:]
        else:
            sys.exit("unknown argument " + rest[0])
    torch.set_num_threads(1)
    arch, data = read_model(model)
    tensors = carve(arch, data)
    T = {name: t for name, t, _ in tensors}
    for name, t, kind in tensors:
        if kind != "r":
            t.requires_grad_(True)
    bb = open(batch, "rb").read()
    n, in_size, na, has_wdl = struct.unpack_from("<4i", bb, 0)
    fl = torch.frombuffer(bytearray(bb[16:]), dtype=torch.float32).to(torch.float64)
    p = 0
    planes = fl[p:p + n * in_size].reshape(n, arch["in_planes"], arch["h"], arch["w"])
    p += n * in_size
    policy = fl[p:p + n * na].reshape(n, na)
    p += n * na
    value = fl[p:p + n]
    p += n
    if has_wdl:
        wdl = fl[p:p + 3 * n].reshape(n, 3)
        p += 3 * n
    else:
        wdl = torch.stack([value.clamp(min=0), 1 - value.abs(), (-value).clamp(min=0)], 1)
    hw = arch["w"] * arch["h"]
    if arch["flags"] & 2:
        opp = fl[p:p + n * na].reshape(n, na)
        p += n * na
    if arch["flags"] & 4:
        own, own_w = fl[p:p + n * hw].reshape(n, hw), fl[p + n * hw:p + n * hw + n]
        p += n * hw + n
    if arch["flags"] & 8:
        score, score_w = fl[p:p + n], fl[p + n:p + 2 * n]
        p += 2 * n
    assert p == fl.numel(), "the batch file does not match the model's heads"

    def cbr(x, name, k):
        y = F.conv2d(x, T[name + ".w"], T[name + ".b"], padding=k // 2)
        y = F.batch_norm(y, T[name + ".mean"], T[name + ".var"], T[name + ".gamma"],
                         T[name + ".beta"], training=True, momentum=bnm, eps=EPS)
        return y

    params = [t for _, t, kind in tensors if kind != "r"]
    decayed = [t for _, t, kind in tensors if kind == "w"]
    if adamw:
        undecayed = [t for _, t, kind in tensors if kind == "p"]
        opt = torch.optim.AdamW([{"params": decayed, "weight_decay": wd},
                                 {"params": undecayed, "weight_decay": 0.0}],
                                lr=lr, betas=(b1, b2), eps=eps)
    else:
        opt = torch.optim.SGD(params, lr=lr, momentum=mom, nesterov=True)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        x = F.relu(cbr(planes, "input", 3))
        for i in range(arch["blocks"]):
            y = F.relu(cbr(x, "b%d.1" % i, 3))
            u = cbr(y, "b%d.2" % i, 3)
            if arch["kinds"][i] == 1:
                # Squeeze-excitation: a gate and a bias per channel.
                # Masked pooling (flag 16): the mean over the board, which
                # the on-board plane (go_native's 26) marks.
                if arch["flags"] & 16:
                    m = (planes[:, 26:27] > 0.5).to(u.dtype)
                    pool = (u * m).sum((2, 3)) / m.sum((2, 3))
                else:
                    pool = u.mean((2, 3))
                hid = F.relu(F.linear(pool, T["b%d.se1.w" % i], T["b%d.se1.b" % i]))
                z = F.linear(hid, T["b%d.se2.w" % i], T["b%d.se2.b" % i])
                c = arch["channels"]
                u = torch.sigmoid(z[:, :c])[:, :, None, None] * u + z[:, c:, None, None]
            x = F.relu(u + x)
        pz = F.relu(cbr(x, "pconv", 1)).reshape(n, -1)
        logits = F.linear(pz, T["pfc.w"], T["pfc.b"])
        pl = -(policy * F.log_softmax(logits, 1)).sum(1).mean()
        zero = torch.zeros((), dtype=torch.float64)
        ol = ownl = sl = zero
        if arch["flags"] & 2:
            ologits = F.linear(pz, T["ofc.w"], T["ofc.b"])
            ol = -(opp * F.log_softmax(ologits, 1)).sum(1).mean()
        vmap = F.relu(cbr(x, "vconv", 1))
        vz = vmap.reshape(n, -1)
        if arch["flags"] & 4:
            # z at every point: the channels weighted, one weight each.
            z = torch.einsum("ncp,c->np", vmap.reshape(n, arch["vc"], hw), T["own.w"][0]) + T["own.b"]
            a = (1 + own) / 2
            ownl = (own_w[:, None] * (F.softplus(2 * z) - a * 2 * z)).mean()
        hid = F.relu(F.linear(vz, T["vfc1.w"], T["vfc1.b"]))
        if arch["flags"] & 8:
            s_out = F.linear(hid, T["sfc.w"], T["sfc.b"])[:, 0]
            sl = (score_w * (s_out - score) ** 2).mean()
        vo = F.linear(hid, T["vfc2.w"], T["vfc2.b"])
        if arch["vo"] == 1:
            vl = ((torch.tanh(vo[:, 0]) - value) ** 2).mean()
        else:
            vl = -(wdl * F.log_softmax(vo, 1)).sum(1).mean()
        l2 = wd * sum((w * w).sum() for w in decayed)
        total = (pl + vw * vl + hw_opp * ol + hw_own * ownl + hw_score * sl
                 + (0 if adamw else l2))
        total.backward()
        if adamw and clip > 0:
            norm = torch.sqrt(sum((t.grad * t.grad).sum() for t in params))
            if norm > clip:
                for t in params:
                    t.grad.mul_(clip / norm)
        opt.step()
        losses += [pl.item(), vl.item(), l2.item(), total.item(), ol.item(), ownl.item(), sl.item()]
    with open(outp, "wb") as f:
        f.write(struct.pack("<%dd" % len(losses), *losses))
        flat = torch.cat([t.detach().reshape(-1) for _, t, _ in tensors]).to(torch.float32)
        f.write(flat.numpy().tobytes())


if __name__ == "__main__":
    main()
