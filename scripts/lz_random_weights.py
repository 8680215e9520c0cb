#!/usr/bin/env python3
"""Writes a random Leela Zero v1 network (text; gzip'd when PATH ends in .gz).

usage: lz_random_weights.py BLOCKS CHANNELS SEED PATH

For tests and benchmarks that need an LZ net where none can be downloaded
(parity with leelaz, speed). The numbers are drawn so that activations stay of
order one through the tower and the heads are neither flat nor saturated:
conv and FC weights ~ N(0, sqrt(2 / fan_in)) (the policy FC 1.5 times that,
for peaked priors; the value FC2 0.2 times, so tanh stays away from +-1),
biases and BN means small (the head convs' means near -1, so their one or two
channels are not all cut by the ReLU), BN variances in [0.5, 1.5].
The same seed gives the same file (Python's random.Random is stable).

Layout (one tensor per line, floats separated by spaces):
  "1"
  input conv: weights [C][18][3][3], biases [C], BN means [C], BN variances [C]
  per block: conv1 (w, b, mean, var), conv2 (w, b, mean, var), 3x3 C -> C
  policy head: conv 1x1 C -> 2 (w, b, mean, var); FC 722 -> 362 (w [362][722], b)
  value head: conv 1x1 C -> 1 (w, b, mean, var); FC1 361 -> 256 (w, b);
              FC2 256 -> 1 (w, b)
"""
import gzip
import math
import random
import sys

PLANES = 18
AREA = 361


def main(argv):
    if len(argv) != 5:
        sys.stderr.write("usage: lz_random_weights.py BLOCKS CHANNELS SEED PATH\n")
        return 2
    try:
        blocks, channels, seed = int(argv[1]), int(argv[2]), int(argv[3])
    except ValueError:
        sys.stderr.write("BLOCKS, CHANNELS and SEED must be integers\n")
        return 2
    if blocks < 0 or channels < 1:
        sys.stderr.write("need BLOCKS >= 0 and CHANNELS >= 1\n")
        return 2
    path = argv[4]
    rng = random.Random(seed)

    def normal(n, std):
        return [rng.gauss(0.0, std) for _ in range(n)]

    def uniform(n, lo, hi):
        return [rng.uniform(lo, hi) for _ in range(n)]

    lines = []

    def put(values):
        lines.append(" ".join("%.6g" % v for v in values))

    def conv(c_in, c_out, k, gain=1.0, shift=0.0):
        put(normal(c_out * c_in * k * k, gain * math.sqrt(2.0 / (c_in * k * k))))
        put(uniform(c_out, -0.1, 0.1))                  # biases
        put(uniform(c_out, shift - 0.1, shift + 0.1))   # BN means
        put(uniform(c_out, 0.5, 1.5))                   # BN variances

    def fc(n_in, n_out, gain=1.0):
        put(normal(n_out * n_in, gain * math.sqrt(2.0 / n_in)))
        put(uniform(n_out, -0.1, 0.1))

    lines.append("1")
    conv(PLANES, channels, 3)
    for _ in range(blocks):
        conv(channels, channels, 3)
        # The second conv is scaled down so the residual sum grows slowly
        # over deep towers.
        conv(channels, channels, 3, gain=0.5)
    # The head convs have one or two channels: a negative BN mean keeps
    # them mostly above zero, so their ReLU does not silence a whole head.
    conv(channels, 2, 1, shift=-1.0)
    # A sharper policy than He's scale gives: peaks of several percent.
    fc(2 * AREA, AREA + 1, gain=1.5)
    conv(channels, 1, 1, shift=-1.0)
    fc(AREA, 256)
    fc(256, 1, gain=0.2)

    text = "\n".join(lines) + "\n"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
