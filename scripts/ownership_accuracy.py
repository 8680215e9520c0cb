#!/usr/bin/env python3
"""ownership_accuracy.py: how well the ownership that GUIs are shown predicts
who owns each point at the end of real games.

Takes the played-out Go games of a run's store (DB, its newest ones; a game
that ended by resignation has no final owners and is skipped), and at the
given plies asks `sente gtp` for GoGui's ownership board twice: with MODEL
(whose ownership head answers, when it has one) and without a network (200
fast random playouts, what sente shows for a network without the head).
Each is compared with the game's final area (Tromp-Taylor: stones, and
empty regions bordered by one colour only), computed here from the moves.

    python3 scripts/ownership_accuracy.py BIN DB MODEL [--games N] [--plies 10,20,40]

Prints, per ply and source, the mean |ownership - final owner| over every
point (0 best, 2 worst) and the share of settled points (owned by one side
at the end) whose owner the sign of the ownership names. Use games the
model did not train on (another run's store) for an honest figure.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def gtp(binary, args, cmds):
    """The answers (lists of lines) of `sente gtp ARGS` to cmds, quit included."""
    p = subprocess.run([binary, "gtp", "-q", "--noponder"] + args,
                       input="\n".join(cmds + ["quit"]) + "\n",
                       capture_output=True, text=True, timeout=600, check=False)
    answers, cur = [], None
    for line in p.stdout.split("\n"):
        if line.startswith("="):
            cur = [line[1:].strip()]
            answers.append(cur)
        elif line.startswith("?"):
            sys.exit("sente gtp refused a command: %s" % line)
        elif cur is not None and line.strip():
            cur.append(line.strip())
    return answers


def final_area(moves, n):
    """Black +1, White -1, neither 0 for every point (top row first) after
    the moves [(colour, sgf point or '' for a pass)], captures played."""
    board = {}

    def neighbours(p):
        x, y = p
        for q in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if 0 <= q[0] < n and 0 <= q[1] < n:
                yield q

    def group(p):
        colour, stones, todo, libs = board[p], {p}, [p], set()
        while todo:
            q = todo.pop()
            for r in neighbours(q):
                if r not in board:
                    libs.add(r)
                elif board[r] == colour and r not in stones:
                    stones.add(r)
                    todo.append(r)
        return stones, libs

    for colour, mv in moves:
        if not mv:
            continue
        p = (ord(mv[0]) - 97, ord(mv[1]) - 97)
        board[p] = colour
        for r in list(neighbours(p)):
            if r in board and board[r] != colour:
                stones, libs = group(r)
                if not libs:
                    for q in stones:
                        del board[q]
        stones, libs = group(p)
        if not libs:  # suicide, where the rules allow it
            for q in stones:
                del board[q]
    own = []
    for y in range(n):
        for x in range(n):
            p = (x, y)
            if p in board:
                own.append(1.0 if board[p] == "B" else -1.0)
                continue
            seen, todo, border = {p}, [p], set()
            while todo:
                q = todo.pop()
                for r in neighbours(q):
                    if r in board:
                        border.add(board[r])
                    elif r not in seen:
                        seen.add(r)
                        todo.append(r)
            own.append(1.0 if border == {"B"} else -1.0 if border == {"W"} else 0.0)
    return own


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("db")
    ap.add_argument("model")
    ap.add_argument("--games", type=int, default=30, help="newest played-out games (30)")
    ap.add_argument("--plies", default="10,20,40", help="plies to look at (10,20,40)")
    a = ap.parse_args()
    plies = [int(k) for k in a.plies.split(",")]
    out = tempfile.mkdtemp(prefix="sente_own_")
    ids = subprocess.run(["sqlite3", a.db, "select id from games where resigned = -1 and "
                          "game = 'go' order by id desc limit %d" % a.games],
                         capture_output=True, text=True, check=True).stdout.split()
    for gid in ids:
        subprocess.run([a.binary, "db", a.db, "export-sgf", out, "--game-id", gid],
                       capture_output=True, check=True)
    stats, used = {}, 0
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name)
        sgf = open(path).read()
        size = int(re.search(r"SZ\[(\d+)\]", sgf).group(1))
        moves = re.findall(r";([BW])\[([a-s]*)\]", sgf)
        if len(moves) < max(plies) + 2:
            continue
        used += 1
        truth = final_area(moves, size)
        for k in plies:
            cmds = ["boardsize %d" % size, "loadsgf %s %d" % (path, k + 1), "gogui-sente-ownership"]
            for src, args in (("model", ["-w", a.model]), ("playouts", [])):
                own = [float(v) for line in gtp(a.binary, args, cmds)[-2] for v in line.split()]
                st = stats.setdefault((k, src), [0.0, 0, 0, 0])
                for o, t in zip(own, truth):
                    st[0] += abs(o - t)
                    st[1] += 1
                    if t != 0:
                        st[2] += (o > 0) == (t > 0)
                        st[3] += 1
    subprocess.run(["rm", "-rf", out], check=False)
    print("%d played-out games of %s, at least %d plies long" % (used, a.db, max(plies) + 2))
    for (k, src), st in sorted(stats.items()):
        print("ply %3d  %-8s  mean |own - final| %.3f  owner right %5.1f%% of %d settled points"
              % (k, src, st[0] / max(st[1], 1), 100.0 * st[2] / max(st[3], 1), st[3]))


if __name__ == "__main__":
    main()
