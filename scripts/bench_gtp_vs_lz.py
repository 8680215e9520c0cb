#!/usr/bin/env python3
"""Search speed over GTP, as a GUI sees it: sente against Leela Zero.

usage: scripts/bench_gtp_vs_lz.py [--shape 6x64] [--visits 3200]
                                  [--rounds 3] [--threads 2] [--bin bin/sente]

Makes a random Leela Zero v1 network of the shape (scripts/
lz_random_weights.py), starts `leelaz --gtp` and `sente gtp` on it (fp32
and int8, with sente's default CPU lanes and with --nn-lanes 1), all with
the same search threads and no pondering, and in interleaved rounds times
`genmove b` from the empty 19x19 board: from the command written to the
answer read, what a GUI waits for. Each engine first searches once,
untimed, after 1. D4 (network loading, int8 calibration, first-call
costs; a tree the timed search cannot reuse).
playouts/s are the playouts the engine reports for the search (sente's and
leelaz's own log lines on stderr) over that wall time. Prints one JSON line
per round and engine, then the medians and their ratios to Leela Zero.
Run it on a quiet machine.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class Engine:
    def __init__(self, name, argv, playouts_re):
        self.name = name
        self.argv = argv
        self.playouts_re = re.compile(playouts_re)
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.err_lines = []
        self.err_lock = threading.Lock()
        self.reader = threading.Thread(target=self._read_err, daemon=True)
        self.reader.start()

    def _read_err(self):
        for line in self.proc.stderr:
            with self.err_lock:
                self.err_lines.append(line)

    def send(self, cmd):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("%s exited during '%s'" % (self.name, cmd))
            if line.strip() == "" and lines:
                break
            if line.strip():
                lines.append(line.strip())
        if not lines[0].startswith("="):
            raise RuntimeError("%s refused '%s': %s" % (self.name, cmd, lines[0]))
        return lines

    def warm_up(self):
        """One search away from the empty board, so that the timed one
        cannot reuse its tree."""
        self.send("clear_board")
        self.send("play b D4")
        self.send("genmove w")

    def genmove(self):
        """Seconds for one genmove from the empty board, and the playouts
        the engine reported for it."""
        self.send("clear_board")
        with self.err_lock:
            self.err_lines.clear()
        t0 = time.monotonic()
        self.send("genmove b")
        took = time.monotonic() - t0
        playouts = None
        for _ in range(50):  # the log line may trail the answer a little
            with self.err_lock:
                for line in self.err_lines:
                    m = self.playouts_re.search(line)
                    if m:
                        playouts = int(m.group(1))
            if playouts is not None:
                break
            time.sleep(0.02)
        return took, playouts

    def close(self):
        try:
            self.send("quit")
        except (RuntimeError, BrokenPipeError):
            pass
        self.proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="6x64")
    ap.add_argument("--visits", type=int, default=3200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bin", default="bin/sente")
    a = ap.parse_args()
    lz = shutil.which("leelaz") or "/usr/games/leelaz"
    if not os.path.exists(lz):
        sys.exit("bench_gtp_vs_lz: leelaz not found (apt-get install leela-zero)")
    if not os.access(a.bin, os.X_OK):
        sys.exit("bench_gtp_vs_lz: %s not built (make)" % a.bin)
    blocks, channels = a.shape.split("x")
    tmp = tempfile.mkdtemp()
    try:
        w = os.path.join(tmp, "lz-%s.txt.gz" % a.shape)
        subprocess.run([sys.executable, os.path.join(HERE, "lz_random_weights.py"), blocks,
                        channels, "1", w], check=True)
        t, v = str(a.threads), str(a.visits)
        sente_re = r"(\d+) playouts in"
        configs = [
            ("leelaz", [lz, "--gtp", "--cpu-only", "-w", w, "-t", t, "-v", v, "--noponder",
                        "--timemanage", "off", "-r", "0"], r"(\d+) playouts"),
            ("sente_fp32", [a.bin, "gtp", "-w", w, "-t", t, "-v", v, "--noponder", "-r", "0"],
             sente_re),
            ("sente_fp32_one_lane", [a.bin, "gtp", "-w", w, "-t", t, "-v", v, "--noponder",
                                     "-r", "0", "--nn-lanes", "1"], sente_re),
            ("sente_int8", [a.bin, "gtp", "-w", w, "-t", t, "-v", v, "--noponder", "-r", "0",
                            "--precision", "int8"], sente_re),
            ("sente_int8_one_lane", [a.bin, "gtp", "-w", w, "-t", t, "-v", v, "--noponder",
                                     "-r", "0", "--precision", "int8", "--nn-lanes", "1"],
             sente_re),
        ]
        rates = {name: [] for name, _, _ in configs}
        for r in range(a.rounds):
            for name, argv, rx in configs:
                e = Engine(name, argv, rx)
                try:
                    e.send("boardsize 19")
                    e.send("komi 7.5")
                    e.warm_up()
                    took, playouts = e.genmove()
                finally:
                    e.close()
                n = playouts if playouts is not None else a.visits
                rate = n / took
                rates[name].append(rate)
                print(json.dumps({"bench": "gtp_vs_leelaz", "round": r + 1, "engine": name,
                                  "net": a.shape, "visits": a.visits, "threads": a.threads,
                                  "playouts": n, "seconds": round(took, 3),
                                  "playouts_per_s": round(rate, 1)}), flush=True)
        med = {k: statistics.median(v) for k, v in rates.items()}
        out = {"bench": "gtp_vs_leelaz", "summary": True, "net": a.shape, "visits": a.visits,
               "threads": a.threads, "rounds": a.rounds}
        for k, m in med.items():
            out[k + "_playouts_per_s"] = round(m, 1)
            if k != "leelaz" and med["leelaz"] > 0:
                out[k + "_ratio"] = round(m / med["leelaz"], 2)
        print(json.dumps(out), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
