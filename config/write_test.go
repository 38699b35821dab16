package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// What WriteYAML writes, Load reads back as the same values.
func TestWriteYAMLLoadsBack(t *testing.T) {
	dir := isolate(t)
	project := filepath.Join(dir, "web")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"telegram.allowed_users": []string{"4242", "77"},
		"telegram.api_url":       "http://127.0.0.1:9/x",
		"discord.allowed_users":  []string{"99"},
		"projects":               map[string]string{"web": project},
		"lanes.worktrees":        false,
		"lanes.max_live":         7,
		"codex.turn_timeout":     90 * time.Second,
		"state_dir":              filepath.Join(dir, "state"),
	}
	var b bytes.Buffer
	if err := WriteYAML(&b, "Written by a test.\nSecond line.", values); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"# Written by a test.\n# Second line.\n", "telegram:\n  api_url: \"http://127.0.0.1:9/x\"\n  allowed_users: [\"4242\", \"77\"]\n",
		"projects:\n  \"web\": \"" + project + "\"\n", "lanes:\n  max_live: 7\n  worktrees: false\n", "\nstate_dir: \""} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	t.Setenv("GATEWAYD_TELEGRAM_TOKEN", "1:x")
	t.Setenv("GATEWAYD_DISCORD_TOKEN", "y")
	cfg, err := Load(Options{File: writeFile(t, dir, "gw.yaml", text), Env: os.Environ()})
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	got := map[string]any{
		"telegram.allowed_users": cfg.Telegram.AllowedUsers, "telegram.api_url": cfg.Telegram.APIURL,
		"discord.allowed_users": cfg.Discord.AllowedUsers, "projects": cfg.Projects, "lanes.worktrees": cfg.Lanes.Worktrees,
		"lanes.max_live": cfg.Lanes.MaxLive, "codex.turn_timeout": cfg.Codex.TurnTimeout, "state_dir": cfg.StateDir,
	}
	if !reflect.DeepEqual(got, values) {
		t.Errorf("loaded %v, wrote %v", got, values)
	}
}

func TestWriteYAMLRefuses(t *testing.T) {
	dir := isolate(t)
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"unknown key", map[string]any{"telegram.alowed_users": []string{"1"}}, "config: telegram.alowed_users: unknown key"},
		{"secret", map[string]any{"telegram.token": "1:SECRET"}, "config: telegram.token: a secret is not written"},
		{"invalid value", map[string]any{"telegram.api_url": "ftp://x"}, "config: telegram.api_url: invalid URL"},
		{"missing project", map[string]any{"projects": map[string]string{"web": filepath.Join(dir, "gone")}}, "config: projects.web: directory"},
		{"unsupported type", map[string]any{"lanes.max_live": 1.5}, "config: lanes.max_live: cannot write a float64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			err := WriteYAML(&b, "", tc.values)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "SECRET") {
				t.Errorf("err = %v, want %q…", err, tc.want)
			}
		})
	}
}

// Load reads the environment it is given, not the process's.
func TestLoadReadsOnlyTheGivenEnvironment(t *testing.T) {
	dir := isolate(t)
	t.Setenv("GATEWAYD_LOG_LEVEL", "error")
	env := []string{"HOME=" + filepath.Join(dir, "elsewhere"), "GATEWAYD_LOG_FORMAT=console", "GATEWAYD_LOG_FORMAT=json"}
	cfg, err := Load(Options{File: writeFile(t, dir, "e.yaml", ""), Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Log.Level != "info" || cfg.Log.Format != "console" {
		t.Errorf("log = %+v, want the given environment's console and the default level", cfg.Log)
	}
	if want := filepath.Join(dir, "elsewhere", ".local", "state", "gatewayd"); cfg.StateDir != want {
		t.Errorf("state_dir = %q, want %q", cfg.StateDir, want)
	}
	if _, err := Load(Options{File: writeFile(t, dir, "e.yaml", ""), Env: []string{"GATEWAYD_NOPE=1", "HOME=/h"}}); err == nil ||
		!strings.Contains(err.Error(), "GATEWAYD_NOPE") {
		t.Errorf("an unknown variable of the given environment: %v", err)
	}
}
