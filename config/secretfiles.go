package config

import (
	"slices"
	"strconv"
	"strings"
)

// secretFileSuffix ends the name of every key naming a file a secret is
// read from (telegram.token_file, store.dsn_file, webhooks.hooks.NAME.
// secret_file, ...).
const secretFileSuffix = "_file"

// SecretFiles are the files the configuration reads secrets from, as
// configured and once each: every set key whose name ends in _file, and
// every webhook's secret_file. Derived from the key list, so a *_file key
// added later is included without anyone remembering to (no
// lane may read them).
func (c *Config) SecretFiles() []string {
	var out []string
	add := func(p string) {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, k := range keys {
		if strings.HasSuffix(k.name, secretFileSuffix) {
			add(shownString(k, c))
		}
	}
	for _, h := range c.Webhooks.Hooks {
		add(h.SecretFile)
	}
	return out
}

// shownString is a string key's value as show quotes it; a key show does
// not quote gives its shown text (every *_file key is a string key today,
// and TestSecretFilesCoverEveryFileKey would see one that is not).
func shownString(k key, c *Config) string {
	s, err := strconv.Unquote(k.show(c))
	if err != nil {
		return k.show(c)
	}
	return s
}
