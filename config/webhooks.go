package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"
)

// Webhooks configures the webhook listener: signed HTTP POSTs,
// from GitHub or anything that can sign a body, that start a turn in a
// lane. The listener is its own (api.listen stays on loopback): a hook's
// HMAC secret, not the API token, authenticates a delivery.
type Webhooks struct {
	Listen string // host:port; "" = no listener
	// MaxAge is how far a gatewayd-signed delivery's X-Gatewayd-Timestamp
	// may be from now, either way: an older capture is refused.
	MaxAge time.Duration
	// ReplayWindow is how long a GitHub-style body (signed alone) is
	// remembered, so the same body under a new delivery id runs nothing.
	ReplayWindow time.Duration
	// MaxConnections bounds the listener's open connections; more wait
	// in the kernel backlog.
	MaxConnections int
	// Hooks by name as configured (a file's names are read in lower case);
	// nil when there are none. The URL of one is /hooks/NAME.
	Hooks map[string]Hook
}

// Hook is one webhooks.hooks.NAME entry.
type Hook struct {
	Name       string
	Secret     string // the HMAC-SHA256 key; secret: never shown, never logged
	SecretFile string // where Secret was read from, "" when given inline
	Lane       string // the session key the deliveries run in (v1:...)
	// Template renders a delivery's decoded JSON body into the turn's text;
	// TemplateText is its source.
	Template     *template.Template
	TemplateText string
	// MaxPerMinute is how many authenticated deliveries the hook takes in
	// any minute; past it they are answered 429 and run nothing.
	MaxPerMinute int
}

// Defaults of the webhooks keys.
const (
	DefaultWebhookMaxAge         = 5 * time.Minute
	DefaultWebhookReplayWindow   = 24 * time.Hour
	DefaultWebhookMaxConnections = 128
	DefaultHookMaxPerMinute      = 30
)

// String redacts the secret, so %v of a Hook never leaks it.
func (h Hook) String() string {
	return fmt.Sprintf("{lane: %q, secret: %s, template: %q, max_per_minute: %d}", h.Lane, Redacted, h.TemplateText, h.MaxPerMinute)
}

// GoString is String, so %#v never leaks the secret either.
func (h Hook) GoString() string { return h.String() }

// hookName is what a hook may be called: it is a URL path segment, a
// metric label and part of the deliveries' ids.
var hookName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// hookFields are the keys of one hook entry.
var hookFields = []string{"secret", "secret_file", "lane", "template", "max_per_minute"}

// MaxHookTemplateOutput bounds what a hook's template may render.
const MaxHookTemplateOutput = 1 << 20

// hookMapKey is webhooks.hooks: a map of name → {secret | secret_file,
// lane, template}. In the file it is a YAML map; in the environment a JSON
// object of the same shape. Errors name webhooks.hooks.NAME.FIELD and never
// contain a secret.
func hookMapKey(name string, field func(*Config) *map[string]Hook) key {
	return key{
		name: name, def: map[string]any{}, mapValued: true,
		decode: func(c *Config, raw any) error {
			entries, err := hookEntries(name, raw)
			if err != nil {
				return err
			}
			hooks, err := decodeHooks(name, entries)
			if err != nil {
				return err
			}
			*field(c) = hooks
			return nil
		},
		show: func(c *Config) string { return showHooks(*field(c)) },
	}
}

// hookEntries turns the file's map, or the environment's JSON object, into
// name → raw entry.
func hookEntries(name string, raw any) (map[string]any, error) {
	switch v := raw.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	case string:
		s := strings.TrimSpace(v)
		if s == "" {
			return nil, nil
		}
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(s))
		// The decoder's own message may quote the text, which holds secrets.
		if !strings.HasPrefix(s, "{") || dec.Decode(&m) != nil || dec.More() {
			return nil, errorf(name, "%s must be a JSON object "+
				`{"NAME": {"secret": "...", "lane": "v1:...", "template": "..."}}, or set the hooks in the config file`,
				envName(name))
		}
		return m, nil
	}
	return nil, errorf(name, "must be a map of NAME: {secret, lane, template}, not %T", raw)
}

// decodeHooks checks every entry, in name order so the errors are stable.
func decodeHooks(name string, entries map[string]any) (map[string]Hook, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	hooks := make(map[string]Hook, len(entries))
	folded := map[string]string{}
	var errs []error
	for _, n := range names {
		if !hookName.MatchString(n) {
			errs = append(errs, errorf(name, "invalid hook name %q (1-64 letters, digits, '_' or '-')", n))
			continue
		}
		entry := name + "." + n
		if other, dup := folded[strings.ToLower(n)]; dup {
			errs = append(errs, errorf(entry, "differs from %q only in case; hook names must differ ignoring case", other))
			continue
		}
		folded[strings.ToLower(n)] = n
		h, err := decodeHook(entry, n, entries[n])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		hooks[n] = h
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return hooks, nil
}

// decodeHook reads one entry; key is webhooks.hooks.NAME.
func decodeHook(key, name string, raw any) (Hook, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		if raw == nil {
			return Hook{}, errorf(key, "needs secret (or secret_file), lane and template")
		}
		return Hook{}, errorf(key, "must be a map of secret (or secret_file), lane and template, not %T", raw)
	}
	fields := map[string]string{}
	var errs []error
	for f, v := range m {
		if !containsString(hookFields, f) {
			errs = append(errs, errorf(key+"."+f, "unknown key (a hook has %s)", strings.Join(hookFields, ", ")))
			continue
		}
		s, err := asString(key+"."+f, v) // its message names the type, never the value
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fields[f] = s
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return Hook{}, errors.Join(errs...)
	}
	h := Hook{Name: name, Secret: strings.TrimSpace(fields["secret"]), SecretFile: strings.TrimSpace(fields["secret_file"]),
		Lane: strings.TrimSpace(fields["lane"]), TemplateText: fields["template"], MaxPerMinute: DefaultHookMaxPerMinute}
	if v, ok := fields["max_per_minute"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			errs = append(errs, errorf(key+".max_per_minute", "must be a whole number of at least 1, got %q", v))
		} else {
			h.MaxPerMinute = n
		}
	}
	if err := readSecretFile(key+".secret", &h.Secret, h.SecretFile); err != nil {
		errs = append(errs, err)
	} else if h.Secret == "" {
		errs = append(errs, errorf(key+".secret", "required: the HMAC secret the sender signs deliveries with (or set secret_file)"))
	}
	if msg := sessionKeyShape(h.Lane); msg != "" {
		errs = append(errs, errorf(key+".lane", "%s", msg))
	}
	if strings.TrimSpace(h.TemplateText) == "" {
		errs = append(errs, errorf(key+".template", "required: the text of the turn, a Go template over the JSON body (e.g. \"Build {{.build}} failed\")"))
	} else if t, err := ParseHookTemplate(name, h.TemplateText); err != nil {
		errs = append(errs, errorf(key+".template", "%v", err))
	} else {
		h.Template = t
	}
	if len(errs) > 0 {
		return Hook{}, errors.Join(errs...)
	}
	return h, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sessionKeyShape checks that s looks like a session key: "v1:", a
// platform (lower-case letters), then ids of 1-128 of A-Z a-z 0-9 . _ -
// ("v1:api:ops", "v1:telegram:dm:42", "v1:discord:thread:123"). Whether
// the lane exists is known only when a delivery arrives.
func sessionKeyShape(s string) string {
	bad := fmt.Sprintf("invalid lane %q (a session key such as v1:api:NAME, v1:telegram:dm:ID or v1:discord:thread:ID)", s)
	if s == "" {
		return "required: the session key of the lane deliveries run in (e.g. v1:api:hooks)"
	}
	rest, ok := strings.CutPrefix(s, "v1:")
	if !ok {
		return bad
	}
	parts := strings.Split(rest, ":")
	if len(parts) < 2 || len(parts[0]) > 32 || strings.Trim(parts[0], "abcdefghijklmnopqrstuvwxyz") != "" || parts[0] == "" {
		return bad
	}
	for _, p := range parts[1:] {
		if p == "" || len(p) > 128 || strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != "" {
			return bad
		}
	}
	return ""
}

// ParseHookTemplate parses a hook's template with the hook functions
// (HookFuncs). A key missing from the body is an error when the template
// runs (use index for an optional one: {{with index . "key"}}...{{end}}).
func ParseHookTemplate(name, text string) (*template.Template, error) {
	return template.New(name).Funcs(HookFuncs()).Option("missingkey=error").Parse(text)
}

// HookFuncs are the functions a hook's template may call besides text/
// template's own:
//
//	json V          V as JSON
//	default D V     V, or D when V is empty (nil, "", 0, false, empty list or map)
//	truncate N V    V as text, cut to at most N characters (a cut one ends with …)
func HookFuncs() template.FuncMap {
	return template.FuncMap{
		"json": func(v any) (string, error) {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				return "", err
			}
			return strings.TrimSuffix(b.String(), "\n"), nil
		},
		"default": func(def, v any) any {
			if isEmptyValue(v) {
				return def
			}
			return v
		},
		"truncate": func(length, v any) (string, error) {
			n, err := wholeNumber(length)
			if err != nil {
				return "", fmt.Errorf("truncate: %w", err)
			}
			s := ""
			if v != nil {
				s = fmt.Sprint(v)
			}
			if utf8.RuneCountInString(s) <= n {
				return s, nil
			}
			if n == 0 {
				return "", nil
			}
			r := []rune(s)
			return string(r[:n-1]) + "…", nil
		},
	}
}

// wholeNumber is a non-negative length given in the template (an int) or
// taken from the body (a json.Number).
func wholeNumber(v any) (int, error) {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case json.Number:
		i, err := x.Int64()
		if err != nil {
			return 0, fmt.Errorf("length %q is not a whole number", x.String())
		}
		n = i
	default:
		return 0, fmt.Errorf("length %#v is not a whole number", v)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative length %d", n)
	}
	if n > math.MaxInt32 {
		n = math.MaxInt32
	}
	return int(n), nil
}

func isEmptyValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case float64:
		return x == 0
	case int:
		return x == 0
	case int64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// showHooks prints the hooks in name order, secrets redacted.
func showHooks(hooks map[string]Hook) string {
	names := make([]string, 0, len(hooks))
	for n := range hooks {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		h := hooks[n]
		secret := "secret: " + Redacted
		if h.SecretFile != "" {
			secret = "secret_file: " + strconv.Quote(h.SecretFile)
		}
		parts[i] = fmt.Sprintf("%s: {lane: %q, %s, template: %q, max_per_minute: %d}", n, h.Lane, secret, h.TemplateText, h.MaxPerMinute)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
