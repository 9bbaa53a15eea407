package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/openir/platform/pkg/events/eventstest"
)

// Issue 13: JobFinished webhooks are delivered at least once through the durable outbox, and not again once
// the receiver acknowledged them. The service runs as a child process; five jobs finish while the receiver is
// down (connection refused: their deliveries wait in the outbox with failed attempts); the service is killed
// with SIGKILL and restarted on the same database; the receiver comes up: each JobFinished arrives, signed,
// exactly once. A second kill -9 and restart after the acknowledgements, then a sixth job whose delivery
// arrives: the five acknowledged ones were not sent again.
func TestRun_KillNineDeliversWebhooksOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the service three times")
	}
	dbDir, jobDir := t.TempDir(), t.TempDir()
	// A free port for the receiver, closed until after the first restart.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcvAddr := l.Addr().String()
	l.Close()

	const key = "bootstrap-key-0123456789abcdefghijkl"
	env := append(os.Environ(), "ANALYSIS_CRASH_HELPER=1",
		"ANALYSIS_HTTP_ADDR=127.0.0.1:0", "ANALYSIS_DATABASE_PATH="+dbDir, "ANALYSIS_DATABASE_URI=",
		"ANALYSIS_BOOTSTRAP_LOGIN=root", "ANALYSIS_BOOTSTRAP_KEY="+key, "ANALYSIS_JOB_DIRECTORY="+jobDir,
		"ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS=true", "ANALYSIS_JOB_CACHE=0",
		"ANALYSIS_WEBHOOK_ALLOW_PRIVATE=true", "ANALYSIS_WEBHOOK_MAX_ATTEMPTS=1000",
		"ANALYSIS_WEBHOOK_BACKOFF_MIN=50ms", "ANALYSIS_WEBHOOK_BACKOFF_MAX=200ms", "ANALYSIS_WEBHOOK_TIMEOUT=2s")
	start := func() (*exec.Cmd, string) {
		t.Helper()
		return startChild(t, env)
	}
	kill := func(cmd *exec.Cmd) {
		t.Helper()
		if err := cmd.Process.Signal(os.Kill); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}
	// waitFor polls cond every 20 ms for up to 60 s.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 60 s", what)
			}
		}
	}

	cmd, base := start()
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if code, _ := call(t, "POST", base+"/api/organization", key, `{"name":"soc"}`); code != 201 {
		t.Fatalf("create org: %d", code)
	}
	if code, _ := call(t, "POST", base+"/api/user", key, `{"login":"adm","organization":"soc","roles":["read","analyze","orgadmin"]}`); code != 201 {
		t.Fatalf("create user: %d", code)
	}
	_, raw := call(t, "POST", base+"/api/user/adm/key/renew", key, "")
	adm := raw["_raw"].(string)
	code, wh := call(t, "POST", base+"/api/webhook", adm, fmt.Sprintf(`{"url":"http://%s/hook","secret":"s3cret"}`, rcvAddr))
	if code != 201 {
		t.Fatalf("create webhook: %d %v", code, wh)
	}
	webhook := wh["id"].(string)
	code, w := call(t, "POST", base+"/api/organization/analyzer/Observable_Validator_1_0", adm, `{}`)
	if code != 201 {
		t.Fatalf("enable: %d %v", code, w)
	}
	analyzer := w["id"].(string)
	run := func(base, data string) string {
		t.Helper()
		code, j := call(t, "POST", base+"/api/analyzer/"+analyzer+"/run", adm, fmt.Sprintf(`{"dataType":"ip","data":%q}`, data))
		if code != 200 {
			t.Fatalf("run: %d %v", code, j)
		}
		return j["id"].(string)
	}
	var jobs []string
	for i := range 5 {
		jobs = append(jobs, run(base, fmt.Sprintf("10.0.0.%d", i+1)))
	}
	// deliveries lists the webhook's deliveries (at most 100).
	deliveries := func(base string) []map[string]any {
		t.Helper()
		code, b := get(t, base+"/api/webhook/"+webhook+"/delivery?range=0-100", adm)
		var ds []map[string]any
		if err := json.Unmarshal([]byte(b), &ds); code != 200 || err != nil {
			t.Fatalf("deliveries: %d %s", code, b)
		}
		return ds
	}
	// Every job's JobFinished is in the outbox, pending; the first has failed (the receiver is down) and holds
	// the others back (one delivery at a time per endpoint, in order).
	var ds []map[string]any
	defer func() {
		if t.Failed() {
			t.Logf("deliveries: %v", ds)
		}
	}()
	waitFor("five deliveries attempted", func() bool {
		ds = deliveries(base)
		if len(ds) != 5 {
			return false
		}
		tried := false
		for _, d := range ds {
			if d["status"] != "Pending" {
				return false
			}
			tried = tried || d["attempts"].(float64) >= 1
		}
		return tried
	})
	kill(cmd)

	cmd, base = start()
	rcv := eventstest.NewReceiverOn(t, "s3cret", rcvAddr)
	for _, id := range jobs {
		v := rcv.Wait(t, 60*time.Second, eventstest.Object(id))
		if v["objectType"] != "job" || v["organisation"] != "soc" {
			t.Errorf("payload %v", v)
		}
	}
	waitFor("five deliveries acknowledged", func() bool {
		n := 0
		for _, d := range deliveries(base) {
			if d["status"] == "Delivered" {
				n++
			}
		}
		return n == 5
	})
	kill(cmd)

	cmd, base = start()
	sixth := run(base, "10.0.0.6")
	rcv.Wait(t, 60*time.Second, eventstest.Object(sixth))
	for _, id := range append(jobs, sixth) {
		if n := rcv.Count(eventstest.Object(id)); n != 1 {
			t.Errorf("job %s: JobFinished delivered %d times, want once", id, n)
		}
	}
	if rcv.BadSignatures() != 0 {
		t.Errorf("%d deliveries with a bad signature", rcv.BadSignatures())
	}
}
