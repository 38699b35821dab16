package config

import (
	"slices"
	"strings"
	"testing"
)

// TestSecretFilesCoverEveryFileKey: every key whose name ends
// in _file, and every field of a webhook entry that does, is among
// SecretFiles once set — so DeniedToLanes, built from it, cannot forget
// one added later.
func TestSecretFilesCoverEveryFileKey(t *testing.T) {
	n := 0
	for _, k := range keys {
		if !strings.HasSuffix(k.name, "_file") {
			continue
		}
		n++
		c := &Config{}
		path := "/secrets/" + k.name
		if err := k.decode(c, path); err != nil {
			t.Fatalf("decode %s: %v", k.name, err)
		}
		if got := c.SecretFiles(); !slices.Equal(got, []string{path}) {
			t.Errorf("with %s set, SecretFiles = %q; want [%s]", k.name, got, path)
		}
	}
	if n < 5 {
		t.Errorf("found %d *_file keys; the token, DSN and API key files are 5", n)
	}
	for _, field := range hookFields {
		if !strings.HasSuffix(field, "_file") {
			continue
		}
		if field != "secret_file" {
			t.Errorf("webhooks.hooks.NAME.%s is a file SecretFiles does not know", field)
		}
	}
	c := &Config{Webhooks: Webhooks{Hooks: map[string]Hook{"ci": {Name: "ci", SecretFile: "/secrets/ci"}}}}
	if got := c.SecretFiles(); !slices.Equal(got, []string{"/secrets/ci"}) {
		t.Errorf("with a webhook's secret_file, SecretFiles = %q", got)
	}
}
