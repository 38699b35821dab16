package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // lanes.timezone names load on machines without a zone database
)

// key is one configuration key: its name (the operator interface), its
// default, and how it is decoded into and shown from a Config.
type key struct {
	name   string
	def    any
	secret bool
	// mapValued: the key holds a map whose entries are named by the
	// operator (projects.NAME); they are not unknown keys.
	mapValued bool
	decode    func(c *Config, raw any) error
	show      func(c *Config) string
}

// keys is every configuration key, in documentation order. Add at will;
// never rename (operators and scripts rely on the names).
var keys = []key{
	strKey("state_dir", "", func(c *Config) *string { return &c.StateDir }, nil),
	strKey("log.level", "info", func(c *Config) *string { return &c.Log.Level }, oneOf("debug", "info", "warn", "error")),
	strKey("log.format", "json", func(c *Config) *string { return &c.Log.Format }, oneOf("json", "console")),

	strKey("codex.command", "codex", func(c *Config) *string { return &c.Codex.Command }, nonEmpty),
	listKey("codex.args", func(c *Config) *[]string { return &c.Codex.Args }),
	strKey("codex.home", "", func(c *Config) *string { return &c.Codex.Home }, nil),
	strKey("codex.cwd", "", func(c *Config) *string { return &c.Codex.Cwd }, nil),
	strKey("codex.model", "", func(c *Config) *string { return &c.Codex.Model }, nil),
	strKey("codex.effort", "", func(c *Config) *string { return &c.Codex.Effort }, optional(effortName)),
	strKey("codex.sandbox", "workspace-write", func(c *Config) *string { return &c.Codex.Sandbox },
		oneOf("read-only", "workspace-write", "danger-full-access")),
	strKey("codex.isolation", IsolationLanes, func(c *Config) *string { return &c.Codex.Isolation }, oneOf(IsolationModes...)),
	strKey("codex.approvals", ApprovalsNever, func(c *Config) *string { return &c.Codex.Approvals }, oneOf(ApprovalModes...)),
	strKey("codex.approvers", ApproversRequester, func(c *Config) *string { return &c.Codex.Approvers }, oneOf(ApproverModes...)),
	boolKey("codex.allow_escalation", false, func(c *Config) *bool { return &c.Codex.AllowEscalation }),
	durKey("codex.approval_timeout", "10m", func(c *Config) *time.Duration { return &c.Codex.ApprovalTimeout }, positive),
	durKey("codex.question_timeout", "30m", func(c *Config) *time.Duration { return &c.Codex.QuestionTimeout }, positive),
	durKey("codex.turn_timeout", DefaultTurnTimeout.String(), func(c *Config) *time.Duration { return &c.Codex.TurnTimeout }, positive),
	durKey("codex.resume_timeout", DefaultResumeTimeout.String(), func(c *Config) *time.Duration { return &c.Codex.ResumeTimeout }, positive),
	durKey("codex.start_timeout", DefaultStartTimeout.String(), func(c *Config) *time.Duration { return &c.Codex.StartTimeout }, positive),
	intKey("codex.max_processes", DefaultCodexMaxProcesses, func(c *Config) *int { return &c.Codex.MaxProcesses }, 0),
	offSizeKey("codex.max_file_size", 4<<30, func(c *Config) *int64 { return &c.Codex.MaxFileSize }),
	dirMapKey("projects", func(c *Config) *map[string]string { return &c.Projects }),

	strKey("api.listen", "127.0.0.1:8787", func(c *Config) *string { return &c.API.Listen }, hostPort),
	secretKey("api.token", func(c *Config) *string { return &c.API.Token }),
	strKey("api.token_file", "", func(c *Config) *string { return &c.API.TokenFile }, nil),
	checkedListKey("api.allowed_hosts", func(c *Config) *[]string { return &c.API.AllowedHosts }, hostHeader),
	checkedListKey("api.allowed_origins", func(c *Config) *[]string { return &c.API.AllowedOrigins }, webOrigin),
	intKey("api.max_connections", 256, func(c *Config) *int { return &c.API.MaxConnections }, 1),
	boolKey("api.metrics_public", false, func(c *Config) *bool { return &c.API.MetricsPublic }),
	strKey("api.allow_group", "", func(c *Config) *string { return &c.API.AllowGroup }, nil),

	strKey("webhooks.listen", "", func(c *Config) *string { return &c.Webhooks.Listen }, optional(hostPort)),
	durKey("webhooks.max_age", DefaultWebhookMaxAge.String(), func(c *Config) *time.Duration { return &c.Webhooks.MaxAge }, positive),
	durKey("webhooks.replay_window", DefaultWebhookReplayWindow.String(), func(c *Config) *time.Duration { return &c.Webhooks.ReplayWindow }, positive),
	intKey("webhooks.max_connections", DefaultWebhookMaxConnections, func(c *Config) *int { return &c.Webhooks.MaxConnections }, 1),
	hookMapKey("webhooks.hooks", func(c *Config) *map[string]Hook { return &c.Webhooks.Hooks }),

	secretKey("telegram.token", func(c *Config) *string { return &c.Telegram.Token }),
	strKey("telegram.token_file", "", func(c *Config) *string { return &c.Telegram.TokenFile }, nil),
	strKey("telegram.api_url", "https://api.telegram.org", func(c *Config) *string { return &c.Telegram.APIURL }, httpURL),
	listKey("telegram.allowed_users", func(c *Config) *[]string { return &c.Telegram.AllowedUsers }),
	listKey("telegram.allowed_chats", func(c *Config) *[]string { return &c.Telegram.AllowedChats }),
	listKey("telegram.free_response_chats", func(c *Config) *[]string { return &c.Telegram.FreeResponseChats }),
	listKey("telegram.admins", func(c *Config) *[]string { return &c.Telegram.Admins }),
	durKey("telegram.poll_timeout", "30s", func(c *Config) *time.Duration { return &c.Telegram.PollTimeout }, positive),
	boolKey("telegram.draft_streaming", true, func(c *Config) *bool { return &c.Telegram.DraftStreaming }),

	secretKey("discord.token", func(c *Config) *string { return &c.Discord.Token }),
	strKey("discord.token_file", "", func(c *Config) *string { return &c.Discord.TokenFile }, nil),
	strKey("discord.api_url", "", func(c *Config) *string { return &c.Discord.APIURL }, optional(httpURL)),
	listKey("discord.allowed_users", func(c *Config) *[]string { return &c.Discord.AllowedUsers }),
	listKey("discord.allowed_roles", func(c *Config) *[]string { return &c.Discord.AllowedRoles }),
	listKey("discord.allowed_guilds", func(c *Config) *[]string { return &c.Discord.AllowedGuilds }),
	listKey("discord.allowed_channels", func(c *Config) *[]string { return &c.Discord.AllowedChannels }),
	listKey("discord.free_response_channels", func(c *Config) *[]string { return &c.Discord.FreeResponseChannels }),
	listKey("discord.admins", func(c *Config) *[]string { return &c.Discord.Admins }),
	boolKey("discord.auto_thread", false, func(c *Config) *bool { return &c.Discord.AutoThread }),
	boolKey("discord.ignore_bots", true, func(c *Config) *bool { return &c.Discord.IgnoreBots }),
	boolKey("discord.per_user_channels", false, func(c *Config) *bool { return &c.Discord.PerUserChannels }),
	intKey("discord.backfill_limit", 50, func(c *Config) *int { return &c.Discord.BackfillLimit }, 0),
	durKey("discord.backfill_max_age", "24h", func(c *Config) *time.Duration { return &c.Discord.BackfillMaxAge }, nonNegative),

	secretKey("slack.bot_token", func(c *Config) *string { return &c.Slack.BotToken }),
	strKey("slack.bot_token_file", "", func(c *Config) *string { return &c.Slack.BotTokenFile }, nil),
	secretKey("slack.app_token", func(c *Config) *string { return &c.Slack.AppToken }),
	strKey("slack.app_token_file", "", func(c *Config) *string { return &c.Slack.AppTokenFile }, nil),
	strKey("slack.api_url", DefaultSlackAPIURL, func(c *Config) *string { return &c.Slack.APIURL }, httpURL),
	listKey("slack.allowed_users", func(c *Config) *[]string { return &c.Slack.AllowedUsers }),
	listKey("slack.allowed_channels", func(c *Config) *[]string { return &c.Slack.AllowedChannels }),
	listKey("slack.admins", func(c *Config) *[]string { return &c.Slack.Admins }),

	strKey("matrix.homeserver", "", func(c *Config) *string { return &c.Matrix.Homeserver }, optional(matrixHomeserver)),
	strKey("matrix.user_id", "", func(c *Config) *string { return &c.Matrix.UserID }, nil),
	secretKey("matrix.access_token", func(c *Config) *string { return &c.Matrix.AccessToken }),
	strKey("matrix.access_token_file", "", func(c *Config) *string { return &c.Matrix.AccessTokenFile }, nil),
	listKey("matrix.allowed_users", func(c *Config) *[]string { return &c.Matrix.AllowedUsers }),
	listKey("matrix.allowed_rooms", func(c *Config) *[]string { return &c.Matrix.AllowedRooms }),
	listKey("matrix.admins", func(c *Config) *[]string { return &c.Matrix.Admins }),

	intKey("lanes.max_live", 32, func(c *Config) *int { return &c.Lanes.MaxLive }, 1),
	durKey("lanes.idle_evict", DefaultIdleEvict.String(), func(c *Config) *time.Duration { return &c.Lanes.IdleEvict }, nonNegative),
	strKey("lanes.busy_mode", BusyQueue, func(c *Config) *string { return &c.Lanes.BusyMode }, oneOf(BusyModes...)),
	rotateKey("lanes.rotate", func(c *Config) *Rotate { return &c.Lanes.Rotate }),
	fracKey("lanes.compact_at", func(c *Config) *float64 { return &c.Lanes.CompactAt }),
	intKey("lanes.queue_limit", 20, func(c *Config) *int { return &c.Lanes.QueueLimit }, 1),
	intKey("lanes.max_per_minute", 20, func(c *Config) *int { return &c.Lanes.MaxPerMinute }, 0),
	intKey("lanes.budget_tokens_per_day", 0, func(c *Config) *int { return &c.Lanes.BudgetTokensPerDay }, 0),
	// Default: 4 per CPU, at least 4, at most 64 (DefaultMaxConcurrentTurns).
	intKey("lanes.max_concurrent_turns", DefaultMaxConcurrentTurns, func(c *Config) *int { return &c.Lanes.MaxConcurrentTurns }, 1),
	boolKey("lanes.auto_retry_cut_off", false, func(c *Config) *bool { return &c.Lanes.AutoRetryCutOff }),
	boolKey("lanes.worktrees", true, func(c *Config) *bool { return &c.Lanes.Worktrees }),
	durKey("lanes.worktree_retention", "720h", func(c *Config) *time.Duration { return &c.Lanes.WorktreeRetention }, nonNegative),
	boolKey("lanes.group_context", true, func(c *Config) *bool { return &c.Lanes.GroupContext }),
	durKey("lanes.notify_after", "60s", func(c *Config) *time.Duration { return &c.Lanes.NotifyAfter }, nonNegative),
	intKey("lanes.context_messages", 30, func(c *Config) *int { return &c.Lanes.ContextMessages }, 1),
	strKey("lanes.verbose", VerboseSummary, func(c *Config) *string { return &c.Lanes.Verbose }, oneOf(VerboseModes...)),
	strKey("lanes.timezone", "", func(c *Config) *string { return &c.Lanes.Timezone }, optional(timeZone)),
	offSizeKey("lanes.disk_quota", 5<<30, func(c *Config) *int64 { return &c.Lanes.DiskQuota }),

	intKey("worktrees.pool", DefaultWorktreePool, func(c *Config) *int { return &c.Worktrees.Pool }, 0),

	durKey("schedules.min_interval", DefaultScheduleMinInterval.String(), func(c *Config) *time.Duration { return &c.Schedules.MinInterval }, positive),
	durKey("schedules.catch_up", "1h", func(c *Config) *time.Duration { return &c.Schedules.CatchUp }, nonNegative),
	intKey("schedules.max_per_lane", DefaultSchedulesPerLane, func(c *Config) *int { return &c.Schedules.MaxPerLane }, 1),

	strKey("voice.transcribe_url", "", func(c *Config) *string { return &c.Voice.TranscribeURL }, optional(httpURL)),
	secretKey("voice.api_key", func(c *Config) *string { return &c.Voice.APIKey }),
	strKey("voice.api_key_file", "", func(c *Config) *string { return &c.Voice.APIKeyFile }, nil),
	strKey("voice.model", "whisper-1", func(c *Config) *string { return &c.Voice.Model }, nonEmpty),
	durKey("voice.timeout", "60s", func(c *Config) *time.Duration { return &c.Voice.Timeout }, positive),

	sizeKey("files.max_bytes", 20<<20, func(c *Config) *int64 { return &c.Files.MaxBytes }),
	sizeKey("files.lane_quota", 1<<30, func(c *Config) *int64 { return &c.Files.LaneQuota }),
	sizeOrZeroKey("files.spool_max_bytes", func(c *Config) *int64 { return &c.Files.SpoolMaxBytes }),

	strKey("store.driver", "sqlite", func(c *Config) *string { return &c.Store.Driver }, oneOf("sqlite", "postgres")),
	secretKey("store.dsn", func(c *Config) *string { return &c.Store.DSN }),
	strKey("store.dsn_file", "", func(c *Config) *string { return &c.Store.DSNFile }, nil),

	durKey("shutdown.drain_timeout", "60s", func(c *Config) *time.Duration { return &c.Shutdown.DrainTimeout }, positive),

	strKey("cluster.node_id", "", func(c *Config) *string { return &c.Cluster.NodeID }, optional(nodeID)),
	durKey("cluster.lease_ttl", DefaultLeaseTTL.String(), func(c *Config) *time.Duration { return &c.Cluster.LeaseTTL }, positive),
	intKey("cluster.discord_shards", 1, func(c *Config) *int { return &c.Cluster.DiscordShards }, 1),
}

// timeZone checks an IANA time zone name (lanes.timezone); the zone
// database is built in, so a machine without tzdata loads it too.
func timeZone(s string) string {
	if _, err := time.LoadLocation(s); err != nil {
		return fmt.Sprintf("unknown time zone %q (use an IANA name such as Europe/Berlin)", s)
	}
	return ""
}

// nodeID checks a cluster node id: it names the node in lease rows, logs
// and `cluster status`, so it must be printable and unambiguous.
func nodeID(s string) string {
	if len(s) > 255 {
		return "must be at most 255 bytes"
	}
	if strings.TrimSpace(s) != s || strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
		return fmt.Sprintf("must be printable, without spaces, got %q", s)
	}
	return ""
}

func strKey(name, def string, field func(*Config) *string, check func(string) string) key {
	return key{
		name: name, def: def,
		decode: func(c *Config, raw any) error {
			s, err := asString(name, raw)
			if err != nil {
				return err
			}
			if check != nil {
				if msg := check(s); msg != "" {
					return errorf(name, "%s", msg)
				}
			}
			*field(c) = s
			return nil
		},
		show: func(c *Config) string { return strconv.Quote(*field(c)) },
	}
}

// secretKey is a string key whose value is never shown and never appears
// in an error message.
func secretKey(name string, field func(*Config) *string) key {
	k := strKey(name, "", field, nil)
	k.secret = true
	k.decode = func(c *Config, raw any) error {
		s, ok := raw.(string)
		if !ok {
			return errorf(name, "must be a string")
		}
		*field(c) = strings.TrimSpace(s)
		return nil
	}
	return k
}

func listKey(name string, field func(*Config) *[]string) key {
	return key{
		name: name, def: []string{},
		decode: func(c *Config, raw any) error {
			l, err := asList(name, raw)
			*field(c) = l
			return err
		},
		show: func(c *Config) string {
			quoted := make([]string, len(*field(c)))
			for i, s := range *field(c) {
				quoted[i] = strconv.Quote(s)
			}
			return "[" + strings.Join(quoted, ", ") + "]"
		},
	}
}

// checkedListKey is a list key whose every item must pass check.
func checkedListKey(name string, field func(*Config) *[]string, check func(string) string) key {
	k := listKey(name, field)
	decode := k.decode
	k.decode = func(c *Config, raw any) error {
		if err := decode(c, raw); err != nil {
			return err
		}
		for _, item := range *field(c) {
			if msg := check(item); msg != "" {
				return errorf(name, "%s", msg)
			}
		}
		return nil
	}
	return k
}

func durKey(name, def string, field func(*Config) *time.Duration, check func(time.Duration) string) key {
	return key{
		name: name, def: def,
		decode: func(c *Config, raw any) error {
			s, err := asString(name, raw)
			if err != nil {
				return err
			}
			d, err := time.ParseDuration(strings.TrimSpace(s))
			if err != nil {
				return errorf(name, "invalid duration %q (use e.g. 90s, 30m, 1h30m)", s)
			}
			if msg := check(d); msg != "" {
				return errorf(name, "%s, got %s", msg, s)
			}
			*field(c) = d
			return nil
		},
		show: func(c *Config) string { return field(c).String() },
	}
}

func intKey(name string, def int, field func(*Config) *int, minimum int) key {
	return key{
		name: name, def: def,
		decode: func(c *Config, raw any) error {
			n, err := asInt(name, raw)
			if err != nil {
				return err
			}
			if n < minimum {
				return errorf(name, "must be at least %d, got %d", minimum, n)
			}
			*field(c) = n
			return nil
		},
		show: func(c *Config) string { return strconv.Itoa(*field(c)) },
	}
}

// sizeKey is a byte count: an integer, or a string with a KiB, MiB or GiB
// suffix ("20MiB", "1 GiB"). It must be greater than zero.
func sizeKey(name string, def int64, field func(*Config) *int64) key {
	return key{
		name: name, def: def,
		decode: func(c *Config, raw any) error {
			n, err := asSize(name, raw)
			if err != nil {
				return err
			}
			if n <= 0 {
				return errorf(name, "must be greater than zero, got %d", n)
			}
			*field(c) = n
			return nil
		},
		show: func(c *Config) string { return strconv.FormatInt(*field(c), 10) },
	}
}

// sizeOrZeroKey is a size key whose 0 (its default) stands for a value
// derived from other keys where it is used.
func sizeOrZeroKey(name string, field func(*Config) *int64) key {
	k := sizeKey(name, 0, field)
	k.decode = func(c *Config, raw any) error {
		n, err := asSize(name, raw)
		if err != nil {
			return err
		}
		if n < 0 {
			return errorf(name, "must not be negative, got %d", n)
		}
		*field(c) = n
		return nil
	}
	return k
}

// offSizeKey is a size key with a default whose 0 turns the limit off.
func offSizeKey(name string, def int64, field func(*Config) *int64) key {
	k := sizeOrZeroKey(name, field)
	k.def = def
	return k
}

func asSize(name string, raw any) (int64, error) {
	switch v := raw.(type) {
	case int:
		return int64(v), nil
	case int64:
		return v, nil
	case string:
		s := strings.TrimSpace(v)
		mult := int64(1)
		for _, u := range []struct {
			suffix string
			size   int64
		}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
			if strings.HasSuffix(s, u.suffix) {
				s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.size
				break
			}
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > (1<<62)/mult {
			return 0, errorf(name, "invalid size %q (bytes, or a number with KiB, MiB or GiB)", v)
		}
		return n * mult, nil
	}
	return 0, errorf(name, "invalid size %v", raw)
}

func boolKey(name string, def bool, field func(*Config) *bool) key {
	return key{
		name: name, def: def,
		decode: func(c *Config, raw any) error {
			switch v := raw.(type) {
			case bool:
				*field(c) = v
				return nil
			case string:
				b, err := strconv.ParseBool(strings.TrimSpace(v))
				if err != nil {
					return errorf(name, "invalid boolean %q (use true or false)", v)
				}
				*field(c) = b
				return nil
			}
			return errorf(name, "invalid boolean %v (use true or false)", raw)
		},
		show: func(c *Config) string { return strconv.FormatBool(*field(c)) },
	}
}

// fracKey is a fraction strictly between 0 and 1, or 0 for off.
func fracKey(name string, field func(*Config) *float64) key {
	return key{
		name: name, def: 0.0,
		decode: func(c *Config, raw any) error {
			var f float64
			switch v := raw.(type) {
			case float64:
				f = v
			case int:
				f = float64(v)
			case string:
				var err error
				if f, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
					return errorf(name, "invalid number %q", v)
				}
			default:
				return errorf(name, "invalid number %v", raw)
			}
			if f != 0 && (f <= 0 || f >= 1) {
				return errorf(name, "must be between 0 and 1 (exclusive), or 0 for off; got %v", f)
			}
			*field(c) = f
			return nil
		},
		show: func(c *Config) string { return strconv.FormatFloat(*field(c), 'g', -1, 64) },
	}
}

func rotateKey(name string, field func(*Config) *Rotate) key {
	return key{
		name: name, def: "off",
		decode: func(c *Config, raw any) error {
			s, err := asString(name, raw)
			if err != nil {
				return err
			}
			r, err := ParseRotate(s)
			if err != nil {
				return errorf(name, "%v", err)
			}
			*field(c) = r
			return nil
		},
		show: func(c *Config) string { return strconv.Quote(field(c).String()) },
	}
}

// asString accepts scalars only; a map or list where a string belongs is an
// error naming the key.
func asString(name string, raw any) (string, error) {
	switch v := raw.(type) {
	case string:
		return v, nil
	case int, int64, float64, bool:
		return fmt.Sprint(v), nil
	case nil:
		return "", nil
	}
	return "", errorf(name, "must be a single value, not %T", raw)
}

// asList accepts a YAML list or a comma-separated string (the environment
// form). Empty items are dropped.
func asList(name string, raw any) ([]string, error) {
	var items []string
	switch v := raw.(type) {
	case []string:
		items = v
	case []any:
		for _, it := range v {
			s, err := asString(name, it)
			if err != nil {
				return nil, err
			}
			items = append(items, s)
		}
	case string:
		items = strings.Split(v, ",")
	case int, int64:
		items = []string{fmt.Sprint(v)}
	case nil:
	default:
		return nil, errorf(name, "must be a list or a comma-separated string")
	}
	out := []string{}
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out, nil
}

func asInt(name string, raw any) (int, error) {
	switch v := raw.(type) {
	case int:
		return v, nil
	case int64:
		return int(v), nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, errorf(name, "invalid integer %q", v)
		}
		return n, nil
	}
	return 0, errorf(name, "invalid integer %v", raw)
}

func oneOf(allowed ...string) func(string) string {
	return func(s string) string {
		for _, a := range allowed {
			if s == a {
				return ""
			}
		}
		return fmt.Sprintf("invalid value %q (one of %s)", s, strings.Join(allowed, ", "))
	}
}

func nonEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "must not be empty"
	}
	return ""
}

// effortName checks a reasoning effort's spelling (low, xhigh, ...): the
// values themselves are the model's (model/list), unknown here.
func effortName(s string) string {
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return fmt.Sprintf("invalid effort %q (letters only, e.g. low, medium, high)", s)
		}
	}
	return ""
}

func optional(check func(string) string) func(string) string {
	return func(s string) string {
		if s == "" {
			return ""
		}
		return check(s)
	}
}

func hostPort(s string) string {
	// An empty host means every interface: the operator's choice.
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Sprintf("invalid address %q (use host:port, e.g. 127.0.0.1:8787)", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Sprintf("invalid port in %q", s)
	}
	return ""
}

func httpURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("invalid URL %q (use http:// or https://)", s)
	}
	return ""
}

// hostHeader accepts what a Host header carries: a name or IP, optionally
// with a port ("gw.example", "gw.example:8787", "[::1]:8787").
func hostHeader(s string) string {
	u, err := url.Parse("http://" + s)
	if err != nil || u.Host != s || u.Hostname() == "" || u.User != nil || strings.ContainsAny(s, "/?#*") {
		return fmt.Sprintf("invalid host %q (use a host name or host:port, without scheme or path)", s)
	}
	return ""
}

// webOrigin accepts a browser origin: scheme://host[:port], nothing more.
func webOrigin(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" ||
		u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.Contains(s, "*") {
		return fmt.Sprintf("invalid origin %q (use scheme://host[:port], e.g. https://console.example, without a path)", s)
	}
	return ""
}

func positive(d time.Duration) string {
	if d <= 0 {
		return "must be greater than zero"
	}
	return ""
}

func nonNegative(d time.Duration) string {
	if d < 0 {
		return "must not be negative"
	}
	return ""
}
