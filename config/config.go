// Package config loads gatewayd's configuration: one typed Config from a
// YAML file plus GATEWAYD_* environment variables, validated with messages
// that name the offending key and printable with secrets redacted.
//
// Key names are an interface: operators and scripts rely on them. Keys may
// be added, never renamed. In the environment a key is spelled with the
// GATEWAYD_ prefix, upper case, dots as underscores
// (codex.turn_timeout → GATEWAYD_CODEX_TURN_TIMEOUT); list values are
// comma-separated there.
//
// Every default lives once, in the key table (keys.go); defaults.go states
// the one convention for "never": a zero value, as the keys document it.
package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"
)

// EnvPrefix is the prefix of every environment variable that sets a key.
const EnvPrefix = "GATEWAYD"

// EnvConfigFile names the config file when --config is not given.
const EnvConfigFile = "GATEWAYD_CONFIG"

// nonKeyEnv are GATEWAYD_* variables that are not configuration keys and so
// must not be reported as unknown keys.
var nonKeyEnv = map[string]bool{
	EnvConfigFile:         true,
	"GATEWAYD_CODEX_BIN":  true, // the test suites' codex binary (codextest)
	"GATEWAYD_TEST_STORE": true, // the store suite's backend (store/helpers_test.go)
	"GATEWAYD_CPUPROFILE": true, // a developer's profiling hook (cmd/gatewayd/profile.go)
	"GATEWAYD_TRACE":      true, // a developer's execution-trace hook (cmd/gatewayd/profile.go)
	// marks the one re-execution that raises the timer slack (cmd/gatewayd/timerslack.go)
	"GATEWAYD_TIMER_SLACK_RAISED": true,
}

// Redacted replaces a secret that is set whenever the config is printed.
const Redacted = "[redacted]"

// Config is the whole daemon configuration after defaults, file and
// environment were merged and validated.
type Config struct {
	// File is the config file that was read, "" when none was.
	File     string
	StateDir string
	Log      Log
	Codex    Codex
	API      API
	// Webhooks is the signed-POST listener that starts turns.
	Webhooks Webhooks
	Telegram Telegram
	Discord  Discord
	Slack    Slack
	Matrix   Matrix
	Lanes    Lanes
	// Worktrees tunes the lanes' git worktrees.
	Worktrees Worktrees
	Shutdown  Shutdown
	Files     Files
	Voice     Voice
	// Schedules bounds /at and /every.
	Schedules Schedules
	Cluster   Cluster
	Store     Store
	// Projects maps a project name to its absolute, existing directory: the
	// working directories a lane may choose with /project (codex.cwd is
	// the one for lanes without a project). Never nil.
	Projects map[string]string
}

// Log configures the zap logger.
type Log struct {
	Level  string // debug | info | warn | error
	Format string // json | console
}

// Codex configures the app-server process and the threads it runs.
type Codex struct {
	Command string   // binary or npm launcher; a bare name is looked up on PATH
	Args    []string // extra arguments after "app-server"
	Home    string   // CODEX_HOME; "" inherits the user's own
	Cwd     string   // working directory of threads; "" = <state_dir>/workspace
	Model   string   // "" = codex's default
	Effort  string   // reasoning effort of lanes that chose none; "" = the model's (only the spelling is checked)
	Sandbox string   // read-only | workspace-write | danger-full-access
	// Isolation confines each lane's commands and file tools to its own
	// directories (lanes) or leaves them the daemon user's view (none).
	Isolation string
	Approvals string // never | chat
	// Approvers decides who answers a chat approval in a shared room:
	// requester (who started the turn, or an admin) | anyone allowed.
	Approvers     string
	TurnTimeout   time.Duration
	ResumeTimeout time.Duration
	StartTimeout  time.Duration
	// MaxProcesses and MaxFileSize are the app-server's RLIMIT_NPROC and
	// RLIMIT_FSIZE, inherited by every command it runs; 0 = unlimited.
	MaxProcesses int
	MaxFileSize  int64

	// ApprovalTimeout declines a chat approval nobody answered: codex has
	// no timeout of its own, so the turn would wait forever.
	ApprovalTimeout time.Duration
	// AllowEscalation lets an admin approve, once, a request that widens
	// a lane's boundary (run outside the sandbox, write under a root
	// outside the lane's); false declines every such request.
	AllowEscalation bool
	// QuestionTimeout gives up a question Codex asked (Plan mode's
	// request_user_input) that nobody answered; Codex goes on without it.
	QuestionTimeout time.Duration
}

// IsolatesLanes reports whether each lane's commands are confined to its
// own directories: codex.isolation is lanes and the sandbox is one that
// confines at all (danger-full-access confines nothing, so nothing is
// isolated under it).
func (c Codex) IsolatesLanes() bool {
	return c.Isolation == IsolationLanes && c.Sandbox != "danger-full-access"
}

// API configures the local HTTP listener (API lane, /healthz, /metrics).
type API struct {
	Listen    string
	Token     string // bearer token; "" = no auth (listen on loopback only then)
	TokenFile string
	// AllowedHosts are Host header values accepted besides the listen
	// address and the loopback names (DNS rebinding defence): "name" for
	// any port, "name:port" for that port only.
	AllowedHosts []string
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed to
	// call /api/; other cross-origin requests are refused.
	AllowedOrigins []string
	MaxConnections int // concurrent connections served; more wait to be accepted
	// MetricsPublic serves /metrics without Token (a scraper that cannot
	// send it); by default /metrics needs the token whenever one is set.
	MetricsPublic bool
	// AllowGroup names a group whose members may use the loopback API
	// without Token, besides the daemon's own user and root; "" = none.
	AllowGroup string
}

// Telegram configures the Telegram adapter; enabled when Token is set.
type Telegram struct {
	Token             string
	TokenFile         string
	APIURL            string
	AllowedUsers      []string
	AllowedChats      []string
	FreeResponseChats []string // chats (or chat:topic) answered without a mention
	Admins            []string // user ids who may decide any approval (codex.approvers)
	PollTimeout       time.Duration
	DraftStreaming    bool // a private chat's preview streams as a draft (sendMessageDraft)
}

// Enabled reports whether the adapter should run.
func (t Telegram) Enabled() bool { return t.Token != "" }

// Discord configures the Discord adapter; enabled when Token is set.
type Discord struct {
	Token                string
	TokenFile            string
	APIURL               string // "" = discordgo's default endpoints
	AllowedUsers         []string
	AllowedRoles         []string
	AllowedGuilds        []string
	AllowedChannels      []string
	FreeResponseChannels []string
	Admins               []string // user ids who may decide any approval (codex.approvers)
	AutoThread           bool
	IgnoreBots           bool
	PerUserChannels      bool
	BackfillLimit        int           // messages fetched per lane after downtime
	BackfillMaxAge       time.Duration // older messages are not fetched
}

// Enabled reports whether the adapter should run.
func (d Discord) Enabled() bool { return d.Token != "" }

// Lanes configures the gateway's lanes.
type Lanes struct {
	MaxLive      int           // live codex threads kept loaded
	IdleEvict    time.Duration // 0 = never evict for idleness
	BusyMode     string        // queue | interrupt | steer
	Rotate       Rotate
	CompactAt    float64 // context fraction that triggers compaction; 0 = off
	QueueLimit   int     // queued messages per lane
	MaxPerMinute int     // messages per sender per lane per minute; 0 = no limit
	// BudgetTokensPerDay is the tokens a lane's turns may spend a day
	// (its days begin at midnight in Timezone, else UTC); past it the
	// lane's messages wait for the next day. 0 = off.
	BudgetTokensPerDay int
	MaxConcurrentTurns int
	AutoRetryCutOff    bool // re-run a turn cut off by a crash instead of only telling the lane
	// Worktrees gives each lane on a git project a worktree of its own
	// under <state_dir>/worktrees (WorktreesDir); false: lanes work in the
	// project's checkout.
	Worktrees bool
	// WorktreeRetention is how long the worktree of a lane that is gone
	// (forgotten by the store) or idle is kept: then its worktree and the
	// project's branch for it are removed (gatewayd worktrees prune does
	// it at once). 0 keeps them for good.
	WorktreeRetention time.Duration
	// Verbose is the work view of lanes that chose none with /verbose:
	// off | summary | full.
	Verbose string
	// GroupContext keeps what allowed members say in a shared room
	// without addressing the bot, for its next addressed turn there.
	GroupContext bool
	// ContextMessages bounds how many of those messages a turn carries.
	ContextMessages int
	// NotifyAfter: a turn that ran longer ends with a new message that
	// notifies its requester (not an edit of the streamed preview, which
	// notifies nobody); 0: never.
	NotifyAfter time.Duration
	// DiskQuota bounds what a lane keeps in its own directories (working
	// directory, worktrees, tmp, files); a lane over it is refused turns.
	// 0 = off.
	DiskQuota int64
	// Timezone is the IANA zone schedules read times in, for lanes that
	// chose none with /tz; "" is the machine's.
	Timezone string
}

// Worktrees tunes how lanes' git worktrees (lanes.worktrees) are made.
type Worktrees struct {
	// Pool is how many ready worktrees of each project are kept checked
	// out in the background, so a new lane or a /fork takes one instead
	// of waiting for a checkout; 0: off.
	Pool int
}

// DefaultWorktreePool keeps one ready worktree per project: enough for
// the usual one new lane at a time, at the disk cost of one checkout.
const DefaultWorktreePool = 1

// Schedules bounds the prompts lanes schedule with /at and /every.
type Schedules struct {
	MinInterval time.Duration // a recurring schedule fires at most this often
	// CatchUp: a firing missed while gatewayd was down runs at start when
	// it is younger than this, else it is skipped and the lane told.
	CatchUp    time.Duration
	MaxPerLane int
}

// Voice configures transcription of voice notes and audio before a turn:
// an OpenAI-compatible /v1/audio/transcriptions endpoint (OpenAI itself, a
// local whisper server). Off while TranscribeURL is empty.
type Voice struct {
	TranscribeURL string // the endpoint's full URL
	APIKey        string // sent as the bearer token; "" sends none
	APIKeyFile    string
	Model         string        // the model field of the request
	Timeout       time.Duration // one transcription, then the audio goes as a file
}

// Files bounds the attachments kept under <state_dir>/files (FilesDir) and
// the uploads spooled under <state_dir>/spool (SpoolDir).
type Files struct {
	MaxBytes  int64 // one file; larger ones are refused with a reply naming the limit
	LaneQuota int64 // one lane's stored files, out copies included; the oldest are pruned past it
	// SpoolMaxBytes bounds the API uploads spooled at once over all
	// requests; 0 is 4 × 16 × MaxBytes (four requests of 16 files each at
	// the limit).
	SpoolMaxBytes int64
}

// Cluster configures this node of a several-node deployment. Not yet wired
// into the daemon: the cluster package's leases and placement read it once
// lanes move between nodes.
type Cluster struct {
	NodeID        string        // "" in the file = the hostname
	LeaseTTL      time.Duration // how long a silent node keeps its lanes
	DiscordShards int           // Discord gateway shards over all nodes; 1 = unsharded
}

// DefaultLeaseTTL is cluster.lease_ttl's default.
const DefaultLeaseTTL = 15 * time.Second

// Store selects the store's backend. SQLite (a file under state_dir) is the
// default; PostgreSQL is for several nodes sharing one database.
type Store struct {
	Driver  string // "sqlite" or "postgres"
	DSN     string // PostgreSQL's connection string: a secret (it may carry a password)
	DSNFile string
}

// Postgres reports whether the store is on PostgreSQL.
func (s Store) Postgres() bool { return s.Driver == "postgres" }

// Shutdown configures the stop sequence.
type Shutdown struct {
	// DrainTimeout bounds how long running turns may finish after SIGTERM.
	// The systemd unit's TimeoutStopSec must stay above it.
	DrainTimeout time.Duration
}

// Error is a configuration error; its message names the key. Callers map
// it to exit code 2.
type Error struct {
	Key string
	Msg string
}

func (e *Error) Error() string {
	if e.Key == "" {
		return "config: " + e.Msg
	}
	return "config: " + e.Key + ": " + e.Msg
}

func errorf(key, format string, args ...any) *Error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Options say where configuration comes from.
type Options struct {
	// File is the --config flag. "" falls back to $GATEWAYD_CONFIG, then
	// to the first existing DefaultFiles entry, then to no file at all.
	File string
	// Env is the environment in os.Environ's form: its GATEWAYD_* variables
	// set keys (over the file); GATEWAYD_CONFIG, STATE_DIRECTORY,
	// XDG_STATE_HOME, XDG_CONFIG_HOME and HOME choose files and state_dir.
	// Load reads no other environment, so a caller (gatewayd init) can
	// load a config with the tokens the service will have, without
	// setting them in its own process.
	Env []string
}

// DefaultFiles lists the files tried, in order, when no file is named: the
// user's config directory (XDG_CONFIG_HOME, else HOME/.config, in env),
// then /etc.
func DefaultFiles(env []string) []string {
	var files []string
	if dir := userConfigDir(lookupEnv(env)); dir != "" {
		files = append(files, filepath.Join(dir, "gatewayd", "gatewayd.yaml"))
	}
	return append(files, "/etc/gatewayd/gatewayd.yaml")
}

// userConfigDir is os.UserConfigDir read from env: "" where it fails.
func userConfigDir(env func(string) string) string {
	home := env("HOME")
	switch xdg := env("XDG_CONFIG_HOME"); {
	case runtime.GOOS == "darwin" && home != "":
		return filepath.Join(home, "Library", "Application Support")
	case runtime.GOOS == "darwin":
		return ""
	case xdg != "":
		if !filepath.IsAbs(xdg) {
			return ""
		}
		return xdg
	case home != "":
		return filepath.Join(home, ".config")
	}
	return ""
}

// lookupEnv returns the value of a variable of env ("" when unset); the
// first entry of a name wins, as in os.Getenv.
func lookupEnv(env []string) func(string) string {
	vars := make(map[string]string, len(env))
	for _, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if _, seen := vars[name]; ok && !seen {
			vars[name] = val
		}
	}
	return func(name string) string { return vars[name] }
}

// Load reads, merges and validates the configuration. Every error it
// returns is (or joins) *Error values.
func Load(opts Options) (*Config, error) {
	env := lookupEnv(opts.Env)
	file, err := chooseFile(opts.File, opts.Env)
	if err != nil {
		return nil, err
	}
	v := viper.New()
	for _, k := range keys {
		// A default for every key lists it in AllKeys even when the file
		// does not mention it.
		v.SetDefault(k.name, k.def)
	}
	if file != "" {
		v.SetConfigFile(file)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return nil, &Error{Msg: fmt.Sprintf("read %s: %v", file, err)}
		}
	}
	for _, k := range keys {
		// The environment wins over the file; an empty variable is unset
		// (as viper's AutomaticEnv read it).
		if val := env(envName(k.name)); val != "" {
			v.Set(k.name, val)
		}
	}
	if err := unknownKeys(v.AllKeys(), opts.Env, func(key string) bool { return isMapOrNil(v.Get(key)) }); err != nil {
		return nil, err
	}
	cfg := &Config{File: file}
	var errs []error
	for _, k := range keys {
		if err := k.decode(cfg, v.Get(k.name)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, cfg.resolve(env)...)
	}
	if len(errs) == 0 {
		errs = append(errs, cfg.validate()...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cfg, nil
}

func chooseFile(flag string, env []string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if f := lookupEnv(env)(EnvConfigFile); f != "" {
		return f, nil
	}
	for _, f := range DefaultFiles(env) {
		if _, err := os.Stat(f); err == nil {
			return f, nil
		}
	}
	return "", nil
}

// unknownKeys rejects file keys and GATEWAYD_* variables that name no key,
// so a typo stops start-up instead of being silently ignored.
func unknownKeys(all []string, environ []string, section func(key string) bool) error {
	known := make(map[string]bool, len(keys))
	envKnown := make(map[string]bool, len(keys))
	mapValued := map[string]bool{}
	for _, k := range keys {
		known[k.name] = true
		envKnown[envName(k.name)] = true
		mapValued[k.name] = k.mapValued
	}
	var errs []error
	reported := map[string]bool{}
	for _, key := range all {
		if known[key] || mapValued[knownParent(key, known)] {
			continue // a map-valued key's entries are checked by its decoder
		}
		// "telegram:" with every child commented out (the natural edit of
		// the sample file) is an empty section, not an unknown key; its
		// children, if any, are checked on their own.
		if isSection(key, known) && section(key) {
			continue
		}
		// A map under a known key ("log.level: {a: b}") is reported at the
		// known key, which also keeps a secret written as a map key out of
		// the message.
		if parent := knownParent(key, known); parent != "" {
			if !reported[parent] {
				reported[parent] = true
				errs = append(errs, errorf(parent, "must be a single value or list, not a map"))
			}
			continue
		}
		errs = append(errs, unknownKey(key))
	}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") || nonKeyEnv[name] || envKnown[name] {
			continue
		}
		errs = append(errs, errorf(name, "environment variable names no configuration key"))
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// unknownKey names the key it refuses; a key YAML reads as empty ("!0 :")
// is shown quoted so the message still points at something.
func unknownKey(key string) *Error {
	if key == "" {
		return errorf(`""`, "unknown key (an empty key name)")
	}
	return errorf(key, "unknown key")
}

// knownParent returns the known key that key is nested under, or "".
// isSection reports whether key is the parent of known keys ("telegram").
func isSection(key string, known map[string]bool) bool {
	for k := range known {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// isMapOrNil reports a value that can stand for a section: null (every
// child commented out) or a map.
func isMapOrNil(v any) bool {
	switch v.(type) {
	case nil, map[string]any:
		return true
	}
	return false
}

func knownParent(key string, known map[string]bool) string {
	for i := strings.LastIndexByte(key, '.'); i > 0; i = strings.LastIndexByte(key[:i], '.') {
		if known[key[:i]] {
			return key[:i]
		}
	}
	return ""
}

// envName is the environment variable that sets key.
func envName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// resolve fills values derived from other keys and reads secret files.
func (c *Config) resolve(env func(string) string) []error {
	var errs []error
	if c.StateDir == "" {
		dir, err := defaultStateDir(env)
		if err != nil {
			return []error{errorf("state_dir", "not set and %v", err)}
		}
		c.StateDir = dir
	}
	if c.Codex.Cwd == "" {
		c.Codex.Cwd = filepath.Join(c.StateDir, "workspace")
	}
	if c.Cluster.NodeID == "" {
		host, err := os.Hostname()
		if err != nil || nodeID(host) != "" {
			errs = append(errs, errorf("cluster.node_id", "not set and the hostname %q cannot be used (%v)", host, err))
		} else {
			c.Cluster.NodeID = host
		}
	}
	secrets := []struct {
		key       string
		token     *string
		tokenFile string
	}{
		{"api.token", &c.API.Token, c.API.TokenFile},
		{"telegram.token", &c.Telegram.Token, c.Telegram.TokenFile},
		{"discord.token", &c.Discord.Token, c.Discord.TokenFile},
		{"slack.bot_token", &c.Slack.BotToken, c.Slack.BotTokenFile},
		{"slack.app_token", &c.Slack.AppToken, c.Slack.AppTokenFile},
		{"matrix.access_token", &c.Matrix.AccessToken, c.Matrix.AccessTokenFile},
		{"store.dsn", &c.Store.DSN, c.Store.DSNFile},
		{"voice.api_key", &c.Voice.APIKey, c.Voice.APIKeyFile},
	}
	for _, s := range secrets {
		if err := readSecretFile(s.key, s.token, s.tokenFile); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// readSecretFile loads key from file when key_file is set. The error never
// contains the file's content.
func readSecretFile(key string, token *string, file string) error {
	if file == "" {
		return nil
	}
	if *token != "" {
		return errorf(key+"_file", "both %s and %s_file are set; set one", key, key)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return errorf(key+"_file", "cannot read %s: %v", file, pe.Err)
		}
		return errorf(key+"_file", "cannot read %s", file)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return errorf(key+"_file", "%s is empty", file)
	}
	*token = secret
	return nil
}

// defaultStateDir follows systemd's StateDirectory= first, then the XDG
// base directory spec.
func defaultStateDir(env func(string) string) (string, error) {
	if sd := env("STATE_DIRECTORY"); sd != "" {
		// systemd joins several state directories with ':'; ours is the first.
		first, _, _ := strings.Cut(sd, ":")
		return first, nil
	}
	if xdg := env("XDG_STATE_HOME"); xdg != "" && filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "gatewayd"), nil
	}
	home := env("HOME")
	if home == "" {
		return "", errors.New("no home directory to derive it from")
	}
	return filepath.Join(home, ".local", "state", "gatewayd"), nil
}

// validate checks rules that span keys ("required when").
func (c *Config) validate() []error {
	var errs []error
	if c.Telegram.Enabled() && len(c.Telegram.AllowedUsers) == 0 && len(c.Telegram.AllowedChats) == 0 {
		errs = append(errs, errorf("telegram.allowed_users",
			"required when telegram.token is set (or set telegram.allowed_chats)"))
	}
	for key, ids := range map[string][]string{
		"telegram.allowed_users": c.Telegram.AllowedUsers,
		"telegram.allowed_chats": c.Telegram.AllowedChats,
	} {
		for _, id := range ids {
			if _, err := strconv.ParseInt(id, 10, 64); err != nil {
				errs = append(errs, errorf(key, "invalid id %q (Telegram ids are integers)", id))
				break
			}
		}
	}
	if c.Discord.Enabled() && len(c.Discord.AllowedUsers) == 0 && len(c.Discord.AllowedRoles) == 0 {
		errs = append(errs, errorf("discord.allowed_users",
			"required when discord.token is set (or set discord.allowed_roles)"))
	}
	errs = append(errs, c.validateSlack()...)
	errs = append(errs, c.validateMatrix()...)
	if c.Store.Postgres() && c.Store.DSN == "" {
		errs = append(errs, errorf("store.dsn",
			"required when store.driver is postgres (or set store.dsn_file or GATEWAYD_STORE_DSN)"))
	}
	if !c.Store.Postgres() && c.Store.DSN != "" {
		errs = append(errs, errorf("store.dsn", "set, but store.driver is %s; set store.driver: postgres to use it", c.Store.Driver))
	}
	if c.API.Token == "" && !loopbackListen(c.API.Listen) {
		errs = append(errs, errorf("api.token",
			"required when api.listen (%s) is not a loopback address: the API runs Codex for whoever reaches it", c.API.Listen))
	}
	return errs
}

// loopbackListen reports whether a listen address binds only loopback.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// DatabasePath is where the store lives.
func (c *Config) DatabasePath() string { return filepath.Join(c.StateDir, "gatewayd.db") }

// FilesDir is where received attachments are stored: <state_dir>/files.
func (c *Config) FilesDir() string { return filepath.Join(c.StateDir, "files") }

// WorktreesDir holds the lanes' git worktrees (lanes.worktrees).
func (c *Config) WorktreesDir() string { return filepath.Join(c.StateDir, "worktrees") }

// SpoolDir is where uploads wait while they are accepted: <state_dir>/spool,
// on the state directory's disk and out of /tmp, which may be small, shared
// or RAM.
func (c *Config) SpoolDir() string { return filepath.Join(c.StateDir, "spool") }

// RepliesDir holds the turns whose commit was waiting for the database,
// until they are committed (gateway/replyspool).
func (c *Config) RepliesDir() string { return filepath.Join(c.StateDir, "replies") }

// Redacted returns the effective configuration as "key: value" lines in
// key order, secrets replaced by [redacted] when set.
func (c *Config) Redacted() string {
	var b strings.Builder
	if c.File != "" {
		fmt.Fprintf(&b, "# file: %s\n", c.File)
	}
	for _, k := range keys {
		val := k.show(c)
		if k.secret && val != `""` {
			val = Redacted
		}
		fmt.Fprintf(&b, "%s: %s\n", k.name, val)
	}
	return b.String()
}

// String is Redacted, so %v never leaks a token.
func (c *Config) String() string { return c.Redacted() }

// GoString is Redacted too, so %#v never leaks a token either.
func (c *Config) GoString() string { return c.Redacted() }

// Keys lists every configuration key in documentation order.
func Keys() []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	return names
}

// EnvName is the environment variable that sets key.
func EnvName(key string) string { return envName(key) }
