#!/usr/bin/env python3
"""Starts analysis-svc and case-svc for development, as `make run` does.

Both run on the embedded database (data under .run/data), with a superadmin bootstrapped on first start, an
organization "demo" with an orgadmin "demo-admin" (whose key the case-svc connector uses), a case-svc
organisation "demo" with an analyst, and prints the URLs and keys. Every key it prints is also kept in
.run/credentials.json (mode 0600), named by role.

It stays in the foreground; Ctrl-C (or SIGTERM) stops both services. Before starting anything it checks that no
other `make run` uses the same .run folder (its pid is in .run/run.pid, under a lock), that ports 9000 and 9001
are free, and that the credentials still match the data; it says what is wrong and exits non-zero otherwise.
It exits non-zero on any failure, and never leaves a service it started running: if one service dies, it stops
the other and prints the dead one's last log lines.

  run.py              start (make run)
  run.py --preflight  only the checks (make run does them before building)
  run.py --reset      remove .run, refusing while a run is alive (make reset)

Only the Python standard library is used. For its tests, RUN_DIR, RUN_BIN, RUN_CASE_PORT, RUN_ANALYSIS_PORT and
RUN_READY_TIMEOUT override the folder, the binaries' folder, the ports and the readiness deadline (seconds).
"""
import errno
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.abspath(os.environ.get("RUN_DIR") or os.path.join(ROOT, ".run"))
BIN = os.path.abspath(os.environ.get("RUN_BIN") or os.path.join(ROOT, "bin"))
ANALYSIS_PORT = int(os.environ.get("RUN_ANALYSIS_PORT") or 9001)
CASE_PORT = int(os.environ.get("RUN_CASE_PORT") or 9000)
READY_TIMEOUT = float(os.environ.get("RUN_READY_TIMEOUT") or 90)
ANALYSIS = f"http://127.0.0.1:{ANALYSIS_PORT}"
CASE = f"http://127.0.0.1:{CASE_PORT}"
CREDENTIALS = os.path.join(RUN, "credentials.json")
PIDFILE = os.path.join(RUN, "run.pid")
DATA = os.path.join(RUN, "data")
SHOWN = os.path.relpath(RUN, os.getcwd()) if RUN.startswith(os.getcwd() + os.sep) else RUN
RESET = "make reset" if RUN == os.path.join(ROOT, ".run") else f"rm -rf {RUN}"


class Fail(Exception):
    """A failure to report: the message is printed, every started service is stopped, the exit code is 1."""


class Stopped(Exception):
    """Ctrl-C or SIGTERM."""


def on_signal(signum, _frame):
    raise Stopped(signal.Signals(signum).name)


# --- checks ----------------------------------------------------------------------------------------------------

def lock_run_dir():
    """Takes the lock of the run folder (held until this process exits) and records this pid in run.pid.

    Fails naming the pid of the make run holding it."""
    os.makedirs(RUN, exist_ok=True)
    fd = os.open(PIDFILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        os.close(fd)
        raise Fail(already_running())
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def holder():
    """The pid of a live make run holding the run folder's lock, or None."""
    if not os.path.exists(PIDFILE):
        return None
    try:
        fd = os.open(PIDFILE, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return read_pid() or "unknown"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def read_pid():
    try:
        with open(PIDFILE) as f:
            pid = int(f.read().split()[0])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError, IndexError):
        return None


def already_running():
    pid = holder() or read_pid() or "unknown"
    return (f"another make run is already running (pid {pid}), with case-svc on {CASE} and analysis-svc on "
            f"{ANALYSIS}, from {SHOWN}.\nUse that one (its keys are in {SHOWN}/credentials.json), or stop it with "
            f"Ctrl-C in its terminal or `kill {pid}`.")


def port_owner(port):
    """(pid, command line) of the process listening on port, as far as /proc shows it, or None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(cols[9])
        except (OSError, StopIteration, IndexError, ValueError):
            pass
    if not inodes:
        return None
    wanted = {f"socket:[{i}]" for i in inodes}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        return int(pid), f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
    return None


def check_port(port, name):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Go's listener does: TIME_WAIT is no conflict
    try:
        s.bind(("127.0.0.1", port))
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise Fail(f"cannot use port {port} for {name}: {e.strerror}")
        owner = port_owner(port)
        who = f"pid {owner[0]} ({owner[1][:120]})" if owner else "another program"
        hint = f"stop it (`kill {owner[0]}`)" if owner else "stop it (`ss -ltnp 'sport = :%d'` shows it)" % port
        if owner and owner[1].split(" ")[0].startswith(BIN + os.sep):
            who = f"a {name} left over from an earlier run, pid {owner[0]}"
        raise Fail(f"port {port} ({name}) is already in use by {who}; {hint} and run make run again.")
    finally:
        s.close()


def data_present():
    return os.path.isdir(DATA) and any(os.scandir(DATA))


def check_credentials():
    """Reads credentials.json; fails when the data outlived it or it cannot be read."""
    if not os.path.exists(CREDENTIALS):
        if data_present():
            raise Fail(f"{SHOWN}/data holds the users and data of an earlier run, but {SHOWN}/credentials.json "
                       f"is gone, so its keys are lost.\nTo start from scratch (new data, new keys): {RESET}")
        return None
    try:
        with open(CREDENTIALS) as f:
            creds = normalise(json.load(f))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise Fail(f"{SHOWN}/credentials.json cannot be read ({e}).\nTo start from scratch: {RESET}")
    return creds


def preflight():
    """Every check that needs no service: another run, the ports, the credentials. Returns the credentials."""
    pid = holder()
    if pid:
        raise Fail(already_running())
    check_port(ANALYSIS_PORT, "analysis-svc")
    check_port(CASE_PORT, "case-svc")
    return check_credentials()


# --- credentials -------------------------------------------------------------------------------------------------

def normalise(c):
    """The credentials in the current layout; reads the layout of earlier versions (flat analysisKey, caseKey)."""
    if "analysis-superadmin" in c:
        for role in ("analysis-superadmin", "case-superadmin"):
            for k in ("login", "password", "key"):
                if not isinstance(c[role][k], str):
                    raise ValueError(f"{role}.{k} is not a string")
        return c
    return {
        "analysis-superadmin": {"login": c["login"], "password": c["password"], "key": c["analysisKey"]},
        "case-superadmin": {"login": c["login"], "password": c["password"], "key": c["caseKey"]},
    }


def new_credentials():
    password = secrets.token_urlsafe(12)
    return {
        "analysis-superadmin": {"login": "admin", "password": password, "key": secrets.token_urlsafe(24)},
        "case-superadmin": {"login": "admin", "password": password, "key": secrets.token_urlsafe(24)},
    }


def save(creds):
    """Writes credentials.json (0600) atomically: a reader sees the old file or the new one."""
    tmp = CREDENTIALS + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(creds, f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, 0o600)
    os.replace(tmp, CREDENTIALS)


# --- services -----------------------------------------------------------------------------------------------------

def call(method, url, key=None, body=None, text=False):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if key:
        req.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read().decode()
            return resp.status, (raw if text else (json.loads(raw) if raw else None))
    except urllib.error.HTTPError as e:
        raw = e.read().decode()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw
    except (urllib.error.URLError, OSError) as e:
        raise Fail(f"{method} {url}: {e}")


def die_with_parent():
    """In the child before exec: SIGTERM when make run dies, even by SIGKILL (Linux)."""
    try:
        import ctypes
        parent = os.getppid()
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)
    except Exception:
        pass


class Service:
    def __init__(self, name, url, env):
        self.name, self.url, self.env = name, url, env
        self.log = os.path.join(RUN, name + ".log")
        self.proc = None
        self.offset = 0

    def start(self):
        path = os.path.join(BIN, self.name)
        if not os.access(path, os.X_OK):
            raise Fail(f"{path} is missing: run `make build` first (make run does).")
        self.offset = os.path.getsize(self.log) if os.path.exists(self.log) else 0
        full = dict(os.environ)
        full.update(self.env)
        with open(self.log, "ab") as log:
            # A session of its own: Ctrl-C reaches make run only, which stops the services in order.
            self.proc = subprocess.Popen([path], env=full, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                         start_new_session=True, preexec_fn=die_with_parent)
        print(f"started {self.name} (pid {self.proc.pid}), waiting for {self.url}/readyz ...", flush=True)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def tail(self, n=20):
        try:
            with open(self.log, "rb") as f:
                f.seek(self.offset)
                lines = f.read().decode(errors="replace").splitlines()[-n:]
        except OSError:
            return ""
        return "\n".join("    " + l for l in lines) if lines else "    (nothing logged)"

    def died(self):
        rc = self.proc.returncode
        how = f"was killed by {signal.Signals(-rc).name}" if rc < 0 else f"exited with code {rc}"
        return Fail(f"{self.name} {how}. Last lines of "
                    f"{os.path.relpath(self.log) if self.log.startswith(os.getcwd()) else self.log}:\n{self.tail()}")

    def wait_ready(self):
        end = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < end:
            if not self.alive():
                raise self.died()
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise Fail(f"{self.name} not ready after {READY_TIMEOUT:g}s. Last lines of its log:\n{self.tail()}")

    def check_key(self, role, key):
        status, body = call("GET", self.url + "/api/user/current", key)
        if status == 401:
            raise Fail(f"the {role} key in {SHOWN}/credentials.json no longer authenticates on {self.name}: the "
                       f"credentials file does not belong to the data in {SHOWN}/data.\n"
                       f"To start from scratch (new data, new keys): {RESET}")
        if status != 200:
            raise Fail(f"{self.name}: GET /api/user/current as {role}: {status} {body}")


def stop_all(services):
    """Stops the running services, the last started first; True when each exited by itself after SIGTERM."""
    clean = True
    running = [s for s in reversed(services) if s.alive()]
    for s in running:
        s.proc.terminate()
    for s in running:
        try:
            s.proc.wait(timeout=25)
        except subprocess.TimeoutExpired:
            s.proc.kill()
            s.proc.wait()
            print(f"{s.name} did not stop within 25 s of SIGTERM: killed", file=sys.stderr)
            clean = False
    return clean


def key_of(url, admin, login, label):
    status, key = call("GET", f"{url}/api/user/{login}/key", admin, text=True)
    if status != 200:
        status, key = call("POST", f"{url}/api/user/{login}/key/renew", admin, text=True)
        if status != 200:
            raise Fail(f"key of {label} {login}: {status} {key}")
    return key.strip()


def setup_analysis(creds):
    key = creds["analysis-superadmin"]["key"]
    status, body = call("POST", ANALYSIS + "/api/organization", key, {"name": "demo", "description": "Demo organization"})
    if status not in (201, 400):
        raise Fail(f"analysis-svc: create organization demo: {status} {body}")
    status, body = call("POST", ANALYSIS + "/api/user", key,
                        {"login": "demo-admin", "name": "Demo admin", "organization": "demo",
                         "roles": ["read", "analyze", "orgadmin"]})
    if status not in (201, 400):
        raise Fail(f"analysis-svc: create user demo-admin: {status} {body}")
    org_key = key_of(ANALYSIS, key, "demo-admin", "analysis-svc user")
    # Enable every built-in analyzer and responder for the demo organization (400 = already enabled).
    for kind in ("analyzer", "responder"):
        status, defs = call("GET", f"{ANALYSIS}/api/{kind}definition?range=all", org_key)
        if status != 200:
            raise Fail(f"analysis-svc: list {kind} definitions: {status} {defs}")
        for d in defs:
            if d.get("builtin"):
                status, body = call("POST", f"{ANALYSIS}/api/organization/{kind}/{d['id']}", org_key, {})
                if status not in (201, 400):
                    raise Fail(f"analysis-svc: enable {d['id']}: {status} {body}")
    creds["analysis-demo-orgadmin"] = {"login": "demo-admin", "organization": "demo", "key": org_key}


def setup_case(creds):
    key = creds["case-superadmin"]["key"]
    status, body = call("POST", CASE + "/api/organisation", key, {"name": "demo", "description": "Demo organisation"})
    if status not in (201, 400):
        raise Fail(f"case-svc: create organisation demo: {status} {body}")
    status, body = call("POST", CASE + "/api/user", key,
                        {"login": "analyst@demo", "name": "Demo analyst", "organisation": "demo", "profile": "analyst"})
    if status not in (201, 400):
        raise Fail(f"case-svc: create user analyst@demo: {status} {body}")
    analyst_key = key_of(CASE, key, "analyst@demo", "case-svc user")
    # A password too, for the web interface (/ui/): the one kept in credentials.json, or a new one.
    password = creds.get("case-demo-analyst", {}).get("password") or secrets.token_urlsafe(12)
    status, body = call("POST", CASE + "/api/user/analyst@demo/password/set", key, {"password": password})
    if status not in (200, 201, 204):
        raise Fail(f"case-svc: set the password of analyst@demo: {status} {body}")
    creds["case-demo-analyst"] = {"login": "analyst@demo", "organisation": "demo", "password": password, "key": analyst_key}
    status, analyzers = call("GET", CASE + "/api/connector/analysis/analyzer", analyst_key)
    validator = None
    if status == 200 and isinstance(analyzers, list):
        validator = next((a.get("id") for a in analyzers if a.get("name") == "Observable_Validator"), None)
    return validator


def banner(creds, validator):
    sa, org = creds["analysis-superadmin"], creds["analysis-demo-orgadmin"]
    ca, an = creds["case-superadmin"], creds["case-demo-analyst"]
    return f"""
analysis-svc  {ANALYSIS}   (log: {SHOWN}/analysis-svc.log)
  superadmin      login {sa['login']}  password {sa['password']}  key {sa['key']}
  org "demo"      orgadmin {org['login']}  key {org['key']}
  workers         {SHOWN}/analyzers/<Name>/<flavor>.json and {SHOWN}/responders/…, then POST /api/analyzerdefinition/scan (docs/analyzers.md)
case-svc      {CASE}   (log: {SHOWN}/case-svc.log)
  superadmin      login {ca['login']}  password {ca['password']}  key {ca['key']}
  org "demo"      analyst {an['login']}  password {an.get('password', '?')}  key {an['key']}
  in the browser  {CASE}/ui/  (sign in as {an['login']})
  connector       analysisId "local" -> {ANALYSIS} as {org['login']} (Observable_Validator id {validator or '?'})

Every key above is in {SHOWN}/credentials.json (mode 0600), by role: analysis-superadmin, analysis-demo-orgadmin,
case-superadmin, case-demo-analyst. For example:
  KEY=$(python3 -c "import json;print(json.load(open('{SHOWN}/credentials.json'))['analysis-demo-orgadmin']['key'])")
  curl -H "Authorization: Bearer $KEY" {ANALYSIS}/api/analyzer
Data is in {SHOWN}/data and kept across runs; `{RESET}` starts from scratch.
make run stays in the foreground (pid {os.getpid()}): Ctrl-C stops both services.
"""


def run():
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    services = []
    lock = None
    try:
        creds = preflight()
        lock = lock_run_dir()  # held until this process exits
        if creds is None:
            creds = new_credentials()
        save(creds)
        analysis = Service("analysis-svc", ANALYSIS, {
            "ANALYSIS_HTTP_ADDR": f"127.0.0.1:{ANALYSIS_PORT}",
            "ANALYSIS_DATABASE_PATH": os.path.join(DATA, "analysis"),
            "ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS": "true",
            "ANALYSIS_BOOTSTRAP_LOGIN": creds["analysis-superadmin"]["login"],
            "ANALYSIS_BOOTSTRAP_PASSWORD": creds["analysis-superadmin"]["password"],
            "ANALYSIS_BOOTSTRAP_KEY": creds["analysis-superadmin"]["key"],
            # Public-format workers (docs/analyzers.md): <RUN>/analyzers/<Name>/<flavor>.json, same for responders.
            "ANALYSIS_ANALYZER_PATHS": os.path.join(RUN, "analyzers"),
            "ANALYSIS_RESPONDER_PATHS": os.path.join(RUN, "responders"),
        })
        for d in ("analyzers", "responders"):
            os.makedirs(os.path.join(RUN, d), exist_ok=True)
        services.append(analysis)
        analysis.start()
        analysis.wait_ready()
        analysis.check_key("analysis-superadmin", creds["analysis-superadmin"]["key"])
        setup_analysis(creds)
        save(creds)

        servers = [{"name": "local", "url": ANALYSIS, "key": creds["analysis-demo-orgadmin"]["key"],
                    "timeout": "1m", "organisations": ["*"]}]
        case = Service("case-svc", CASE, {
            "CASE_HTTP_ADDR": f"127.0.0.1:{CASE_PORT}",
            "CASE_DATABASE_PATH": os.path.join(DATA, "case"),
            "CASE_HTTP_ALLOW_INSECURE_CREDENTIALS": "true",
            "CASE_BOOTSTRAP_LOGIN": creds["case-superadmin"]["login"],
            "CASE_BOOTSTRAP_PASSWORD": creds["case-superadmin"]["password"],
            "CASE_BOOTSTRAP_KEY": creds["case-superadmin"]["key"],
            "CASE_ANALYSIS_SERVERS": json.dumps(servers),
        })
        services.append(case)
        case.start()
        case.wait_ready()
        case.check_key("case-superadmin", creds["case-superadmin"]["key"])
        validator = setup_case(creds)
        creds["case-connector"] = {"analysisId": "local", "url": ANALYSIS, "as": "analysis-demo-orgadmin",
                                   "observableValidatorId": validator}
        save(creds)
        print(banner(creds, validator), flush=True)

        while True:
            for s in services:
                if not s.alive():
                    raise s.died()
            time.sleep(0.5)
    except Stopped as e:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print(f"\n{e}: stopping {', '.join(s.name for s in reversed(services) if s.alive()) or 'nothing'} ...",
              flush=True)
        clean = stop_all(services)
        print("stopped." if clean else "stopped (not cleanly).", flush=True)
        return 0 if clean else 1
    except Fail as e:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        others = [s.name for s in reversed(services) if s.alive()]
        print(f"make run failed: {e}", file=sys.stderr, flush=True)
        if others:
            print(f"stopping {', '.join(others)} ...", file=sys.stderr, flush=True)
        stop_all(services)
        return 1
    except BaseException:
        stop_all(services)
        raise
    finally:
        if lock is not None:  # only the run holding the lock owns run.pid
            try:
                os.remove(PIDFILE)
            except OSError:
                pass
            os.close(lock)


def human(size):
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000


def reset():
    pid = holder()
    if pid:
        print(f"not removing {SHOWN}: make run is running (pid {pid}). Stop it first (Ctrl-C in its terminal, "
              f"or `kill {pid}`), then run make reset again.", file=sys.stderr)
        return 1
    if not os.path.exists(RUN):
        print(f"{SHOWN} does not exist: nothing to reset.")
        return 0
    print(f"removing {SHOWN}:")
    for name in sorted(os.listdir(RUN)):
        path = os.path.join(RUN, name)
        what = {"data": "the databases of both services (users, keys, cases, jobs...)",
                "credentials.json": "the generated passwords and keys",
                "analysis-svc.log": "analysis-svc's log", "case-svc.log": "case-svc's log",
                "run.pid": "the pid of the last make run"}.get(name, "")
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) \
            if os.path.isdir(path) else os.path.getsize(path)
        print(f"  {name:<18} {human(size):>9}  {what}")
    shutil.rmtree(RUN)
    print("removed. The next make run starts from scratch with new keys.")
    return 0


def main(argv):
    if argv[1:] == ["--reset"]:
        return reset()
    if argv[1:] == ["--preflight"]:
        try:
            preflight()
        except Fail as e:
            print(f"make run: {e}", file=sys.stderr)
            return 1
        return 0
    if argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    return run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
