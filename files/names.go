package files

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxNameBytes is the longest file name Linux file systems take.
	maxNameBytes = 255
	// maxExtBytes bounds what counts as an extension (the dot excluded), so
	// "report.final version 2" is not split into a 20-byte "extension".
	maxExtBytes = 16
	// fallbackStem names a file whose name sanitises to nothing.
	fallbackStem = "file"
	// maxDirPrefix bounds the readable part of a lane or message directory.
	maxDirPrefix = 40
	// dirHashBytes of SHA-256 end each lane and message directory name:
	// 64 bits keep distinct ids apart even when their readable parts agree.
	dirHashBytes = 8
)

// SanitizeName turns a name chosen by a sender into one safe to create in a
// directory of ours. Only the last path element survives (both / and \ count
// as separators); invalid UTF-8, control characters, bidi controls such as
// U+202E and other invisible format characters are dropped; leading dots,
// spaces and dashes (hidden files, names read as options) and trailing dots
// and spaces are trimmed; the result is cut to 255 bytes on a character
// boundary, keeping a short extension. A name with nothing left becomes
// "file" plus its extension. The result is never empty, "." or "..", and
// SanitizeName(SanitizeName(x)) == SanitizeName(x).
func SanitizeName(name string) string {
	clean := strings.TrimRight(visible(lastElement(name)), " .")
	ext := extension(clean)
	stem := strings.TrimRight(strings.TrimLeft(clean[:len(clean)-len(ext)], " .-"), " .")
	if stem == "" {
		stem = fallbackStem
	}
	if len(stem)+len(ext) <= maxNameBytes {
		return stem + ext
	}
	if ext == "" {
		// The cut may expose an extension ("a.b c" cut to "a.b"); sanitising
		// the cut once more gives the form a second call would produce.
		return SanitizeName(cutUTF8(stem, maxNameBytes))
	}
	return fitName(stem, "", ext)
}

// lastElement drops every directory a name claims, whichever separator the
// sender's system uses.
func lastElement(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		return name[i+1:]
	}
	return name
}

// visible keeps only valid UTF-8 graphic characters: controls (NUL, newline),
// format characters (the bidi overrides and isolates, zero-width marks) and
// line separators can disguise a name or break the places it is shown.
func visible(s string) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsGraphic(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}

// extension returns name's extension with its dot when it looks like one: at
// most maxExtBytes letters, digits or underscores after the last dot.
func extension(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || len(name)-i-1 == 0 || len(name)-i-1 > maxExtBytes {
		return ""
	}
	for _, r := range name[i+1:] {
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return ""
		}
	}
	return name[i:]
}

// fitName joins stem, suffix and ext, shortening the stem so the whole stays
// within maxNameBytes. The stem must start with a character SanitizeName
// keeps at the front, so a shortened stem is never empty.
func fitName(stem, suffix, ext string) string {
	if over := len(stem) + len(suffix) + len(ext) - maxNameBytes; over > 0 {
		stem = strings.TrimRight(cutUTF8(stem, len(stem)-over), " .")
	}
	return stem + suffix + ext
}

// cutUTF8 returns the longest prefix of s of at most n bytes that ends on a
// character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// dirName maps an id from outside (a session key such as
// "v1:telegram:topic:-100123:42", a platform message id) to one directory
// name: a readable prefix of the id's letters, digits, '-' and '_' (anything
// else becomes '_'), then '-' and a hash of the whole id. The same id always
// gives the same name, different ids different names, and no name is empty,
// "." or "..", holds a separator, starts with '-' or '.', or exceeds 57 bytes.
// The mapping is part of the on-disk layout: changing it orphans every
// stored file.
func dirName(id string) string {
	var b strings.Builder
	for i := 0; i < len(id) && b.Len() < maxDirPrefix; i++ {
		c := id[i]
		if c == '-' || c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	prefix := strings.TrimLeft(b.String(), "-")
	if prefix == "" {
		prefix = "_"
	}
	sum := sha256.Sum256([]byte(id))
	return prefix + "-" + hex.EncodeToString(sum[:dirHashBytes])
}

// DirName is the directory name of id as this package lays it out, for the
// lane's other directories (its own working and temporary directories),
// so one lane has one name on disk wherever its directories are.
func DirName(id string) string { return dirName(id) }

// WorkDir is the working directory of the lane sessionKey when each lane
// without a project has its own (codex.isolation: lanes): a directory
// under root (codex.cwd) named as the lane's files directory is. The
// gateway works there and the console shows it, so both use this.
func WorkDir(root, sessionKey string) string {
	if root == "" {
		return "" // codex's own working directory: nothing to divide
	}
	return filepath.Join(root, dirName(sessionKey))
}
