#!/usr/bin/env python3
"""Starts analysis-svc and case-svc for development, as `make run` does.

Both run on the embedded database (data under .run/data), with a superadmin bootstrapped on first start, an
organization "demo" with an orgadmin "demo-admin" (whose key the case-svc connector uses), and prints the URLs
and keys. Credentials are generated once and kept in .run/credentials.json (mode 0600). Ctrl-C stops both.
Only the Python standard library is used.
"""
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, ".run")
ANALYSIS = "http://127.0.0.1:9001"
CASE = "http://127.0.0.1:9000"


def credentials():
    path = os.path.join(RUN, "credentials.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    creds = {
        "login": "admin",
        "password": secrets.token_urlsafe(12),
        "analysisKey": secrets.token_urlsafe(24),
        "caseKey": secrets.token_urlsafe(24),
    }
    os.makedirs(RUN, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(creds, f, indent=2)
    return creds


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


def wait_ready(url, proc, name, deadline=90):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit(f"{name} exited with code {proc.returncode}; see .run/{name}.log")
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.2)
    sys.exit(f"{name} not ready after {deadline}s; see .run/{name}.log")


def start(name, env):
    log = open(os.path.join(RUN, name + ".log"), "ab")
    full = dict(os.environ)
    full.update(env)
    return subprocess.Popen([os.path.join(ROOT, "bin", name)], env=full, stdout=log, stderr=subprocess.STDOUT,
                            cwd=ROOT)


def main():
    creds = credentials()
    procs = []

    def stop(*_):
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=25)
            except subprocess.TimeoutExpired:
                p.kill()
        sys.exit(0)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)

    analysis = start("analysis-svc", {
        "ANALYSIS_HTTP_ADDR": "127.0.0.1:9001",
        "ANALYSIS_DATABASE_PATH": os.path.join(RUN, "data", "analysis"),
        "ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS": "true",
        "ANALYSIS_BOOTSTRAP_LOGIN": creds["login"],
        "ANALYSIS_BOOTSTRAP_PASSWORD": creds["password"],
        "ANALYSIS_BOOTSTRAP_KEY": creds["analysisKey"],
    })
    procs.append(analysis)
    wait_ready(ANALYSIS, analysis, "analysis-svc")

    key = creds["analysisKey"]
    status, body = call("POST", ANALYSIS + "/api/organization", key, {"name": "demo", "description": "Demo organization"})
    if status not in (201, 400):
        sys.exit(f"create organization demo: {status} {body}")
    status, body = call("POST", ANALYSIS + "/api/user", key,
                        {"login": "demo-admin", "name": "Demo admin", "organization": "demo",
                         "roles": ["read", "analyze", "orgadmin"]})
    if status not in (201, 400):
        sys.exit(f"create user demo-admin: {status} {body}")
    status, org_key = call("GET", ANALYSIS + "/api/user/demo-admin/key", key, text=True)
    if status != 200:
        status, org_key = call("POST", ANALYSIS + "/api/user/demo-admin/key/renew", key, text=True)
        if status != 200:
            sys.exit(f"key of demo-admin: {status} {org_key}")

    # Enable every built-in analyzer and responder for the demo organization (400 = already enabled).
    for kind in ("analyzer", "responder"):
        status, defs = call("GET", f"{ANALYSIS}/api/{kind}definition?range=all", org_key)
        if status != 200:
            sys.exit(f"list {kind} definitions: {status} {defs}")
        for d in defs:
            if d.get("builtin"):
                status, body = call("POST", f"{ANALYSIS}/api/organization/{kind}/{d['id']}", org_key, {})
                if status not in (201, 400):
                    sys.exit(f"enable {d['id']}: {status} {body}")

    servers = [{"name": "local", "url": ANALYSIS, "key": org_key, "timeout": "1m", "organisations": ["*"]}]
    case = start("case-svc", {
        "CASE_HTTP_ADDR": "127.0.0.1:9000",
        "CASE_DATABASE_PATH": os.path.join(RUN, "data", "case"),
        "CASE_HTTP_ALLOW_INSECURE_CREDENTIALS": "true",
        "CASE_BOOTSTRAP_LOGIN": creds["login"],
        "CASE_BOOTSTRAP_PASSWORD": creds["password"],
        "CASE_BOOTSTRAP_KEY": creds["caseKey"],
        "CASE_ANALYSIS_SERVERS": json.dumps(servers),
    })
    procs.append(case)
    wait_ready(CASE, case, "case-svc")

    # case-svc: an organisation "demo" with an analyst whose key the README's curl sequence uses.
    ckey = creds["caseKey"]
    status, body = call("POST", CASE + "/api/organisation", ckey, {"name": "demo", "description": "Demo organisation"})
    if status not in (201, 400):
        sys.exit(f"case-svc: create organisation demo: {status} {body}")
    status, body = call("POST", CASE + "/api/user", ckey,
                        {"login": "analyst@demo", "name": "Demo analyst", "organisation": "demo", "profile": "analyst"})
    if status not in (201, 400):
        sys.exit(f"case-svc: create user analyst@demo: {status} {body}")
    status, analyst_key = call("GET", CASE + "/api/user/analyst@demo/key", ckey, text=True)
    if status != 200:
        status, analyst_key = call("POST", CASE + "/api/user/analyst@demo/key/renew", ckey, text=True)
        if status != 200:
            sys.exit(f"case-svc: key of analyst@demo: {status} {analyst_key}")
    creds["caseAnalystKey"] = analyst_key
    status, analyzers = call("GET", CASE + "/api/connector/analysis/analyzer", analyst_key)
    validator = next((a["id"] for a in analyzers if a.get("name") == "Observable_Validator"), "?") if status == 200 else "?"

    print(f"""
analysis-svc  {ANALYSIS}   (log: .run/analysis-svc.log)
  superadmin  login {creds['login']}  password {creds['password']}
              key   {creds['analysisKey']}
  org "demo"  orgadmin demo-admin  key {org_key}
case-svc      {CASE}   (log: .run/case-svc.log)
  admin       login {creds['login']}  password {creds['password']}  key {creds['caseKey']}
  org "demo"  analyst analyst@demo  key {analyst_key}
  connector   analysisId "local" -> {ANALYSIS} as demo-admin (Observable_Validator id {validator})

Try:  curl -H "Authorization: Bearer {creds['analysisKey']}" {ANALYSIS}/api/user/current
      curl -H "Authorization: Bearer {org_key}" {ANALYSIS}/api/analyzer   (the demo organization's analyzers)
Credentials are kept in .run/credentials.json; data in .run/data. Ctrl-C stops both services.
""", flush=True)
    while True:
        for p, name in ((analysis, "analysis-svc"), (case, "case-svc")):
            if p.poll() is not None:
                print(f"{name} exited with code {p.returncode}; see .run/{name}.log", file=sys.stderr)
                stop()
        time.sleep(1)


if __name__ == "__main__":
    main()
