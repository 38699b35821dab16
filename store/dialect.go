package store

import (
	"strconv"
	"strings"
	"sync"
)

// dialect is what differs between the two backends' SQL. The store's
// queries are written once, in the SQL both engines accept, with SQLite's
// `?` and `?NNN` placeholders; on PostgreSQL the statement cache rebinds
// them to `$n`. Only the few statements whose syntax differs (begin, search,
// JSON and substring functions) ask the dialect for their text.
type dialect struct {
	name string // "sqlite" or "postgres", as store.driver names them
	// begin starts a batch transaction. SQLite's IMMEDIATE takes the write
	// lock at once so a batch never fails half-way on SQLITE_BUSY;
	// PostgreSQL locks rows as it goes.
	begin string
	// rebind turns `?` placeholders into the driver's (nil: unchanged).
	rebind func(string) string
	// prepare: the statement cache prepares statements itself. pgx already
	// prepares and caches every statement per connection, and re-prepares
	// after a reconnect, which database/sql's statements bound to a lost
	// connection of the write pool would not.
	prepare bool
}

var (
	sqliteDialect = &dialect{name: "sqlite", begin: "BEGIN IMMEDIATE", prepare: true}
	pgDialect     = &dialect{name: "postgres", begin: "BEGIN", rebind: cachedRebind()}
)

// contains is the SQL test "needle occurs in haystack" (both text
// expressions), without LIKE's wildcards so user text matches literally.
func (d *dialect) contains(haystack, needle string) string {
	if d == pgDialect {
		return "strpos(" + haystack + ", " + needle + ") > 0"
	}
	return "instr(" + haystack + ", " + needle + ") > 0"
}

// jsonText is the text of key in the JSON object held in column (NULL when
// absent).
func (d *dialect) jsonText(column, key string) string {
	if d == pgDialect {
		return "(" + column + "::jsonb ->> '" + key + "')"
	}
	return "json_extract(" + column + ", '$." + key + "')"
}

// noLimit is the LIMIT that means "all rows" in both dialects (SQLite's -1
// is an error in PostgreSQL, PostgreSQL's ALL one in SQLite).
const noLimit = "9223372036854775807"

// cachedRebind memoises rebindDollar: the store's SQL is a fixed set of
// strings, so each is scanned once.
func cachedRebind() func(string) string {
	var cache sync.Map
	return func(query string) string {
		if v, ok := cache.Load(query); ok {
			return v.(string)
		}
		out := rebindDollar(query)
		cache.Store(query, out)
		return out
	}
}

// rebindDollar rewrites SQLite placeholders to PostgreSQL's: `?NNN` becomes
// `$NNN` and a bare `?` takes the number after the largest seen so far,
// which is how SQLite numbers them. Text inside quotes ('…', "…") and
// comments is left alone.
func rebindDollar(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	highest := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			end := closingQuote(query, i)
			b.WriteString(query[i:end])
			i = end - 1
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			end := strings.IndexByte(query[i:], '\n')
			if end < 0 {
				end = len(query) - i
			}
			b.WriteString(query[i : i+end])
			i += end - 1
		case c == '?':
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			n := highest + 1
			if j > i+1 {
				n, _ = strconv.Atoi(query[i+1 : j])
			}
			highest = max(highest, n)
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// closingQuote returns the index just past the quoted section starting at
// start; a doubled quote character is an escaped one.
func closingQuote(query string, start int) int {
	q := query[start]
	for i := start + 1; i < len(query); i++ {
		if query[i] != q {
			continue
		}
		if i+1 < len(query) && query[i+1] == q {
			i++
			continue
		}
		return i + 1
	}
	return len(query)
}
