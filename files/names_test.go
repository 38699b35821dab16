package files

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSanitizeName(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct {
		name, in, want string
	}{
		{"plain", "report.pdf", "report.pdf"},
		{"spaces kept", "my report v2.pdf", "my report v2.pdf"},
		{"unicode kept", "résumé 履歴書.pdf", "résumé 履歴書.pdf"},
		{"parent traversal", "../x", "x"},
		{"deep traversal", "../../../../etc/passwd", "passwd"},
		{"absolute", "/etc/passwd", "passwd"},
		{"both separators", `a/b\c`, "c"},
		{"windows path", `C:\Users\me\photo.jpg`, "photo.jpg"},
		{"trailing separator", "dir/", "file"},
		{"NUL", "a\x00b.txt", "ab.txt"},
		{"controls", "a\nb\rc\td\x1b[31m.txt", "abcd[31m.txt"},
		{"DEL and C1", "a\x7fb\u0085c.txt", "abc.txt"},
		{"RTL override hides exe", "invoice\u202egpj.exe", "invoicegpj.exe"},
		{"bidi isolates and marks", "\u2066a\u2069\u200e\u200f\u061c.txt", "a.txt"},
		{"zero width", "a\u200bb\ufeff.txt", "ab.txt"},
		{"line separator", "a\u2028b.txt", "ab.txt"},
		{"invalid UTF-8", "a\xff\xfeb.txt", "ab.txt"},
		{"empty", "", "file"},
		{"dot", ".", "file"},
		{"dot dot", "..", "file"},
		{"only dots", ".....", "file"},
		{"only spaces", "   ", "file"},
		{"only controls", "\x00\x01\u202e", "file"},
		{"dotfile keeps extension", ".bashrc", "file.bashrc"},
		{"extension only", ".png", "file.png"},
		{"traversal to extension only", "../.png", "file.png"},
		{"leading dash", "-rf", "rf"},
		{"leading dash dot space", " -.-x.txt", "x.txt"},
		{"trailing dots and spaces", "name.txt. . ", "name.txt"},
		{"dots before extension", "name...txt", "name.txt"},
		{"windows reserved kept", "CON", "CON"},
		{"windows reserved with extension", "aux.txt", "aux.txt"},
		{"double extension", "archive.tar.gz", "archive.tar.gz"},
		{"not an extension: space", "notes.final version", "notes.final version"},
		{"not an extension: too long", "a." + strings.Repeat("b", 17), "a." + strings.Repeat("b", 17)},
		{"long cut to 255", long, long[:255]},
		{"long keeps extension", long + ".jpeg", long[:250] + ".jpeg"},
		{"long multibyte cut on boundary", strings.Repeat("é", 200), strings.Repeat("é", 127)},
		{"cut exposes extension", strings.Repeat("a", 251) + " .x y" + long, strings.Repeat("a", 251) + ".x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SanitizeName(tt.in)
			if got != tt.want {
				t.Errorf("SanitizeName(%q) = %q, want %q", tt.in, got, tt.want)
			}
			checkSanitized(t, tt.in, got)
		})
	}
}

func FuzzSanitizeName(f *testing.F) {
	// The seeds in testdata/fuzz/FuzzSanitizeName are the hostile names
	// above; these few keep the target useful without them.
	for _, seed := range []string{"report.pdf", "../x", "\u202e.png", strings.Repeat("é", 200)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkSanitized(t, in, SanitizeName(in))
	})
}

// checkSanitized asserts what every sanitised name promises.
func checkSanitized(t *testing.T, in, got string) {
	t.Helper()
	switch {
	case got == "" || got == "." || got == "..":
		t.Fatalf("SanitizeName(%q) = %q: empty or a dot name", in, got)
	case !utf8.ValidString(got):
		t.Fatalf("SanitizeName(%q) = %q: invalid UTF-8", in, got)
	case len(got) > maxNameBytes:
		t.Fatalf("SanitizeName(%q) is %d bytes, over %d", in, len(got), maxNameBytes)
	case strings.ContainsAny(got, `/\`):
		t.Fatalf("SanitizeName(%q) = %q: holds a separator", in, got)
	case strings.HasPrefix(got, "-") || strings.HasPrefix(got, "."):
		t.Fatalf("SanitizeName(%q) = %q: starts with - or .", in, got)
	}
	for _, r := range got {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Bidi_Control, r) {
			t.Fatalf("SanitizeName(%q) = %q: holds %U", in, got, r)
		}
	}
	if again := SanitizeName(got); again != got {
		t.Fatalf("SanitizeName not idempotent: %q → %q → %q", in, got, again)
	}
}

func TestDirName(t *testing.T) {
	tests := []struct {
		name, id, wantPrefix string
	}{
		{"telegram topic", "v1:telegram:topic:-100123:42", "v1_telegram_topic_-100123_42-"},
		{"discord user", "v1:discord:channel:1:user:2", "v1_discord_channel_1_user_2-"},
		{"negative message id", "-100", "100-"},
		{"dot", ".", "_-"},
		{"dot dot", "..", "__-"},
		{"separators", "a/b\\c", "a_b_c-"},
		{"only dashes", "---", "_-"},
		{"unicode", "é", "__-"},
		{"long", strings.Repeat("x", 500), strings.Repeat("x", maxDirPrefix) + "-"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := dirName(tt.id)
			if !strings.HasPrefix(got, tt.wantPrefix) {
				t.Errorf("dirName(%q) = %q, want prefix %q", tt.id, got, tt.wantPrefix)
			}
			if len(got) > maxDirPrefix+1+2*dirHashBytes || strings.ContainsAny(got, `/\.`) {
				t.Errorf("dirName(%q) = %q: too long or holds a separator or dot", tt.id, got)
			}
			if again := dirName(tt.id); again != got {
				t.Errorf("dirName(%q) not stable: %q then %q", tt.id, got, again)
			}
			if other, dup := seen[got]; dup {
				t.Errorf("dirName(%q) = dirName(%q) = %q", tt.id, other, got)
			}
			seen[got] = tt.id
		})
	}
}

// TestDirNameKeepsLookalikesApart: ids whose readable parts agree still get
// their own directories.
func TestDirNameKeepsLookalikesApart(t *testing.T) {
	pairs := [][2]string{
		{"v1:telegram:chat:1", "v1_telegram_chat_1"},
		{"a/b", "a:b"},
		{strings.Repeat("x", 60) + "1", strings.Repeat("x", 60) + "2"},
	}
	for _, p := range pairs {
		if a, b := dirName(p[0]), dirName(p[1]); a == b {
			t.Errorf("dirName(%q) = dirName(%q) = %q", p[0], p[1], a)
		}
	}
}

// TestDirNameIsStable pins the on-disk layout: changing dirName orphans
// every stored file.
func TestDirNameIsStable(t *testing.T) {
	if got, want := dirName("v1:telegram:topic:-100123:42"), "v1_telegram_topic_-100123_42-"; !strings.HasPrefix(got, want) || len(got) != len(want)+16 {
		t.Fatalf("dirName = %q", got)
	}
}
