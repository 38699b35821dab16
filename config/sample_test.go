package config

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/spf13/viper"
)

// The sample deploy/gatewayd.yaml documents every key with its default.
func TestSampleConfigShowsEveryKeyWithItsDefault(t *testing.T) {
	const sample = "../deploy/gatewayd.yaml"
	dir := isolate(t)
	got, err := Load(Options{File: sample, Env: os.Environ()})
	if err != nil {
		t.Fatalf("the sample does not load: %v", err)
	}
	want, err := Load(Options{File: writeFile(t, dir, "empty.yaml", ""), Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	got.File, want.File = "", ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the sample's values differ from the defaults:\n got %+v\nwant %+v", got, want)
	}

	v := viper.New()
	v.SetConfigFile(filepath.Clean(sample))
	if err := v.ReadInConfig(); err != nil {
		t.Fatal(err)
	}
	inFile := map[string]bool{}
	for _, k := range v.AllKeys() {
		inFile[k] = true
	}
	var missing []string
	for _, k := range Keys() {
		// state_dir's and lanes.max_concurrent_turns's defaults are
		// computed: shown commented out. An empty
		// map (projects: {}) has no leaves for AllKeys, so it is looked up.
		if !inFile[k] && !v.InConfig(k) && k != "state_dir" && k != "lanes.max_concurrent_turns" {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the sample lacks keys %q", missing)
	}
}
