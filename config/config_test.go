package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// isolate clears every GATEWAYD_* and state variable from the test's
// environment so the host cannot leak into the results.
func isolate(t *testing.T) string {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix+"_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	dir := t.TempDir()
	t.Setenv("STATE_DIRECTORY", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg-config"))
	t.Setenv("HOME", filepath.Join(dir, "home"))
	return dir
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// yamlFor turns "a.b: v" into nested YAML.
func yamlFor(key, value string) string {
	parts := strings.Split(key, ".")
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i < len(parts)-1 {
			b.WriteString("\n")
		}
	}
	b.WriteString(" " + value + "\n")
	return b.String()
}

type keyCase struct {
	key  string
	yaml string // value as written in YAML
	env  string // value as written in the environment
	get  func(c *Config) any
	want any
}

func keyCases(secretDir string) []keyCase {
	tokenFile := filepath.Join(secretDir, "token")
	cases := []keyCase{
		{"state_dir", "/srv/gw", "/srv/gw", func(c *Config) any { return c.StateDir }, "/srv/gw"},
		{"log.level", "debug", "debug", func(c *Config) any { return c.Log.Level }, "debug"},
		{"log.format", "console", "console", func(c *Config) any { return c.Log.Format }, "console"},
		{"codex.command", "/opt/codex", "/opt/codex", func(c *Config) any { return c.Codex.Command }, "/opt/codex"},
		{"codex.args", `["-c", "model=x"]`, "-c,model=x", func(c *Config) any { return c.Codex.Args }, []string{"-c", "model=x"}},
		{"codex.home", "/srv/codex-home", "/srv/codex-home", func(c *Config) any { return c.Codex.Home }, "/srv/codex-home"},
		{"codex.cwd", "/srv/work", "/srv/work", func(c *Config) any { return c.Codex.Cwd }, "/srv/work"},
		{"codex.model", "gpt-x", "gpt-x", func(c *Config) any { return c.Codex.Model }, "gpt-x"},
		{"codex.effort", "high", "high", func(c *Config) any { return c.Codex.Effort }, "high"},
		{"codex.sandbox", "read-only", "read-only", func(c *Config) any { return c.Codex.Sandbox }, "read-only"},
		{"codex.isolation", "none", "none", func(c *Config) any { return c.Codex.Isolation }, "none"},
		{"codex.approvals", "chat", "chat", func(c *Config) any { return c.Codex.Approvals }, "chat"},
		{"codex.approvers", "anyone", "anyone", func(c *Config) any { return c.Codex.Approvers }, "anyone"},
		{"codex.allow_escalation", "true", "true", func(c *Config) any { return c.Codex.AllowEscalation }, true},
		{"codex.approval_timeout", "90s", "90s", func(c *Config) any { return c.Codex.ApprovalTimeout }, 90 * time.Second},
		{"codex.question_timeout", "5m", "5m", func(c *Config) any { return c.Codex.QuestionTimeout }, 5 * time.Minute},
		{"codex.turn_timeout", "5m", "5m", func(c *Config) any { return c.Codex.TurnTimeout }, 5 * time.Minute},
		{"codex.resume_timeout", "2m", "2m", func(c *Config) any { return c.Codex.ResumeTimeout }, 2 * time.Minute},
		{"codex.start_timeout", "10s", "10s", func(c *Config) any { return c.Codex.StartTimeout }, 10 * time.Second},
		{"projects", "{api: SECRETDIR, site: SECRETDIR/}", "api=SECRETDIR,site=SECRETDIR/",
			func(c *Config) any { return cleanAbs(c.Projects) }, map[string]bool{"api": true, "site": true}},
		{"api.listen", "127.0.0.2:9000", "127.0.0.2:9000", func(c *Config) any { return c.API.Listen }, "127.0.0.2:9000"},
		{"api.token", "s3cret", "s3cret", func(c *Config) any { return c.API.Token }, "s3cret"},
		{"api.token_file", tokenFile, tokenFile, func(c *Config) any { return c.API.Token }, "from-file"},
		{"api.allowed_hosts", `["gw.example", "GW.lan:8787", "[::1]:9000"]`, "gw.example, GW.lan:8787,[::1]:9000",
			func(c *Config) any { return c.API.AllowedHosts }, []string{"gw.example", "GW.lan:8787", "[::1]:9000"}},
		{"api.allowed_origins", `["https://console.example", "http://127.0.0.1:3000"]`, "https://console.example,http://127.0.0.1:3000",
			func(c *Config) any { return c.API.AllowedOrigins }, []string{"https://console.example", "http://127.0.0.1:3000"}},
		{"api.max_connections", "8", "8", func(c *Config) any { return c.API.MaxConnections }, 8},
		{"api.metrics_public", "true", "true", func(c *Config) any { return c.API.MetricsPublic }, true},
		{"api.allow_group", "gatewayd-users", "gatewayd-users", func(c *Config) any { return c.API.AllowGroup }, "gatewayd-users"},
		{"webhooks.listen", "0.0.0.0:8788", "0.0.0.0:8788", func(c *Config) any { return c.Webhooks.Listen }, "0.0.0.0:8788"},
		{"webhooks.max_age", "30s", "30s", func(c *Config) any { return c.Webhooks.MaxAge }, 30 * time.Second},
		{"webhooks.replay_window", "48h", "48h", func(c *Config) any { return c.Webhooks.ReplayWindow }, 48 * time.Hour},
		{"webhooks.max_connections", "300", "300", func(c *Config) any { return c.Webhooks.MaxConnections }, 300},
		{"webhooks.hooks", hookCaseYAML, hookCaseEnv, hookSummary, hookCaseWant},
		{"telegram.token", "tg", "tg", func(c *Config) any { return c.Telegram.Token }, "tg"},
		{"telegram.token_file", tokenFile, tokenFile, func(c *Config) any { return c.Telegram.Token }, "from-file"},
		{"telegram.api_url", "http://127.0.0.1:1", "http://127.0.0.1:1", func(c *Config) any { return c.Telegram.APIURL }, "http://127.0.0.1:1"},
		{"telegram.allowed_users", "[1, 2]", "1,2", func(c *Config) any { return c.Telegram.AllowedUsers }, []string{"1", "2"}},
		{"telegram.allowed_chats", "[-100]", "-100", func(c *Config) any { return c.Telegram.AllowedChats }, []string{"-100"}},
		{"telegram.free_response_chats", "[-100]", "-100", func(c *Config) any { return c.Telegram.FreeResponseChats }, []string{"-100"}},
		{"telegram.admins", "[42]", "42", func(c *Config) any { return c.Telegram.Admins }, []string{"42"}},
		{"telegram.poll_timeout", "10s", "10s", func(c *Config) any { return c.Telegram.PollTimeout }, 10 * time.Second},
		{"telegram.draft_streaming", "false", "false", func(c *Config) any { return c.Telegram.DraftStreaming }, false},
		{"discord.token", "dc", "dc", func(c *Config) any { return c.Discord.Token }, "dc"},
		{"discord.token_file", tokenFile, tokenFile, func(c *Config) any { return c.Discord.Token }, "from-file"},
		{"discord.api_url", "http://127.0.0.1:2", "http://127.0.0.1:2", func(c *Config) any { return c.Discord.APIURL }, "http://127.0.0.1:2"},
		{"discord.allowed_users", "[10, 11]", "10, 11", func(c *Config) any { return c.Discord.AllowedUsers }, []string{"10", "11"}},
		{"discord.allowed_roles", "[r]", "r", func(c *Config) any { return c.Discord.AllowedRoles }, []string{"r"}},
		{"discord.allowed_guilds", "[g]", "g", func(c *Config) any { return c.Discord.AllowedGuilds }, []string{"g"}},
		{"discord.allowed_channels", "[c]", "c", func(c *Config) any { return c.Discord.AllowedChannels }, []string{"c"}},
		{"discord.free_response_channels", "[c]", "c", func(c *Config) any { return c.Discord.FreeResponseChannels }, []string{"c"}},
		{"discord.admins", "[7]", "7", func(c *Config) any { return c.Discord.Admins }, []string{"7"}},
		{"discord.auto_thread", "true", "true", func(c *Config) any { return c.Discord.AutoThread }, true},
		{"discord.ignore_bots", "false", "false", func(c *Config) any { return c.Discord.IgnoreBots }, false},
		{"discord.per_user_channels", "true", "true", func(c *Config) any { return c.Discord.PerUserChannels }, true},
		{"discord.backfill_limit", "7", "7", func(c *Config) any { return c.Discord.BackfillLimit }, 7},
		{"discord.backfill_max_age", "1h", "1h", func(c *Config) any { return c.Discord.BackfillMaxAge }, time.Hour},
		{"lanes.max_live", "3", "3", func(c *Config) any { return c.Lanes.MaxLive }, 3},
		{"lanes.idle_evict", "0s", "0s", func(c *Config) any { return c.Lanes.IdleEvict }, time.Duration(0)},
		{"lanes.busy_mode", "steer", "steer", func(c *Config) any { return c.Lanes.BusyMode }, "steer"},
		{"lanes.rotate", "daily@04:30", "daily@04:30", func(c *Config) any { return c.Lanes.Rotate }, Rotate{Daily: true, Hour: 4, Minute: 30}},
		{"lanes.compact_at", "0.8", "0.8", func(c *Config) any { return c.Lanes.CompactAt }, 0.8},
		{"lanes.queue_limit", "5", "5", func(c *Config) any { return c.Lanes.QueueLimit }, 5},
		{"lanes.max_per_minute", "0", "0", func(c *Config) any { return c.Lanes.MaxPerMinute }, 0},
		{"lanes.budget_tokens_per_day", "250000", "250000", func(c *Config) any { return c.Lanes.BudgetTokensPerDay }, 250000},
		{"lanes.max_concurrent_turns", "2", "2", func(c *Config) any { return c.Lanes.MaxConcurrentTurns }, 2},
		{"lanes.auto_retry_cut_off", "true", "true", func(c *Config) any { return c.Lanes.AutoRetryCutOff }, true},
		{"lanes.worktrees", "false", "false", func(c *Config) any { return c.Lanes.Worktrees }, false},
		{"lanes.worktree_retention", "168h", "168h", func(c *Config) any { return c.Lanes.WorktreeRetention }, 168 * time.Hour},
		{"worktrees.pool", "3", "3", func(c *Config) any { return c.Worktrees.Pool }, 3},
		{"lanes.group_context", "false", "false", func(c *Config) any { return c.Lanes.GroupContext }, false},
		{"lanes.context_messages", "5", "5", func(c *Config) any { return c.Lanes.ContextMessages }, 5},
		{"lanes.notify_after", "2m", "2m", func(c *Config) any { return c.Lanes.NotifyAfter }, 2 * time.Minute},
		{"lanes.verbose", "full", "full", func(c *Config) any { return c.Lanes.Verbose }, "full"},
		{"voice.transcribe_url", "http://127.0.0.1:9/v1/audio/transcriptions", "http://127.0.0.1:9/v1/audio/transcriptions", func(c *Config) any { return c.Voice.TranscribeURL }, "http://127.0.0.1:9/v1/audio/transcriptions"},
		{"voice.api_key", "sk-test", "sk-test", func(c *Config) any { return c.Voice.APIKey }, "sk-test"},
		{"voice.api_key_file", tokenFile, tokenFile, func(c *Config) any { return c.Voice.APIKey }, "from-file"},
		{"voice.model", "base.en", "base.en", func(c *Config) any { return c.Voice.Model }, "base.en"},
		{"voice.timeout", "5s", "5s", func(c *Config) any { return c.Voice.Timeout }, 5 * time.Second},
		{"lanes.timezone", "Europe/Berlin", "Europe/Berlin", func(c *Config) any { return c.Lanes.Timezone }, "Europe/Berlin"},
		{"schedules.min_interval", "5m", "5m", func(c *Config) any { return c.Schedules.MinInterval }, 5 * time.Minute},
		{"schedules.catch_up", "0s", "0s", func(c *Config) any { return c.Schedules.CatchUp }, time.Duration(0)},
		{"schedules.max_per_lane", "3", "3", func(c *Config) any { return c.Schedules.MaxPerLane }, 3},
		{"files.max_bytes", "5MiB", "5MiB", func(c *Config) any { return c.Files.MaxBytes }, int64(5 << 20)},
		{"files.lane_quota", "1048576", "1048576", func(c *Config) any { return c.Files.LaneQuota }, int64(1 << 20)},
		{"lanes.disk_quota", "1MiB", "1MiB", func(c *Config) any { return c.Lanes.DiskQuota }, int64(1 << 20)},
		{"lanes.disk_quota", "0", "0", func(c *Config) any { return c.Lanes.DiskQuota }, int64(0)},
		{"codex.max_processes", "512", "512", func(c *Config) any { return c.Codex.MaxProcesses }, 512},
		{"codex.max_processes", "0", "0", func(c *Config) any { return c.Codex.MaxProcesses }, 0},
		{"codex.max_file_size", "1GiB", "1GiB", func(c *Config) any { return c.Codex.MaxFileSize }, int64(1 << 30)},
		{"files.spool_max_bytes", "2GiB", "2GiB", func(c *Config) any { return c.Files.SpoolMaxBytes }, int64(2 << 30)},
		{"store.driver", "postgres", "postgres", func(c *Config) any { return c.Store.Driver }, "postgres"},
		{"store.dsn", "postgres://gw:pw@127.0.0.1/gw", "postgres://gw:pw@127.0.0.1/gw", func(c *Config) any { return c.Store.DSN }, "postgres://gw:pw@127.0.0.1/gw"},
		{"store.dsn_file", tokenFile, tokenFile, func(c *Config) any { return c.Store.DSN }, "from-file"},
		{"shutdown.drain_timeout", "15s", "15s", func(c *Config) any { return c.Shutdown.DrainTimeout }, 15 * time.Second},
		{"cluster.node_id", "gw-2", "gw-2", func(c *Config) any { return c.Cluster.NodeID }, "gw-2"},
		{"cluster.lease_ttl", "5s", "5s", func(c *Config) any { return c.Cluster.LeaseTTL }, 5 * time.Second},
		{"cluster.discord_shards", "4", "4", func(c *Config) any { return c.Cluster.DiscordShards }, 4},
	}
	return append(cases, chatKeyCases(secretDir)...)
}

// cleanAbs maps each project to whether its directory came out absolute
// and cleaned (the test's directory itself is only known inside the case).
func cleanAbs(projects map[string]string) map[string]bool {
	out := map[string]bool{}
	for name, dir := range projects {
		out[name] = filepath.IsAbs(dir) && dir == filepath.Clean(dir)
	}
	return out
}

// requiredCompanions are keys a case needs so "required when" rules pass.
func requiredCompanions(key string) map[string]string {
	switch {
	case strings.HasPrefix(key, "telegram.token"):
		return map[string]string{"telegram.allowed_users": "1"}
	case strings.HasPrefix(key, "discord.token"):
		return map[string]string{"discord.allowed_users": "1"}
	case key == "store.driver":
		return map[string]string{"store.dsn": "postgres://127.0.0.1/gw"}
	case strings.HasPrefix(key, "store.dsn"):
		return map[string]string{"store.driver": "postgres"}
	}
	return chatCompanions(key)
}

func TestEveryKeyHasACase(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range keyCases(t.TempDir()) {
		covered[c.key] = true
	}
	for _, k := range Keys() {
		if !covered[k] {
			t.Errorf("key %s has no test case", k)
		}
	}
}

func TestEveryKeyFromFile(t *testing.T) {
	for _, tc := range keyCases("SECRETDIR") {
		t.Run(tc.key, func(t *testing.T) {
			dir := isolate(t)
			writeFile(t, dir, "token", "  from-file\n")
			writeChatTokenFiles(t, dir)
			value := strings.ReplaceAll(tc.yaml, "SECRETDIR", dir)
			doc := yamlFor(tc.key, value)
			for k, v := range requiredCompanions(tc.key) {
				t.Setenv(EnvName(k), v)
			}
			cfg, err := Load(Options{File: writeFile(t, dir, "gw.yaml", doc), Env: os.Environ()})
			if err != nil {
				t.Fatalf("Load: %v\nfile:\n%s", err, doc)
			}
			if got := tc.get(cfg); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s = %#v, want %#v", tc.key, got, tc.want)
			}
		})
	}
}

func TestEveryKeyFromEnv(t *testing.T) {
	for _, tc := range keyCases("SECRETDIR") {
		t.Run(tc.key, func(t *testing.T) {
			dir := isolate(t)
			writeFile(t, dir, "token", "from-file")
			writeChatTokenFiles(t, dir)
			t.Setenv(EnvName(tc.key), strings.ReplaceAll(tc.env, "SECRETDIR", dir))
			for k, v := range requiredCompanions(tc.key) {
				t.Setenv(EnvName(k), v)
			}
			cfg, err := Load(Options{File: writeFile(t, dir, "empty.yaml", ""), Env: os.Environ()})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := tc.get(cfg); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s = %#v, want %#v", tc.key, got, tc.want)
			}
		})
	}
}

func TestEnvOverridesFile(t *testing.T) {
	dir := isolate(t)
	file := writeFile(t, dir, "gw.yaml", "log:\n  level: warn\n")
	t.Setenv("GATEWAYD_LOG_LEVEL", "error")
	cfg, err := Load(Options{File: file, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Log.Level != "error" {
		t.Errorf("log.level = %q, want the environment's error", cfg.Log.Level)
	}
}

func TestDefaults(t *testing.T) {
	dir := isolate(t)
	cfg, err := Load(Options{File: writeFile(t, dir, "empty.yaml", ""), Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	want := Config{
		File:     filepath.Join(dir, "empty.yaml"),
		StateDir: filepath.Join(home, ".local", "state", "gatewayd"),
		Log:      Log{Level: "info", Format: "json"},
		Codex: Codex{
			Command: "codex", Args: []string{}, Cwd: filepath.Join(home, ".local", "state", "gatewayd", "workspace"),
			Sandbox: "workspace-write", Isolation: "lanes", Approvals: "never", Approvers: "requester", ApprovalTimeout: 10 * time.Minute,
			QuestionTimeout: 30 * time.Minute,
			TurnTimeout:     30 * time.Minute, ResumeTimeout: 10 * time.Minute, StartTimeout: 30 * time.Second,
			MaxProcesses: DefaultCodexMaxProcesses, MaxFileSize: 4 << 30,
		},
		API: API{Listen: "127.0.0.1:8787", AllowedHosts: []string{}, AllowedOrigins: []string{}, MaxConnections: 256},
		Telegram: Telegram{
			APIURL: "https://api.telegram.org", AllowedUsers: []string{}, AllowedChats: []string{},
			FreeResponseChats: []string{}, Admins: []string{}, PollTimeout: 30 * time.Second, DraftStreaming: true,
		},
		Discord: Discord{
			AllowedUsers: []string{}, AllowedRoles: []string{}, AllowedGuilds: []string{},
			AllowedChannels: []string{}, FreeResponseChannels: []string{}, Admins: []string{},
			IgnoreBots: true, BackfillLimit: 50, BackfillMaxAge: 24 * time.Hour,
		},
		Slack:  Slack{APIURL: "https://slack.com/api/", AllowedUsers: []string{}, AllowedChannels: []string{}, Admins: []string{}},
		Matrix: Matrix{AllowedUsers: []string{}, AllowedRooms: []string{}, Admins: []string{}},
		Lanes: Lanes{
			MaxLive: 32, IdleEvict: 30 * time.Minute, BusyMode: "queue",
			QueueLimit: 20, MaxPerMinute: 20, MaxConcurrentTurns: DefaultMaxConcurrentTurns, Verbose: "summary", Worktrees: true, WorktreeRetention: 720 * time.Hour,
			GroupContext: true, ContextMessages: 30, NotifyAfter: time.Minute,
			DiskQuota: 5 << 30,
		},
		Worktrees: Worktrees{Pool: 1},
		Shutdown:  Shutdown{DrainTimeout: time.Minute},
		Store:     Store{Driver: "sqlite"},
		Files:     Files{MaxBytes: 20 << 20, LaneQuota: 1 << 30},
		Voice:     Voice{Model: "whisper-1", Timeout: time.Minute},
		Webhooks:  Webhooks{MaxAge: 5 * time.Minute, ReplayWindow: 24 * time.Hour, MaxConnections: 128},
		Schedules: Schedules{MinInterval: time.Minute, CatchUp: time.Hour, MaxPerLane: 20},
		Cluster:   Cluster{NodeID: hostname(t), LeaseTTL: 15 * time.Second, DiscordShards: 1},
		Projects:  map[string]string{},
	}
	if !reflect.DeepEqual(*cfg, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", *cfg, want)
	}
	if cfg.Telegram.Enabled() || cfg.Discord.Enabled() || cfg.Slack.Enabled() || cfg.Matrix.Enabled() {
		t.Error("a platform is enabled without a token")
	}
	if got, want := cfg.DatabasePath(), filepath.Join(want.StateDir, "gatewayd.db"); got != want {
		t.Errorf("DatabasePath = %q, want %q", got, want)
	}
}

func TestStateDirDefaults(t *testing.T) {
	tests := []struct {
		name, stateDirectory, xdg string
		want                      func(home string) string
	}{
		{"systemd", "/var/lib/gatewayd:/var/lib/other", "/x", func(string) string { return "/var/lib/gatewayd" }},
		{"xdg", "", "/xdg/state", func(string) string { return "/xdg/state/gatewayd" }},
		{"home", "", "", func(h string) string { return filepath.Join(h, ".local/state/gatewayd") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			t.Setenv("STATE_DIRECTORY", tc.stateDirectory)
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			cfg, err := Load(Options{File: writeFile(t, dir, "e.yaml", ""), Env: os.Environ()})
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.want(filepath.Join(dir, "home")); cfg.StateDir != want {
				t.Errorf("state_dir = %q, want %q", cfg.StateDir, want)
			}
		})
	}
}

func TestConfigFileFromEnv(t *testing.T) {
	dir := isolate(t)
	t.Setenv(EnvConfigFile, writeFile(t, dir, "gw.yaml", "log:\n  format: console\n"))
	cfg, err := Load(Options{Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Log.Format != "console" {
		t.Errorf("log.format = %q: $%s was not read", cfg.Log.Format, EnvConfigFile)
	}
}

func TestNoFileAtAll(t *testing.T) {
	isolate(t)
	cfg, err := Load(Options{Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.File != "" {
		t.Errorf("File = %q, want none", cfg.File)
	}
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  map[string]string
		want string
	}{
		{"bad duration", "codex:\n  turn_timeout: abc\n", nil,
			`config: codex.turn_timeout: invalid duration "abc" (use e.g. 90s, 30m, 1h30m)`},
		{"duration without unit", "codex:\n  start_timeout: 30\n", nil,
			`config: codex.start_timeout: invalid duration "30" (use e.g. 90s, 30m, 1h30m)`},
		{"zero timeout", "codex:\n  resume_timeout: 0s\n", nil,
			`config: codex.resume_timeout: must be greater than zero, got 0s`},
		{"zero approval timeout", "codex:\n  approval_timeout: 0s\n", nil,
			`config: codex.approval_timeout: must be greater than zero, got 0s`},
		{"zero question timeout", "codex:\n  question_timeout: 0s\n", nil,
			`config: codex.question_timeout: must be greater than zero, got 0s`},
		{"unknown time zone", "lanes:\n  timezone: Mars/Olympus\n", nil,
			`config: lanes.timezone: unknown time zone "Mars/Olympus" (use an IANA name such as Europe/Berlin)`},
		{"negative idle", "", map[string]string{"GATEWAYD_LANES_IDLE_EVICT": "-1m"},
			`config: lanes.idle_evict: must not be negative, got -1m`},
		{"bad env duration", "", map[string]string{"GATEWAYD_SHUTDOWN_DRAIN_TIMEOUT": "soon"},
			`config: shutdown.drain_timeout: invalid duration "soon" (use e.g. 90s, 30m, 1h30m)`},
		{"log level", "log:\n  level: loud\n", nil,
			`config: log.level: invalid value "loud" (one of debug, info, warn, error)`},
		{"log format", "", map[string]string{"GATEWAYD_LOG_FORMAT": "xml"},
			`config: log.format: invalid value "xml" (one of json, console)`},
		{"sandbox", "codex:\n  sandbox: none\n", nil,
			`config: codex.sandbox: invalid value "none" (one of read-only, workspace-write, danger-full-access)`},
		{"isolation", "codex:\n  isolation: off\n", nil,
			`config: codex.isolation: invalid value "off" (one of lanes, none)`},
		{"approvals", "codex:\n  approvals: always\n", nil,
			`config: codex.approvals: invalid value "always" (one of never, chat)`},
		{"empty command", "codex:\n  command: \"\"\n", nil, `config: codex.command: must not be empty`},
		{"listen", "api:\n  listen: localhost\n", nil,
			`config: api.listen: invalid address "localhost" (use host:port, e.g. 127.0.0.1:8787)`},
		{"listen port", "api:\n  listen: 127.0.0.1:http\n", nil, `config: api.listen: invalid port in "127.0.0.1:http"`},
		{"telegram url", "telegram:\n  api_url: ftp://x\n", nil,
			`config: telegram.api_url: invalid URL "ftp://x" (use http:// or https://)`},
		{"busy mode", "lanes:\n  busy_mode: drop\n", nil,
			`config: lanes.busy_mode: invalid value "drop" (one of queue, interrupt, steer)`},
		{"max live", "lanes:\n  max_live: 0\n", nil, `config: lanes.max_live: must be at least 1, got 0`},
		{"verbose", "", map[string]string{"GATEWAYD_LANES_VERBOSE": "loud"},
			`config: lanes.verbose: invalid value "loud" (one of off, summary, full)`},
		{"max connections", "", map[string]string{"GATEWAYD_API_MAX_CONNECTIONS": "0"},
			`config: api.max_connections: must be at least 1, got 0`},
		{"allowed host with scheme", "api:\n  allowed_hosts: [\"http://gw.example\"]\n", nil,
			`config: api.allowed_hosts: invalid host "http://gw.example" (use a host name or host:port, without scheme or path)`},
		{"allowed host with path", "", map[string]string{"GATEWAYD_API_ALLOWED_HOSTS": "gw.example/api"},
			`config: api.allowed_hosts: invalid host "gw.example/api" (use a host name or host:port, without scheme or path)`},
		{"allowed origin without scheme", "", map[string]string{"GATEWAYD_API_ALLOWED_ORIGINS": "console.example"},
			`config: api.allowed_origins: invalid origin "console.example" (use scheme://host[:port], e.g. https://console.example, without a path)`},
		{"allowed origin with path", "api:\n  allowed_origins: [\"https://console.example/app\"]\n", nil,
			`config: api.allowed_origins: invalid origin "https://console.example/app" (use scheme://host[:port], e.g. https://console.example, without a path)`},
		{"allowed origin wildcard", "api:\n  allowed_origins: [\"*\"]\n", nil,
			`config: api.allowed_origins: invalid origin "*" (use scheme://host[:port], e.g. https://console.example, without a path)`},
		{"size unit", "files:\n  max_bytes: 20MB\n", nil,
			`config: files.max_bytes: invalid size "20MB" (bytes, or a number with KiB, MiB or GiB)`},
		{"size zero", "", map[string]string{"GATEWAYD_FILES_LANE_QUOTA": "0"}, `config: files.lane_quota: must be greater than zero, got 0`},
		{"disk quota unit", "lanes:\n  disk_quota: 5GB\n", nil,
			`config: lanes.disk_quota: invalid size "5GB" (bytes, or a number with KiB, MiB or GiB)`},
		{"disk quota negative", "", map[string]string{"GATEWAYD_LANES_DISK_QUOTA": "-1"}, `config: lanes.disk_quota: must not be negative, got -1`},
		{"max processes", "", map[string]string{"GATEWAYD_CODEX_MAX_PROCESSES": "-5"}, `config: codex.max_processes: must be at least 0, got -5`},
		{"max file size", "codex:\n  max_file_size: lots\n", nil,
			`config: codex.max_file_size: invalid size "lots" (bytes, or a number with KiB, MiB or GiB)`},
		{"spool negative", "", map[string]string{"GATEWAYD_FILES_SPOOL_MAX_BYTES": "-1"}, `config: files.spool_max_bytes: must not be negative, got -1`},
		{"effort", "codex:\n  effort: very high\n", nil,
			`config: codex.effort: invalid effort "very high" (letters only, e.g. low, medium, high)`},
		{"int", "", map[string]string{"GATEWAYD_LANES_QUEUE_LIMIT": "many"}, `config: lanes.queue_limit: invalid integer "many"`},
		{"bool", "discord:\n  auto_thread: maybe\n", nil,
			`config: discord.auto_thread: invalid boolean "maybe" (use true or false)`},
		{"draft streaming", "", map[string]string{"GATEWAYD_TELEGRAM_DRAFT_STREAMING": "sometimes"},
			`config: telegram.draft_streaming: invalid boolean "sometimes" (use true or false)`},
		{"compact range", "lanes:\n  compact_at: 1.5\n", nil,
			`config: lanes.compact_at: must be between 0 and 1 (exclusive), or 0 for off; got 1.5`},
		{"compact text", "", map[string]string{"GATEWAYD_LANES_COMPACT_AT": "most"}, `config: lanes.compact_at: invalid number "most"`},
		{"rotate", "lanes:\n  rotate: weekly\n", nil,
			`config: lanes.rotate: invalid value "weekly" (use off, an idle duration like 24h, or daily@HH[:MM])`},
		{"rotate hour", "lanes:\n  rotate: daily@25\n", nil,
			`config: lanes.rotate: invalid value "daily@25" (use daily@HH or daily@HH:MM, 24-hour local time)`},
		{"rotate short", "lanes:\n  rotate: 10s\n", nil, `config: lanes.rotate: idle duration "10s" is below the 1m minimum`},
		{"unknown file key", "codex:\n  turn_timout: 1m\n", nil, `config: codex.turn_timout: unknown key`},
		{"unknown section", "slack:\n  token: x\n", nil, `config: slack.token: unknown key`},
		{"map for string", "log:\n  level:\n    a: b\n", nil, `config: log.level: must be a single value or list, not a map`},
		{"unknown env", "", map[string]string{"GATEWAYD_CODEX_TURNTIMEOUT": "1m"},
			`config: GATEWAYD_CODEX_TURNTIMEOUT: environment variable names no configuration key`},
		{"telegram allowlist required", "telegram:\n  token: t\n", nil,
			`config: telegram.allowed_users: required when telegram.token is set (or set telegram.allowed_chats)`},
		{"discord allowlist required", "", map[string]string{"GATEWAYD_DISCORD_TOKEN": "d"},
			`config: discord.allowed_users: required when discord.token is set (or set discord.allowed_roles)`},
		{"telegram id", "telegram:\n  allowed_chats: [\"@group\"]\n", nil,
			`config: telegram.allowed_chats: invalid id "@group" (Telegram ids are integers)`},
		{"token and file", "api:\n  token: a\n  token_file: /nonexistent\n", nil,
			`config: api.token_file: both api.token and api.token_file are set; set one`},
		{"missing token file", "telegram:\n  token_file: /nonexistent/tok\n  allowed_users: [1]\n", nil,
			`config: telegram.token_file: cannot read /nonexistent/tok: no such file or directory`},
		{"public listen without token", "api:\n  listen: 0.0.0.0:8787\n", nil,
			`config: api.token: required when api.listen (0.0.0.0:8787) is not a loopback address`},
		{"all interfaces without token", "", map[string]string{"GATEWAYD_API_LISTEN": ":8787"},
			`config: api.token: required when api.listen (:8787) is not a loopback address`},
		{"postgres without dsn", "store:\n  driver: postgres\n", nil,
			`config: store.dsn: required when store.driver is postgres (or set store.dsn_file or GATEWAYD_STORE_DSN)`},
		{"dsn without postgres", "", map[string]string{"GATEWAYD_STORE_DSN": "postgres://127.0.0.1/gw"},
			`config: store.dsn: set, but store.driver is sqlite; set store.driver: postgres to use it`},
		{"unknown driver", "store:\n  driver: mysql\n", nil, `config: store.driver: `},
		{"dsn and file", "store:\n  driver: postgres\n  dsn: a\n  dsn_file: /nonexistent\n", nil,
			`config: store.dsn_file: both store.dsn and store.dsn_file are set; set one`},
		{"scalar section", "telegram: yes\n", nil, `config: telegram: unknown key`},
		{"lease ttl zero", "cluster:\n  lease_ttl: 0s\n", nil, `config: cluster.lease_ttl: must be greater than zero, got 0s`},
		{"no discord shards", "", map[string]string{"GATEWAYD_CLUSTER_DISCORD_SHARDS": "0"},
			`config: cluster.discord_shards: must be at least 1, got 0`},
		{"node id with space", "cluster:\n  node_id: \"gw 1\"\n", nil,
			`config: cluster.node_id: must be printable, without spaces, got "gw 1"`},
		{"missing config file", "-", nil, "config: read "},
		{"bad yaml", "log: [\n", nil, "config: read "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			file := filepath.Join(dir, "missing.yaml")
			if tc.file != "-" {
				file = writeFile(t, dir, "gw.yaml", tc.file)
			}
			wantConfigError(t, file, tc.want)
		})
	}
}

// Sections left empty (every child commented out, as in an edited copy of
// the sample) and a public listen address with a token are accepted.
func TestEmptySectionsAndPublicListenWithToken(t *testing.T) {
	for _, file := range []string{
		"telegram:\ndiscord:\n",
		"lanes: {}\n",
		"api:\n  listen: 0.0.0.0:8787\n  token: s3cret\n",
		"api:\n  listen: \"[::1]:8787\"\n",
		"api:\n  listen: localhost:8787\n",
	} {
		dir := isolate(t)
		if _, err := Load(Options{File: writeFile(t, dir, "gw.yaml", file), Env: os.Environ()}); err != nil {
			t.Errorf("Load(%q): %v", file, err)
		}
	}
}

func TestSeveralErrorsAreAllReported(t *testing.T) {
	dir := isolate(t)
	_, err := Load(Options{File: writeFile(t, dir, "gw.yaml", "log:\n  level: x\n  format: y\n"), Env: os.Environ()})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, key := range []string{"log.level", "log.format"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
}

func TestNonKeyEnvIsAccepted(t *testing.T) {
	dir := isolate(t)
	t.Setenv("GATEWAYD_CODEX_BIN", "/somewhere/codex")
	t.Setenv("GATEWAYD_CPUPROFILE", "/somewhere/cpu.prof")
	t.Setenv("GATEWAYD_TRACE", "/somewhere/run.trace")
	if _, err := Load(Options{File: writeFile(t, dir, "e.yaml", ""), Env: os.Environ()}); err != nil {
		t.Fatalf("GATEWAYD_CODEX_BIN, GATEWAYD_CPUPROFILE or GATEWAYD_TRACE rejected: %v", err)
	}
}

const secret = "tok-SUPER-SECRET-123"

func TestSecretsNeverInErrors(t *testing.T) {
	tests := []struct{ name, file string }{
		{"token as map", "api:\n  token:\n    " + secret + ": 1\n"},
		{"token as list", "telegram:\n  token: [" + secret + "]\n"},
		{"token with bad neighbour", "discord:\n  token: " + secret + "\n  backfill_limit: x\n"},
		{"token without allowlist", "telegram:\n  token: " + secret + "\n"},
		{"dsn as list", "store:\n  driver: postgres\n  dsn: [postgres://u:" + secret + "@h/db]\n"},
		{"dsn without postgres", "store:\n  dsn: postgres://u:" + secret + "@h/db\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			_, err := Load(Options{File: writeFile(t, dir, "gw.yaml", tc.file), Env: os.Environ()})
			if err == nil {
				t.Fatal("want an error")
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), strings.ToLower(secret)) {
				t.Errorf("error leaks the secret: %v", err)
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	dir := isolate(t)
	file := writeFile(t, dir, "gw.yaml", "telegram:\n  token: "+secret+"\n  allowed_users: [1]\n")
	writeFile(t, dir, "dtoken", secret+"-file\n")
	t.Setenv("GATEWAYD_DISCORD_TOKEN_FILE", filepath.Join(dir, "dtoken"))
	t.Setenv("GATEWAYD_DISCORD_ALLOWED_ROLES", "r1")
	cfg, err := Load(Options{File: file, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Discord.Token != secret+"-file" {
		t.Fatalf("discord token from file = %q", cfg.Discord.Token)
	}
	for _, out := range []string{cfg.Redacted(), cfg.String(), fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg)} {
		if strings.Contains(out, secret) {
			t.Fatalf("redacted output leaks the secret:\n%s", out)
		}
		for _, line := range []string{"telegram.token: [redacted]", "discord.token: [redacted]", `api.token: ""`,
			`telegram.allowed_users: ["1"]`, "codex.turn_timeout: 30m0s"} {
			if !strings.Contains(out, line+"\n") {
				t.Errorf("output lacks %q:\n%s", line, out)
			}
		}
	}
	for _, k := range Keys() {
		if !strings.Contains(cfg.Redacted(), "\n"+k+": ") && !strings.HasPrefix(cfg.Redacted(), k+": ") {
			t.Errorf("redacted output lacks key %s", k)
		}
	}
}

func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Fatalf("os.Hostname: %v", err)
	}
	return h
}

// wantConfigError loads file (with the test's environment) and wants a
// *config.Error whose text starts with want.
func wantConfigError(t *testing.T, file, want string) {
	t.Helper()
	_, err := Load(Options{File: file, Env: os.Environ()})
	if err == nil {
		t.Fatalf("Load succeeded, want %q", want)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Errorf("error %v is not a *config.Error", err)
	}
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error:\n got %q\nwant %q", err.Error(), want)
	}
}
