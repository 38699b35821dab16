package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// projectName is what a project may be called: short, and safe to show in
// a chat, a button id and a log line.
var projectName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// dirMapKey is a map of name → absolute, existing directory: a YAML map in
// the file, "name=dir,name=dir" in the environment. Errors name the key,
// or key.NAME for one entry. Names are unique ignoring case, because chat
// commands match them that way (and viper lower-cases a file's map keys).
func dirMapKey(name string, field func(*Config) *map[string]string) key {
	return key{
		name: name, def: map[string]any{}, mapValued: true,
		decode: func(c *Config, raw any) error {
			entries, err := asMap(name, raw)
			if err != nil {
				return err
			}
			dirs, err := checkDirMap(name, entries)
			if err != nil {
				return err
			}
			*field(c) = dirs
			return nil
		},
		show: func(c *Config) string { return showMap(*field(c)) },
	}
}

// asMap accepts a YAML map of scalars or the environment's comma-separated
// "name=value" form. Empty items of the environment form are dropped.
func asMap(name string, raw any) (map[string]string, error) {
	out := map[string]string{}
	switch v := raw.(type) {
	case nil:
	case map[string]any:
		for k, val := range v {
			s, err := asString(name+"."+k, val)
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
	case string:
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			k, val, ok := strings.Cut(item, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, errorf(name, "entry %q is not name=directory", item)
			}
			if _, dup := out[k]; dup {
				return nil, errorf(name+"."+k, "given twice")
			}
			out[k] = strings.TrimSpace(val)
		}
	default:
		return nil, errorf(name, "must be a map of name: directory (or name=dir,name=dir in the environment), not %T", raw)
	}
	return out, nil
}

// checkDirMap validates every entry, in name order so the first error is
// stable, and returns the entries with cleaned directories.
func checkDirMap(name string, entries map[string]string) (map[string]string, error) {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	dirs := make(map[string]string, len(entries))
	for _, n := range names {
		if msg, ofEntry := projectProblem(dirs, n, entries[n]); msg != "" {
			if ofEntry {
				return nil, errorf(name+"."+n, "%s", msg)
			}
			return nil, errorf(name, "%s", msg)
		}
		dirs[n] = filepath.Clean(entries[n])
	}
	return dirs, nil
}

// CheckProject explains why name=dir cannot join the projects others
// (projects.NAME): the rules Load applies, for a caller that gathers
// projects one at a time (gatewayd init). dir must be absolute.
func CheckProject(others map[string]string, name, dir string) error {
	if msg, _ := projectProblem(others, name, dir); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// projectProblem is what is wrong with name=dir beside others, or "";
// ofEntry says whether the message belongs to the entry (projects.NAME)
// rather than to the map (an invalid name).
func projectProblem(others map[string]string, name, dir string) (msg string, ofEntry bool) {
	if !projectName.MatchString(name) {
		return fmt.Sprintf("invalid name %q (1-64 letters, digits, '.', '_' or '-')", name), false
	}
	for other := range others {
		if strings.EqualFold(other, name) {
			return fmt.Sprintf("differs from %q only in case; names must differ ignoring case", other), true
		}
	}
	return existingAbsDir(dir), true
}

// existingAbsDir explains why dir cannot be a working directory, or "".
func existingAbsDir(dir string) string {
	if dir == "" {
		return "needs a directory"
	}
	if !filepath.IsAbs(dir) {
		return fmt.Sprintf("%q is not an absolute path", dir)
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Sprintf("directory %q does not exist or cannot be read (%v)", dir, errorCause(err))
	case !fi.IsDir():
		return fmt.Sprintf("%q is not a directory", dir)
	}
	return ""
}

// errorCause is the system's reason without the path the message already
// names.
func errorCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func showMap(m map[string]string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ": " + strconv.Quote(m[n])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
