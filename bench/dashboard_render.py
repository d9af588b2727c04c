#!/usr/bin/env python3
"""How long the dashboard's page works per poll with many shards, in headless Chromium.

    python3 bench/dashboard_render.py [--shards 1000] [--moves 20] [--polls 30] [--json-only]

The page is the real one (src/observability/dashboard: index.html, dashboard.js, dashboard.css),
unmodified, served with a fake management API on 127.0.0.1: one type with --shards shards over
five nodes, each poll answering with --moves shards moved to another node and every rate
changed (the worst case for the page's in-place updates). A probe script, put in the page
before dashboard.js, times each poll in the page's own clock: from the moment the last of the
poll's answers arrived (its body read) to the end of the updates it caused, plus the style and
layout they force. That is the time the page's thread is busy per poll; a poll every second
(the default interval) leaves the page responsive while it stays well under a frame budget.

Prints one JSON line per case, then a table (unless --json-only). Needs /usr/bin/chromium
(scripts/setup.sh installs it). Stops by itself: Chromium is killed after --polls polls or 60 s.
"""

import argparse
import http.server
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DASHBOARD = os.path.join(ROOT, "src", "observability", "dashboard")
CHROMIUM = "/usr/bin/chromium"
NODES = ["a", "b", "c", "d", "e"]

# Timed in the page: the last answer body of a poll read (Response.text) to the polls counter
# that dashboard.js sets once it has applied them, plus a forced style and layout.
PROBE = r"""
(() => {
  let lastBody = null;
  const samples = [];
  const text = Response.prototype.text;
  Response.prototype.text = async function () {
    const body = await text.call(this);
    lastBody = performance.now();
    return body;
  };
  new MutationObserver(() => {
    if (lastBody === null) return;
    void document.body.offsetHeight;  // the style and layout the updates need
    samples.push(performance.now() - lastBody);
    lastBody = null;
    if (samples.length === Number(new URLSearchParams(location.search).get('polls'))) {
      fetch('/bench/result', { method: 'POST', body: JSON.stringify({
        samples, cells: document.querySelectorAll('#map .cell').length,
        moves: document.querySelectorAll('#events [data-kind="handoff"]').length }) });
    }
  }).observe(document.documentElement, { attributes: true, attributeFilter: ['data-polls'],
                                          subtree: true });
})();
"""


class FakeNode:
    """The management API's answers for one type, changing at each poll."""

    def __init__(self, shards, moves, seed=7):
        self.random = random.Random(seed)
        self.shards = shards
        self.moves = moves
        self.owner = [NODES[s % len(NODES)] for s in range(shards)]
        self.polls = 0

    def members(self):
        return {"cluster": "bench", "self": "a", "members": [
            {"node": n, "address": f"127.0.0.1:{2551 + i}", "reachability":
             "self" if n == "a" else "connected", "roles": [], "app_version": "1",
             "incarnation": 1, "leaving": False} for i, n in enumerate(NODES)]}

    def shard_view(self):
        self.polls += 1
        for shard in self.random.sample(range(self.shards), min(self.moves, self.shards)):
            others = [n for n in NODES if n != self.owner[shard]]
            self.owner[shard] = self.random.choice(others)
        view = []
        for shard in range(self.shards):
            local = self.owner[shard] == "a"
            rate = round(self.random.uniform(0, 50), 1) if local else None
            view.append({"shard": shard, "owner": self.owner[shard], "epoch": 100 + shard,
                         "entities": self.random.randint(0, 40) if local else None,
                         "messages": self.random.randint(0, 10**6) if local else None,
                         "messages_per_second": rate, "local": local,
                         "hot_keys": [{"id": f"user-{self.random.randint(0, 10**6)}",
                                       "count": self.random.randint(1, 500)}] if local else []})
        return {"type": "cart", "num_shards": self.shards, "coordinator": "b", "shards": view}


def serve(node, polls, results):
    page = open(os.path.join(DASHBOARD, "index.html"), encoding="utf-8").read()
    tag = '<script src="/dashboard/dashboard.js"></script>'
    assert tag in page, "index.html no longer loads /dashboard/dashboard.js"
    page = page.replace(tag, '<script src="/bench/probe.js"></script>\n  ' + tag)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, body, content_type):
            data = body.encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/dashboard":
                self.reply(page, "text/html")
            elif path in ("/dashboard/dashboard.js", "/dashboard/dashboard.css"):
                name = os.path.basename(path)
                kind = "text/javascript" if name.endswith(".js") else "text/css"
                self.reply(open(os.path.join(DASHBOARD, name), encoding="utf-8").read(), kind)
            elif path == "/bench/probe.js":
                self.reply(PROBE, "text/javascript")
            elif path == "/cluster/types":
                self.reply(json.dumps({"types": ["cart"]}), "application/json")
            elif path == "/cluster/members":
                self.reply(json.dumps(node.members()), "application/json")
            elif path == "/cluster/shards/cart":
                self.reply(json.dumps(node.shard_view()), "application/json")
            elif path == "/metrics":
                self.reply(f"troupe_dead_letters_total{{reason=\"mailbox_full\"}} {node.polls}\n",
                           "text/plain; version=0.0.4")
            else:
                self.send_error(404)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            results.append(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_case(shards, moves, polls):
    node = FakeNode(shards, moves)
    results = []
    server = serve(node, polls, results)
    url = (f"http://127.0.0.1:{server.server_address[1]}/dashboard"
           f"?type=cart&interval=100&polls={polls}")
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        chromium = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", f"--user-data-dir={profile}", url],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while not results and time.monotonic() < deadline and chromium.poll() is None:
            time.sleep(0.05)
        os.killpg(chromium.pid, signal.SIGKILL)
        chromium.wait()
        # Its zygote, renderer and GPU processes leave the group; they all name the profile.
        subprocess.run(["pkill", "-9", "-f", profile], check=False)
    server.shutdown()
    if not results:
        sys.exit(f"dashboard_render: the page reported no result within 60 s ({url})")
    result = results[0]
    if result["cells"] != shards:
        sys.exit(f"dashboard_render: the map has {result['cells']} cells, expected {shards}")
    # The first poll builds the map; the others update it in place.
    first, rest = result["samples"][0], result["samples"][1:]
    return {"bench": "dashboard", "case": f"poll_{shards}_shards",
            "value": statistics.median(rest), "unit": "ms", "runs": rest,
            "params": {"shards": shards, "moves_per_poll": moves, "polls": polls,
                       "first_poll_ms": first, "max_ms": max(rest),
                       "handoff_events_shown": result["moves"],
                       "value": "median page time per poll after the first: answers read to "
                                "updates applied, style and layout included"}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--moves", type=int, default=20)
    parser.add_argument("--polls", type=int, default=30)
    parser.add_argument("--json-only", action="store_true")
    args = parser.parse_args()
    if not os.path.exists(CHROMIUM):
        sys.exit(f"dashboard_render: {CHROMIUM} is not installed (scripts/setup.sh)")
    cases = [run_case(n, args.moves, args.polls) for n in args.shards]
    for case in cases:
        print(json.dumps(case))
    if args.json_only:
        return
    print(f"\n{'case':<24} {'median ms':>10} {'max ms':>8} {'first poll ms':>14}")
    for case in cases:
        p = case["params"]
        print(f"{case['case']:<24} {case['value']:>10.2f} {p['max_ms']:>8.2f} "
              f"{p['first_poll_ms']:>14.2f}")
    print(f"({args.polls} polls per case, {args.moves} shards moved and every local rate "
          "changed per poll, headless Chromium)")


if __name__ == "__main__":
    main()
