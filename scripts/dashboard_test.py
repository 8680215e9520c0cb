#!/usr/bin/env python3
"""dashboard_test.py: the dashboard of `sente serve` in a real browser.

A short real Connect Four run, `sente serve` over it, and Debian's chromium
(headless, through python3-selenium and chromium-driver) loading the page:
every chart must have data, the page must update itself when the run adds
iterations, and a screenshot is saved as OUT/dashboard.png. Skips (exit 0,
saying so) when chromium, chromedriver or selenium is missing.

    python3 scripts/dashboard_test.py BIN OUT
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# Small enough for an iteration a second on two cores.
RUN = ["--game", "connect4", "--blocks", "1", "--channels", "8", "--parallel-games", "8",
       "--visits", "16", "--cheap-visits", "4", "--positions", "60", "--batch", "32",
       "--eval-visits", "8", "--eval-positions", "3", "--backend", "cpu", "--quiet",
       # Gating matches (two quick games) give the checkpoints an Elo.
       "--gate-games", "2", "--gate-visits", "8", "--gate-threshold", "0"]
CHARTS = ["ch-loss", "ch-opt", "ch-strength", "ch-elo", "ch-sets", "ch-sets-search", "ch-rate",
          "ch-evals", "ch-batch", "ch-cache", "ch-resign", "ch-time", "ch-eval-net"]


def skip(why):
    print("dashboard_test: skipped: " + why)
    sys.exit(0)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    binary, out = os.path.abspath(sys.argv[1]), sys.argv[2]
    chromium = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        skip("chromium or chromedriver is not installed (apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        skip("python3-selenium is not installed")
    os.makedirs(out, exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix="sente-dash-")
    server = browser = None
    try:
        start = time.time()
        subprocess.run([binary, "run", "--dir", run_dir, "--minutes", "0.4"] + RUN, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=90)
        took = time.time() - start
        assert took < 0.4 * 60 + 15, "--minutes 0.4 took %.0f s" % took
        # `sente eval` measures the saved models afterwards (the network
        # alone: quick), for the evaluations chart.
        subprocess.run([binary, "eval", "--dir", run_dir, "--net-only"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        server = subprocess.Popen([binary, "serve", "--dir", run_dir, "--port", "0"],
                                  stderr=subprocess.PIPE, text=True)
        line = server.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert m, "serve said: " + line
        url = "http://127.0.0.1:%s/" % m.group(1)

        opts = webdriver.ChromeOptions()
        opts.binary_location = chromium
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--window-size=1500,2200"):
            opts.add_argument(a)
        browser = webdriver.Chrome(service=Service(driver), options=opts)
        browser.get(url)

        def wait(cond, what, seconds=25):
            end = time.time() + seconds
            while time.time() < end:
                v = browser.execute_script(cond)
                if v:
                    return v
                time.sleep(0.25)
            raise AssertionError("timed out waiting for " + what)

        wait("return window.senteUpdates >= 1", "the first data")
        points = {}
        for c in CHARTS:
            n = browser.execute_script(
                "var e = document.getElementById(arguments[0]); return e ? +e.dataset.points : -1;", c)
            assert n > 0, "chart %s has no data (%s)" % (c, n)
            points[c] = n
        canvases = browser.execute_script("return document.querySelectorAll('.uplot canvas').length")
        assert canvases >= len(CHARTS), "uPlot drew %d charts" % canvases
        empty = browser.execute_script(
            "return Array.prototype.map.call(document.querySelectorAll('.chart'), function (e) {"
            " return +e.dataset.points ? null : e.id; }).filter(function (x) { return x; })")
        assert not empty, "charts without data: %s" % empty
        gpu = browser.execute_script("return document.getElementById('gpu').textContent")
        assert "absent" in gpu, "the GPU line says: " + gpu
        games = browser.execute_script("return document.querySelectorAll('tr.game').length")
        assert games > 0, "no games listed"
        browser.execute_script("document.querySelector('tr.game').click()")
        wait("return document.getElementById('board').textContent.length > 20", "the game viewer")
        updates = browser.execute_script("return window.senteUpdates")

        # The run goes on: the open page must show the new iterations.
        subprocess.run([binary, "run", "--dir", run_dir, "--minutes", "0.25"] + RUN, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        wait("return window.senteUpdates > %d && +document.getElementById('ch-loss').dataset.points > %d"
             % (updates, points["ch-loss"]), "the page to update", 20)
        shot = os.path.join(out, "dashboard.png")
        browser.save_screenshot(shot)
        print("dashboard_test: %d charts with data, updated live; screenshot %s" % (len(CHARTS), shot))
        return 0
    finally:
        if browser:
            browser.quit()
        if server:
            server.terminate()
            server.wait(10)
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
