package config

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// WriteYAML writes a config file that sets values, keyed by key name
// ("telegram.allowed_users", "projects"), after comment, each line of which
// becomes a "# " line. Keys are written in the table's order, grouped under
// their section; each value is first checked by its key's own decoder, so
// a file that WriteYAML writes is one Load accepts key by key. Values are
// a string, []string, map[string]string (a map-valued key), bool, int or
// time.Duration. Secrets are refused: they belong in the environment file,
// not in a config that is readable by the service group.
func WriteYAML(w io.Writer, comment string, values map[string]any) error {
	for name := range values {
		if _, ok := keyNamed(name); !ok {
			return unknownKey(name)
		}
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(comment, "\n"), "\n") {
		b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
	}
	section := ""
	for _, k := range keys {
		v, ok := values[k.name]
		if !ok {
			continue
		}
		text, err := yamlValue(k, v)
		if err != nil {
			return err
		}
		sec, leaf, nested := strings.Cut(k.name, ".")
		indent := ""
		switch {
		case !nested:
			b.WriteString("\n")
			section, leaf = "", k.name
		case sec != section:
			fmt.Fprintf(&b, "\n%s:\n", sec)
			section = sec
			fallthrough
		default:
			indent = "  "
		}
		if strings.HasPrefix(text, "\n") { // a map: its entries one level deeper
			text = strings.ReplaceAll(text, "\n", "\n"+indent+"  ")
		} else {
			text = " " + text
		}
		fmt.Fprintf(&b, "%s%s:%s\n", indent, leaf, text)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func keyNamed(name string) (key, bool) {
	for _, k := range keys {
		if k.name == name {
			return k, true
		}
	}
	return key{}, false
}

// yamlValue checks v with k's decoder and spells it in YAML: strings
// double-quoted (strconv.Quote's escapes are valid YAML), a map as
// "\n"-led lines of its entries in name order.
func yamlValue(k key, v any) (string, error) {
	if k.secret {
		return "", errorf(k.name, "a secret is not written to the config file")
	}
	raw, text, err := yamlForm(v)
	if err != nil {
		return "", errorf(k.name, "%v", err)
	}
	if err := k.decode(&Config{}, raw); err != nil {
		return "", err
	}
	return text, nil
}

// yamlForm is v as the decoders read it from a file, and as YAML text.
func yamlForm(v any) (raw any, text string, err error) {
	switch v := v.(type) {
	case string:
		return v, strconv.Quote(v), nil
	case bool:
		return v, strconv.FormatBool(v), nil
	case int:
		return v, strconv.Itoa(v), nil
	case time.Duration:
		return v.String(), v.String(), nil
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = strconv.Quote(s)
		}
		return v, "[" + strings.Join(q, ", ") + "]", nil
	case map[string]string:
		names := make([]string, 0, len(v))
		m := make(map[string]any, len(v))
		for n, val := range v {
			names = append(names, n)
			m[n] = val
		}
		sort.Strings(names)
		if len(names) == 0 {
			return m, "{}", nil
		}
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "\n%s: %s", strconv.Quote(n), strconv.Quote(v[n]))
		}
		return m, b.String(), nil
	}
	return nil, "", fmt.Errorf("cannot write a %T", v)
}
