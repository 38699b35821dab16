package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The webhooks.hooks rows of keyCases (config_test.go): the same hook in
// the file's YAML and the environment's JSON.
const (
	hookCaseYAML = `{gh: {secret: hook-s3cret, lane: "v1:api:hooks", template: "Build {{.build}} failed"}}`
	hookCaseEnv  = `{"gh": {"secret": "hook-s3cret", "lane": "v1:api:hooks", "template": "Build {{.build}} failed"}}`
)

var hookCaseWant = map[string]string{"gh": `lane=v1:api:hooks secret=hook-s3cret per_minute=30 text="Build 42 failed"`}

// hookSummary is what a hook amounts to: its lane, its secret, its rate
// limit and what its template makes of {"build": 42}.
func hookSummary(c *Config) any {
	out := map[string]string{}
	for name, h := range c.Webhooks.Hooks {
		out[name] = fmt.Sprintf("lane=%s secret=%s per_minute=%d text=%q", h.Lane, h.Secret, h.MaxPerMinute, render(h, `{"build": 42}`))
	}
	return out
}

func render(h Hook, body string) string {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "bad body: " + err.Error()
	}
	var b strings.Builder
	if err := h.Template.Execute(&b, v); err != nil {
		return "error: " + err.Error()
	}
	return b.String()
}

func TestWebhookHooks(t *testing.T) {
	const secret = "very-secret-hmac-key"
	tests := []struct {
		name string
		file string // YAML
		env  string // GATEWAYD_WEBHOOKS_HOOKS
		// secretFile is the content of <dir>/secret, when set.
		secretFile string
		want       map[string]string // hookSummary; nil = no hooks
		err        string            // the error's text; "" = no error
	}{
		{name: "none"},
		{name: "empty map", file: "webhooks:\n  hooks: {}\n"},
		{name: "empty section", file: "webhooks:\n  hooks:\n"},
		{name: "yaml", file: "webhooks:\n  listen: 0.0.0.0:8788\n  hooks:\n    ci:\n      secret: " + secret +
			"\n      lane: v1:telegram:dm:-100\n      template: |\n        Build {{.build}} failed\n",
			want: map[string]string{"ci": `lane=v1:telegram:dm:-100 secret=` + secret + ` per_minute=30 text="Build 42 failed\n"`}},
		{name: "file names are read in lower case", file: "webhooks:\n  hooks:\n    GitHub:\n      secret: x\n      lane: v1:api:gh\n      template: b{{.build}}\n",
			want: map[string]string{"github": `lane=v1:api:gh secret=x per_minute=30 text="b42"`}},
		{name: "secret_file", secretFile: "  from-file\n",
			file: "webhooks:\n  hooks:\n    ci:\n      secret_file: SECRETDIR/secret\n      lane: v1:api:ci\n      template: x\n",
			want: map[string]string{"ci": `lane=v1:api:ci secret=from-file per_minute=30 text="x"`}},
		{name: "env JSON", env: `{"CI": {"secret": "e", "lane": "v1:discord:thread:123", "template": "{{json .}}"}}`,
			want: map[string]string{"CI": `lane=v1:discord:thread:123 secret=e per_minute=30 text="{\"build\":42}"`}},
		{name: "env blank", env: "  "},
		{name: "env not JSON", env: "ci=" + secret,
			err: `config: webhooks.hooks: GATEWAYD_WEBHOOKS_HOOKS must be a JSON object {"NAME": {"secret": "...", "lane": "v1:...", "template": "..."}}, or set the hooks in the config file`},
		{name: "env broken JSON", env: `{"ci": {"secret": "` + secret + `"`,
			err: `config: webhooks.hooks: GATEWAYD_WEBHOOKS_HOOKS must be a JSON object {"NAME": {"secret": "...", "lane": "v1:...", "template": "..."}}, or set the hooks in the config file`},
		{name: "env names differing in case",
			env: `{"CI": {"secret": "a", "lane": "v1:api:a", "template": "a"}, "ci": {"secret": "b", "lane": "v1:api:b", "template": "b"}}`,
			err: `config: webhooks.hooks.ci: differs from "CI" only in case; hook names must differ ignoring case`},
		{name: "no secret", file: "webhooks:\n  hooks:\n    ci:\n      lane: v1:api:ci\n      template: x\n",
			err: `config: webhooks.hooks.ci.secret: required: the HMAC secret the sender signs deliveries with (or set secret_file)`},
		{name: "blank secret", file: "webhooks:\n  hooks:\n    ci:\n      secret: \"  \"\n      lane: v1:api:ci\n      template: x\n",
			err: `config: webhooks.hooks.ci.secret: required: the HMAC secret the sender signs deliveries with (or set secret_file)`},
		{name: "secret and secret_file", secretFile: "f",
			file: "webhooks:\n  hooks:\n    ci:\n      secret: " + secret + "\n      secret_file: SECRETDIR/secret\n      lane: v1:api:ci\n      template: x\n",
			err:  `config: webhooks.hooks.ci.secret_file: both webhooks.hooks.ci.secret and webhooks.hooks.ci.secret_file are set; set one`},
		{name: "secret_file missing",
			file: "webhooks:\n  hooks:\n    ci:\n      secret_file: SECRETDIR/nope\n      lane: v1:api:ci\n      template: x\n",
			err:  `config: webhooks.hooks.ci.secret_file: cannot read SECRETDIR/nope: no such file or directory`},
		{name: "secret as a list", file: "webhooks:\n  hooks:\n    ci:\n      secret: [" + secret + "]\n      lane: v1:api:ci\n      template: x\n",
			err: `config: webhooks.hooks.ci.secret: must be a single value, not []interface {}`},
		{name: "bad lane", file: "webhooks:\n  hooks:\n    ci:\n      secret: " + secret + "\n      lane: telegram:dm:1\n      template: x\n",
			err: `config: webhooks.hooks.ci.lane: invalid lane "telegram:dm:1" (a session key such as v1:api:NAME, v1:telegram:dm:ID or v1:discord:thread:ID)`},
		{name: "lane without id", file: "webhooks:\n  hooks:\n    ci:\n      secret: " + secret + "\n      lane: \"v1:api:\"\n      template: x\n",
			err: `config: webhooks.hooks.ci.lane: invalid lane "v1:api:" (a session key such as v1:api:NAME, v1:telegram:dm:ID or v1:discord:thread:ID)`},
		{name: "lane with spaces", file: "webhooks:\n  hooks:\n    ci:\n      secret: " + secret + "\n      lane: v1:api:my lane\n      template: x\n",
			err: `config: webhooks.hooks.ci.lane: invalid lane "v1:api:my lane" (a session key such as v1:api:NAME, v1:telegram:dm:ID or v1:discord:thread:ID)`},
		{name: "no lane", file: "webhooks:\n  hooks:\n    ci:\n      secret: " + secret + "\n      template: x\n",
			err: `config: webhooks.hooks.ci.lane: required: the session key of the lane deliveries run in (e.g. v1:api:hooks)`},
		{name: "bad template", file: "webhooks:\n  hooks:\n    ci:\n      secret: " + secret + "\n      lane: v1:api:ci\n      template: \"Build {{.build\"\n",
			err: `config: webhooks.hooks.ci.template: template: ci:1: unclosed action`},
		{name: "unknown function", file: "webhooks:\n  hooks:\n    ci:\n      secret: " + secret + "\n      lane: v1:api:ci\n      template: \"{{shout .x}}\"\n",
			err: `config: webhooks.hooks.ci.template: template: ci:1: function "shout" not defined`},
		{name: "no template", file: "webhooks:\n  hooks:\n    ci:\n      secret: " + secret + "\n      lane: v1:api:ci\n",
			err: `config: webhooks.hooks.ci.template: required: the text of the turn, a Go template over the JSON body (e.g. "Build {{.build}} failed")`},
		{name: "every error of a hook at once", file: "webhooks:\n  hooks:\n    ci:\n      lane: nope\n",
			err: "config: webhooks.hooks.ci.secret: required: the HMAC secret the sender signs deliveries with (or set secret_file)\n" +
				`config: webhooks.hooks.ci.lane: invalid lane "nope" (a session key such as v1:api:NAME, v1:telegram:dm:ID or v1:discord:thread:ID)` + "\n" +
				`config: webhooks.hooks.ci.template: required: the text of the turn, a Go template over the JSON body (e.g. "Build {{.build}} failed")`},
		{name: "unknown field", file: "webhooks:\n  hooks:\n    ci:\n      secret: " + secret + "\n      lane: v1:api:ci\n      template: x\n      url: http://x\n",
			err: `config: webhooks.hooks.ci.url: unknown key (a hook has secret, secret_file, lane, template, max_per_minute)`},
		{name: "max_per_minute", file: "webhooks:\n  hooks:\n    ci:\n      secret: x\n      lane: v1:api:ci\n      template: x\n      max_per_minute: 5\n",
			want: map[string]string{"ci": `lane=v1:api:ci secret=x per_minute=5 text="x"`}},
		{name: "max_per_minute zero", file: "webhooks:\n  hooks:\n    ci:\n      secret: x\n      lane: v1:api:ci\n      template: x\n      max_per_minute: 0\n",
			err: `config: webhooks.hooks.ci.max_per_minute: must be a whole number of at least 1, got "0"`},
		{name: "bad name", file: "webhooks:\n  hooks:\n    my.hook:\n      secret: " + secret + "\n      lane: v1:api:ci\n      template: x\n",
			err: `config: webhooks.hooks: invalid hook name "my.hook" (1-64 letters, digits, '_' or '-')`},
		{name: "entry not a map", file: "webhooks:\n  hooks:\n    ci: " + secret + "\n",
			err: `config: webhooks.hooks.ci: must be a map of secret (or secret_file), lane and template, not string`},
		{name: "empty entry", file: "webhooks:\n  hooks:\n    ci:\n",
			err: `config: webhooks.hooks.ci: needs secret (or secret_file), lane and template`},
		{name: "hooks not a map", file: "webhooks:\n  hooks: [a, b]\n",
			err: `config: webhooks.hooks: must be a map of NAME: {secret, lane, template}, not []interface {}`},
		{name: "bad listen", file: "webhooks:\n  listen: 8788\n",
			err: `config: webhooks.listen: invalid address "8788" (use host:port, e.g. 127.0.0.1:8787)`},
		{name: "unknown webhooks key", file: "webhooks:\n  listn: 0.0.0.0:1\n", err: `config: webhooks.listn: unknown key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			if tc.secretFile != "" {
				writeFile(t, dir, "secret", tc.secretFile)
			}
			if tc.env != "" {
				t.Setenv("GATEWAYD_WEBHOOKS_HOOKS", tc.env)
			}
			file := writeFile(t, dir, "gw.yaml", strings.ReplaceAll(tc.file, "SECRETDIR", dir))
			cfg, err := Load(Options{File: file, Env: os.Environ()})
			if tc.err != "" {
				want := strings.ReplaceAll(tc.err, "SECRETDIR", dir)
				if err == nil || err.Error() != want {
					t.Fatalf("Load err = %v,\nwant %s", err, want)
				}
				for _, e := range leafErrors(err) {
					var ce *Error
					if !errors.As(e, &ce) || !strings.HasPrefix(ce.Key, "webhooks") {
						t.Errorf("error %v is not a *config.Error naming a webhooks key", e)
					}
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the secret is in the error %q", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if tc.want == nil {
				if cfg.Webhooks.Hooks != nil {
					t.Errorf("Hooks = %v, want nil", cfg.Webhooks.Hooks)
				}
				return
			}
			if got := hookSummary(cfg).(map[string]string); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("hooks = %v,\n want %v", got, tc.want)
			}
			for name, h := range cfg.Webhooks.Hooks {
				if h.Name != name {
					t.Errorf("hook %q has Name %q", name, h.Name)
				}
			}
		})
	}
}

// check-config prints the hooks without their secrets; neither does %v or
// %#v of the config or of a hook.
func TestWebhookSecretsAreNotShown(t *testing.T) {
	const secret = "never-print-this-secret"
	dir := isolate(t)
	writeFile(t, dir, "secret", secret+"-from-file\n")
	file := writeFile(t, dir, "gw.yaml", "webhooks:\n  listen: 0.0.0.0:8788\n  hooks:\n"+
		"    ci:\n      secret: "+secret+"\n      lane: v1:api:ci\n      template: \"Build {{.build}}\"\n"+
		"    gh:\n      secret_file: "+filepath.Join(dir, "secret")+"\n      lane: v1:telegram:dm:42\n      template: x\n")
	cfg, err := Load(Options{File: file, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Webhooks.Hooks["gh"].Secret != secret+"-from-file" || cfg.Webhooks.Hooks["ci"].Secret != secret {
		t.Fatalf("secrets not loaded: %q %q", cfg.Webhooks.Hooks["ci"].Secret, cfg.Webhooks.Hooks["gh"].Secret)
	}
	red := cfg.Redacted()
	want := `webhooks.hooks: {ci: {lane: "v1:api:ci", secret: [redacted], template: "Build {{.build}}", max_per_minute: 30}, ` +
		`gh: {lane: "v1:telegram:dm:42", secret_file: "` + filepath.Join(dir, "secret") + `", template: "x", max_per_minute: 30}}` + "\n"
	if !strings.Contains(red, want) || !strings.Contains(red, "webhooks.listen: \"0.0.0.0:8788\"\n") {
		t.Errorf("Redacted lacks\n%s\n%s", want, red)
	}
	for _, s := range []string{red, fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", *cfg), fmt.Sprintf("%#v", *cfg),
		fmt.Sprint(cfg.Webhooks.Hooks["ci"]), fmt.Sprintf("%+v", cfg.Webhooks), fmt.Sprintf("%#v", cfg.Webhooks.Hooks)} {
		if strings.Contains(s, secret) {
			t.Errorf("a secret is shown:\n%s", s)
		}
	}
}

func TestHookTemplateFuncs(t *testing.T) {
	tests := []struct {
		name, tmpl, body, want string
	}{
		{"field", "Build {{.build}} failed", `{"build": 42}`, "Build 42 failed"},
		{"big numbers keep their digits", "run {{.id}}", `{"id": 98765432101}`, "run 98765432101"},
		{"nested", "{{.repository.full_name}}", `{"repository": {"full_name": "o/r"}}`, "o/r"},
		{"json", "{{json .pr}}", `{"pr": {"n": 1, "t": "<b>"}}`, `{"n":1,"t":"<b>"}`},
		{"json of a string", "{{json .t}}", `{"t": "a\"b"}`, `"a\"b"`},
		{"default when missing", `{{default "none" (index . "x")}}`, `{}`, "none"},
		{"default when empty", `{{.x | default "none"}}`, `{"x": ""}`, "none"},
		{"default when zero", `{{.x | default "none"}}`, `{"x": 0}`, "none"},
		{"default when set", `{{.x | default "none"}}`, `{"x": "set"}`, "set"},
		{"truncate", `{{truncate 5 .x}}`, `{"x": "abcdefgh"}`, "abcd…"},
		{"truncate short", `{{.x | truncate 5}}`, `{"x": "abc"}`, "abc"},
		{"truncate runes", `{{truncate 3 .x}}`, `{"x": "ééééé"}`, "éé…"},
		{"truncate zero", `{{truncate 0 .x}}`, `{"x": "abc"}`, ""},
		{"truncate to a length from the body", `{{truncate .n .x}}`, `{"n": 3, "x": "abcdef"}`, "ab…"},
		{"truncate a number", `{{truncate 2 .x}}`, `{"x": 12345}`, "1…"},
		{"optional with index", `{{with index . "pr"}}PR {{.n}}{{else}}no PR{{end}}`, `{}`, "no PR"},
		{"a list body", `{{range .}}{{.}};{{end}}`, `[1, "a"]`, "1;a;"},
		{"missing key", "{{.missing}}", `{}`, `error: template: t:1:2: executing "t" at <.missing>: map has no entry for key "missing"`},
		{"field of a missing value", "{{.missing.field}}", `{"missing": null}`,
			`error: template: t:1:10: executing "t" at <.missing.field>: nil pointer evaluating interface {}.field`},
		{"negative truncate", `{{truncate -1 .x}}`, `{"x": "a"}`,
			`error: template: t:1:2: executing "t" at <truncate -1 .x>: error calling truncate: truncate: negative length -1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := ParseHookTemplate("t", tc.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(Hook{Template: tmpl}, tc.body); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The sample's commented-out hooks are templates that parse and run.
func TestSampleHookTemplates(t *testing.T) {
	for _, tc := range []struct{ tmpl, body, want string }{
		{"GitHub {{default \"event\" (index . \"action\")}} on {{.repository.full_name}}:\n" +
			"{{with index . \"pull_request\"}}PR #{{.number}} {{.title}} {{.html_url}}{{end}}\n",
			`{"action": "opened", "repository": {"full_name": "o/r"}, "pull_request": {"number": 7, "title": "Fix", "html_url": "https://x/7"}}`,
			"GitHub opened on o/r:\nPR #7 Fix https://x/7\n"},
		{`Build {{.build}} failed: {{truncate 2000 (default "no log" (index . "log"))}}`, `{"build": 9}`, "Build 9 failed: no log"},
	} {
		tmpl, err := ParseHookTemplate("sample", tc.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(Hook{Template: tmpl}, tc.body); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
