package analysis

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// hostileDefinition carries public flavors' items whose defaults are ordinary words (VMRay, Wazuh, Minemeld,
// DNS-RPZ) and an item marked secret without a keyword name.
func hostileDefinition() Definition {
	return Definition{ID: "Probe_1_0", Kind: KindAnalyzer, Config: map[string]any{"service": "lookup"},
		ConfigurationItems: []ConfigItem{
			{Name: "archive_password", Type: "string", DefaultValue: "malware"},
			{Name: "wazuh_password", Type: "string", DefaultValue: "bar"},
			{Name: "minemeld_password", Type: "string", DefaultValue: "password"},
			{Name: "tsig_keyval", Type: "string", DefaultValue: "updateme"},
			{Name: "token", Type: "string", Secret: true},
			{Name: "api_key", Type: "string"},
		}}
}

func TestSecretValues_publicDefaultsAreNoSecrets(t *testing.T) {
	def := hostileDefinition()
	conf, err := ValidateConfiguration(def, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := secretValues(def, runConfig(def, Worker{Configuration: conf})).values; len(got) != 0 {
		t.Errorf("defaults taken for secrets: %q", got)
	}
	conf, err = ValidateConfiguration(def, map[string]any{"archive_password": "infected-9Zq", "token": "tok-7f3e9c1d2b",
		"api_key": "AKIAxyz123", "wazuh_password": "lookup", "proxy_http": "http://squid:Pr0xy@proxy.example:3128"})
	if err != nil {
		t.Fatal(err)
	}
	got := secretValues(def, runConfig(def, Worker{Configuration: conf})).values
	want := []string{"http://squid:Pr0xy@proxy.example:3128", "tok-7f3e9c1d2b", "infected-9Zq", "squid:Pr0xy",
		"AKIAxyz123", "Pr0xy"}
	if !reflect.DeepEqual(got, want) { // "lookup" is the definition's fixed config: public
		t.Errorf("secrets %q, want %q", got, want)
	}
}

// The hostile case of issue 30: a report whose words equal the definition's default secrets is stored as
// the worker wrote it, keys, taxonomies and artifacts included.
func TestScrubJob_reportUntouched(t *testing.T) {
	def := hostileDefinition()
	conf, _ := ValidateConfiguration(def, map[string]any{"token": "tok-7f3e9c1d2b"})
	secrets := secretValues(def, runConfig(def, Worker{Configuration: conf}))
	var full, summary map[string]any
	must(t, json.Unmarshal([]byte(`{"verdict":"malware","malware_family":"Emotet","vendor":"Barracuda bar","echo":"tok-7f3e9c1d2b"}`), &full))
	must(t, json.Unmarshal([]byte(`{"taxonomies":[{"level":"malicious","namespace":"Probe","predicate":"verdict","value":"malware"}]}`), &summary))
	r := &Report{Success: true, Full: full, Summary: summary, Operations: []map[string]any{{"type": "AddTagToArtifact", "tag": "bar"}},
		Artifacts: []Artifact{{DataType: "domain", Data: "malware.example.net"}}}
	before, _ := json.Marshal(r)
	_, r = scrubJob(Job{Status: JobSuccess}, r, secrets)
	if after, _ := json.Marshal(r); string(after) != string(before) {
		t.Errorf("a successful report was changed:\n%s\n%s", before, after)
	}

	// A worker reporting its input.json: the credential under its own key is removed, nothing else.
	var echo map[string]any
	must(t, json.Unmarshal([]byte(`{"input":{"config":{"token":"tok-7f3e9c1d2b","archive_password":"malware"}},"token":"tok-7f3e9c1d2bX"}`), &echo))
	_, r = scrubJob(Job{Status: JobSuccess}, &Report{Success: true, Full: echo}, secrets)
	if got, _ := json.Marshal(r.Full); string(got) != `{"input":{"config":{"archive_password":"malware","token":"REMOVED"}},"token":"tok-7f3e9c1d2bX"}` {
		t.Errorf("echoed input: %s", got)
	}
}

func TestScrubJob_echoes(t *testing.T) {
	def := hostileDefinition()
	const token = `t"k\é<&>` + "\U0001F511" + `-9`
	conf, _ := ValidateConfiguration(def, map[string]any{"token": token, "api_key": "AKIAxyz123",
		"proxy_https": "http://squid:P%40ss@proxy.example:3129"})
	cfg := runConfig(def, Worker{Configuration: conf})
	secrets := secretValues(def, cfg)
	input, _ := json.Marshal(map[string]any{"data": "malware.example.net", "config": cfg})
	pyInput := `{"config": {"token": "` + pyJSONString(token) + `", "archive_password": "malware"}}`
	for _, c := range []struct {
		name, msg, input string
		keep             []string
	}{
		{"input as Go writes it", "failed", string(input), []string{`"archive_password":"malware"`, `"data":"malware.example.net"`, `"wazuh_password":"bar"`}},
		{"input as Python writes it", "failed", pyInput, []string{`"archive_password":"malware"`}},
		{"message with the raw value", "login with " + token + " refused by bar", "", []string{"login with REMOVED refused by bar"}},
		{"printed configuration (repr)", `{'token': '` + strings.ReplaceAll(token, `\`, `\\`) + `', 'api_key': 'AKIAxyz123'}`, "", []string{`'token': 'REMOVED'`}},
		{"printed configuration (json.dumps)", pyInput, "", []string{`"token": "REMOVED"`, `"archive_password": "malware"`}},
		{"proxy password URL-encoded", "proxy http://squid:P%40ss@proxy.example:3129 refused", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, r := scrubJob(Job{ErrorMessage: c.msg}, &Report{ErrorMessage: c.msg, Input: c.input}, secrets)
			all := j.ErrorMessage + "\n" + r.ErrorMessage + "\n" + r.Input
			for _, leak := range []string{"t\\\"k", "AKIAxyz123", "P%40ss", "P@ss", "squid", pyJSONString(token), goJSONString(token, true)} {
				if strings.Contains(all, leak) {
					t.Errorf("%q remains:\n%s", leak, all)
				}
			}
			for _, k := range c.keep {
				if !strings.Contains(all, k) {
					t.Errorf("%q lost:\n%s", k, all)
				}
			}
			if c.input != "" && !json.Valid([]byte(r.Input)) {
				t.Errorf("the input is no longer JSON: %s", r.Input)
			}
		})
	}
}

func TestRedactConfig(t *testing.T) {
	cfg := map[string]any{"proxy_http": "http://squid:Pr0xy@proxy.example:3128", "proxy_https": "http://proxy.example:3129",
		"proxy": map[string]any{"http": "http://squid:Pr0xy@proxy.example:3128"}, "api_key": "k", "level": "info"}
	got := RedactConfig(cfg)
	want := map[string]any{"proxy_http": "http://REMOVED@proxy.example:3128", "proxy_https": "http://proxy.example:3129",
		"proxy": map[string]any{"http": "http://REMOVED@proxy.example:3128"}, "api_key": "REMOVED", "level": "info"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
	if cfg["api_key"] != "k" {
		t.Error("the config was changed")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// An update keeps the stored value of each credential item it omits (marked secret, named like one, a
// proxy); it replaces a credential it sends, null included, and every other item.
func TestKeepSecrets(t *testing.T) {
	def := hostileDefinition()
	stored := map[string]any{"token": "tok-1", "api_key": "AK-1", "archive_password": "infected", "tsig_keyval": "k",
		"proxy_https": "http://u:p@proxy.example:3128", "proxy_http": nil, "check_tlp": true, "wazuh_password": ""}
	got := keepSecrets(def, map[string]any{"api_key": "AK-2", "archive_password": nil, "max_tlp": 1}, stored)
	want := map[string]any{"token": "tok-1", "api_key": "AK-2", "archive_password": nil, "tsig_keyval": "k",
		"proxy_https": "http://u:p@proxy.example:3128", "wazuh_password": "", "max_tlp": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	for name, want := range map[string]bool{"token": true, "api_key": true, "archive_password": true, "proxy_http": true,
		"proxy_https": true, "service": false, "check_tlp": false, "max_pap": false} {
		it := ConfigItem{Name: name}
		if i := slices.IndexFunc(def.ConfigurationItems, func(c ConfigItem) bool { return c.Name == name }); i >= 0 {
			it = def.ConfigurationItems[i]
		}
		if IsSecretItem(it) != want {
			t.Errorf("IsSecretItem(%s) = %v", name, !want)
		}
	}
}
