#!/usr/bin/env python3
"""Tests of run.py (make run, make reset) against two fake services; `make test-unit` runs it.

The fakes are this file started as bin/analysis-svc and bin/case-svc: they answer /readyz and the few API calls
run.py makes, accept only the bootstrap key they saw first (as the real services keep the first superadmin),
write their pid to <database.path>/pid and fail at start when FAKE_FAIL names them. Every wait polls with a
deadline. Only the Python standard library is used.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_PY = os.path.join(HERE, "run.py")
DEADLINE = 30.0


# --- the fake service ---------------------------------------------------------------------------------------------

def fake(name):
    import http.server

    prefix = "ANALYSIS_" if name == "analysis-svc" else "CASE_"
    db = os.environ[prefix + "DATABASE_PATH"]
    os.makedirs(db, exist_ok=True)
    with open(os.path.join(db, "pid"), "w") as f:
        f.write(str(os.getpid()))
    if os.environ.get("FAKE_FAIL") == name:
        print(f"fatal: fake failure of {name}", flush=True)
        sys.exit(3)
    keys_path = os.path.join(db, "keys.json")
    if not os.path.exists(keys_path):
        with open(keys_path, "w") as f:
            json.dump({os.environ[prefix + "BOOTSTRAP_KEY"]: "admin"}, f)
    with open(keys_path) as f:
        keys = json.load(f)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, status, body):
            raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def handle_any(self):
            if self.headers.get("Content-Length"):
                self.rfile.read(int(self.headers["Content-Length"]))
            path = self.path.split("?")[0]
            if path == "/readyz":
                return self.answer(200, "ok")
            key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            if key not in keys:
                return self.answer(401, {"type": "AuthenticationError", "message": "Authentication failure"})
            parts = path.strip("/").split("/")
            if path == "/api/user/current":
                return self.answer(200, {"login": keys[key]})
            if parts[:2] == ["api", "user"] and parts[-1] in ("key", "renew"):
                login = parts[2]
                user_key = f"{name}-{login}-key".ljust(32, "x")
                keys[user_key] = login
                return self.answer(200, user_key)
            if path.endswith("definition"):
                return self.answer(200, [{"id": "Observable_Validator_1_0", "builtin": True}])
            if path == "/api/connector/analysis/analyzer":
                return self.answer(200, [{"id": "validator-id", "name": "Observable_Validator"}])
            return self.answer(201 if self.command == "POST" else 200, {})

        do_GET = do_POST = handle_any

    host, port = os.environ[prefix + "HTTP_ADDR"].rsplit(":", 1)
    server = http.server.ThreadingHTTPServer((host, int(port)), Handler)

    def stop(*_):
        print(f"{name} stopping", flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"{name} listening on {host}:{port}", flush=True)
    server.serve_forever()


# --- helpers --------------------------------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dead(pid):
    """True when pid is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def eventually(cond, what, deadline=DEADLINE):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {deadline}s: {what}")


class Run:
    """run.py started in the background, its output collected by a thread."""

    def __init__(self, env):
        self.proc = subprocess.Popen([sys.executable, RUN_PY], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self):
        return "".join(self.lines)

    def wait_output(self, text):
        eventually(lambda: text in self.output or self.proc.poll() is not None, f"{text!r} in the output")
        if text not in self.output:
            self.proc.wait(DEADLINE)
            self.reader.join(DEADLINE)
            raise AssertionError(f"run.py exited ({self.proc.returncode}) without {text!r}:\n{self.output}")

    def wait_exit(self):
        rc = self.proc.wait(DEADLINE)
        self.reader.join(DEADLINE)
        self.proc.stdout.close()
        return rc


class RunTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="run-test-")
        self.addCleanup(self.tmp.cleanup)
        root = self.tmp.name
        self.run_dir = os.path.join(root, "run")
        bin_dir = os.path.join(root, "bin")
        os.makedirs(bin_dir)
        for name in ("analysis-svc", "case-svc"):
            path = os.path.join(bin_dir, name)
            with open(path, "w") as f:
                f.write(f'#!/bin/sh\nexec "{sys.executable}" "{os.path.abspath(__file__)}" fake {name}\n')
            os.chmod(path, 0o755)
        self.env = dict(os.environ, RUN_DIR=self.run_dir, RUN_BIN=bin_dir, RUN_ANALYSIS_PORT=str(free_port()),
                        RUN_CASE_PORT=str(free_port()), RUN_READY_TIMEOUT=str(DEADLINE))
        self.env.pop("FAKE_FAIL", None)
        self.runs = []
        self.addCleanup(self.kill_all)

    def kill_all(self):
        for r in self.runs:
            if r.proc.poll() is None:
                r.proc.kill()
            r.wait_exit()
        for pid in self.fake_pids():
            if not dead(pid):
                os.kill(pid, signal.SIGKILL)

    def start(self, env=None):
        r = Run(env or self.env)
        self.runs.append(r)
        return r

    def once(self, *args, env=None):
        p = subprocess.run([sys.executable, RUN_PY, *args], env=env or self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=DEADLINE)
        return p.returncode, p.stdout

    def fake_pids(self):
        pids = []
        for name in ("analysis", "case"):
            try:
                with open(os.path.join(self.run_dir, "data", name, "pid")) as f:
                    pids.append(int(f.read()))
            except (OSError, ValueError):
                pass
        return pids

    def fake_pid(self, name):
        with open(os.path.join(self.run_dir, "data", name, "pid")) as f:
            return int(f.read())

    def creds(self):
        with open(os.path.join(self.run_dir, "credentials.json")) as f:
            return json.load(f)

    def assert_all_stopped(self):
        pids = self.fake_pids()
        self.assertTrue(pids)
        eventually(lambda: all(dead(p) for p in pids), f"fake services {pids} stopped")

    def started(self):
        r = self.start()
        r.wait_output("Ctrl-C stops both services")
        return r

    # --- the tests ---

    def test_run_then_second_run_reset_and_stop(self):
        r = self.started()
        self.assertEqual(os.stat(os.path.join(self.run_dir, "credentials.json")).st_mode & 0o777, 0o600)
        creds = self.creds()
        for role in ("analysis-superadmin", "analysis-demo-orgadmin", "case-superadmin", "case-demo-analyst"):
            self.assertIn(creds[role]["key"], r.output, role)  # every role's key is in the file and the banner
        self.assertEqual(creds["case-connector"]["observableValidatorId"], "validator-id")
        with open(os.path.join(self.run_dir, "run.pid")) as f:
            self.assertEqual(int(f.read()), r.proc.pid)

        rc, out = self.once()
        self.assertEqual(rc, 1, out)
        self.assertIn(f"already running (pid {r.proc.pid})", out)
        self.assertNotIn("started", out)
        rc, out = self.once("--preflight")
        self.assertEqual(rc, 1, out)
        self.assertIn(f"already running (pid {r.proc.pid})", out)
        rc, out = self.once("--reset")
        self.assertEqual(rc, 1, out)
        self.assertIn(f"make run is running (pid {r.proc.pid})", out)
        self.assertTrue(os.path.exists(os.path.join(self.run_dir, "credentials.json")))

        r.proc.send_signal(signal.SIGTERM)
        self.assertEqual(r.wait_exit(), 0, r.output)
        self.assert_all_stopped()
        self.assertFalse(os.path.exists(os.path.join(self.run_dir, "run.pid")))

        # Again: the same data and keys; Ctrl-C stops it.
        r = self.started()
        self.assertEqual(self.creds()["analysis-superadmin"], creds["analysis-superadmin"])
        r.proc.send_signal(signal.SIGINT)
        self.assertEqual(r.wait_exit(), 0, r.output)
        self.assert_all_stopped()

        # credentials.json gone, data still there: refuses before starting anything, names the reset.
        os.remove(os.path.join(self.run_dir, "credentials.json"))
        logs = {n: os.path.getsize(os.path.join(self.run_dir, n)) for n in ("analysis-svc.log", "case-svc.log")}
        rc, out = self.once()
        self.assertEqual(rc, 1, out)
        self.assertIn("credentials.json is gone", out)
        self.assertIn(f"rm -rf {self.run_dir}", out)
        self.assertEqual(logs, {n: os.path.getsize(os.path.join(self.run_dir, n)) for n in logs})

        rc, out = self.once("--reset")
        self.assertEqual(rc, 0, out)
        self.assertIn("data", out)
        self.assertFalse(os.path.exists(self.run_dir))
        rc, out = self.once("--reset")
        self.assertEqual(rc, 0, out)
        self.assertIn("nothing to reset", out)

    def test_port_taken(self):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", int(self.env["RUN_CASE_PORT"])))
            s.listen()
            rc, out = self.once()
        self.assertEqual(rc, 1, out)
        self.assertIn(f"port {self.env['RUN_CASE_PORT']} (case-svc) is already in use by pid {os.getpid()}", out)
        self.assertFalse(os.path.exists(self.run_dir), "nothing started, nothing written")

    def test_keys_that_no_longer_authenticate(self):
        r = self.started()
        r.proc.send_signal(signal.SIGTERM)
        self.assertEqual(r.wait_exit(), 0, r.output)
        creds = self.creds()
        creds["analysis-superadmin"]["key"] = "another-key-that-the-data-does-not-know"
        with open(os.path.join(self.run_dir, "credentials.json"), "w") as f:
            json.dump(creds, f)
        rc, out = self.once()
        self.assertEqual(rc, 1, out)
        self.assertIn("analysis-superadmin key in", out)
        self.assertIn("no longer authenticates", out)
        self.assertIn(f"rm -rf {self.run_dir}", out)
        self.assert_all_stopped()

    def test_a_service_dies(self):
        r = self.started()
        analysis = self.fake_pid("analysis")
        os.kill(self.fake_pid("case"), signal.SIGKILL)
        self.assertEqual(r.wait_exit(), 1, r.output)
        self.assertIn("case-svc was killed by SIGKILL", r.output)
        self.assertIn("case-svc listening", r.output)  # its last log lines
        eventually(lambda: dead(analysis), "analysis-svc stopped")

    def test_a_service_fails_at_start(self):
        r = self.start(dict(self.env, FAKE_FAIL="case-svc"))
        self.assertEqual(r.wait_exit(), 1, r.output)
        self.assertIn("case-svc exited with code 3", r.output)
        self.assertIn("fatal: fake failure of case-svc", r.output)
        self.assert_all_stopped()

    def test_killed_run_takes_its_services(self):
        r = self.started()
        r.proc.kill()
        r.wait_exit()
        self.assert_all_stopped()
        r = self.started()  # the lock died with it
        r.proc.send_signal(signal.SIGTERM)
        self.assertEqual(r.wait_exit(), 0, r.output)


if __name__ == "__main__":
    if sys.argv[1:2] == ["fake"]:
        fake(sys.argv[2])
    else:
        unittest.main()
