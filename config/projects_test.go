package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestProjects(t *testing.T) {
	dir := isolate(t)
	api, site := filepath.Join(dir, "api"), filepath.Join(dir, "site")
	for _, d := range []string{api, site} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	notDir := writeFile(t, dir, "plain", "")
	tests := []struct {
		name string
		file string // YAML
		env  string // GATEWAYD_PROJECTS
		want map[string]string
		err  string // the error's text; "" = no error
	}{
		{name: "none", want: map[string]string{}},
		{name: "empty map", file: "projects: {}\n", want: map[string]string{}},
		{name: "yaml map", file: "projects:\n  api: " + api + "\n  site: " + site + "/\n",
			want: map[string]string{"api": api, "site": site}},
		{name: "env form", env: " api=" + api + " , site=" + site + ",",
			want: map[string]string{"api": api, "site": site}},
		{name: "env keeps case", env: "API=" + api, want: map[string]string{"API": api}},
		{name: "env wins over the file", file: "projects:\n  api: " + api + "\n", env: "site=" + site,
			want: map[string]string{"site": site}},
		{name: "relative path", file: "projects:\n  api: src/api\n",
			err: `config: projects.api: "src/api" is not an absolute path`},
		{name: "missing directory", env: "api=" + filepath.Join(dir, "gone"),
			err: `config: projects.api: directory "` + filepath.Join(dir, "gone") + `" does not exist or cannot be read (no such file or directory)`},
		{name: "a file, not a directory", env: "api=" + notDir,
			err: `config: projects.api: "` + notDir + `" is not a directory`},
		{name: "empty directory", env: "api=", err: `config: projects.api: needs a directory`},
		{name: "bad name", env: "my project=" + api,
			err: `config: projects: invalid name "my project" (1-64 letters, digits, '.', '_' or '-')`},
		{name: "name too long", env: strings.Repeat("x", 65) + "=" + api,
			err: `config: projects: invalid name "` + strings.Repeat("x", 65) + `" (1-64 letters, digits, '.', '_' or '-')`},
		{name: "entry without a directory", env: "api",
			err: `config: projects: entry "api" is not name=directory`},
		{name: "name given twice", env: "api=" + api + ",api=" + site, err: `config: projects.api: given twice`},
		{name: "names differing in case", env: "API=" + api + ",api=" + site,
			err: `config: projects.api: differs from "API" only in case; names must differ ignoring case`},
		{name: "not a map", file: "projects: [a, b]\n",
			err: `config: projects: must be a map of name: directory (or name=dir,name=dir in the environment), not []interface {}`},
		{name: "nested map", file: "projects:\n  api:\n    dir: /x\n", err: `config: projects.api: must be a single value, not map[string]interface {}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("GATEWAYD_PROJECTS", tc.env)
			}
			cfg, err := Load(Options{File: writeFile(t, t.TempDir(), "gw.yaml", tc.file), Env: os.Environ()})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Load err = %v, want %q", err, tc.err)
				}
				var ce *Error
				if !errors.As(err, &ce) || !strings.HasPrefix(ce.Key, "projects") {
					t.Errorf("error %v is not a *config.Error naming projects", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !reflect.DeepEqual(cfg.Projects, tc.want) {
				t.Errorf("Projects = %v, want %v", cfg.Projects, tc.want)
			}
		})
	}
}

func TestProjectsShownInRedacted(t *testing.T) {
	dir := isolate(t)
	t.Setenv("GATEWAYD_PROJECTS", "site="+dir+",api="+dir)
	cfg, err := Load(Options{File: writeFile(t, dir, "gw.yaml", ""), Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	want := `projects: {api: "` + dir + `", site: "` + dir + `"}` + "\n"
	if !strings.Contains(cfg.Redacted(), want) {
		t.Errorf("Redacted lacks %q:\n%s", want, cfg.Redacted())
	}
}
