package files

import (
	"net/http"
	"strings"
)

// Detect names the media type of a file from its first bytes (up to 512,
// as net/http.DetectContentType reads) and its name. The content decides
// when it is specific; the extension refines generic answers (plain text,
// arbitrary bytes). isImage needs the content to say png, jpeg, gif or webp,
// so a page renamed photo.png is not handed to the model as an image, unless
// head is empty, when the extension is all there is.
func Detect(name string, head []byte) (mime string, isImage bool) {
	byName := typeByExtension(strings.ToLower(extension(name)))
	if len(head) == 0 {
		if byName == "" {
			return "application/octet-stream", false
		}
		return byName, isImageType(byName)
	}
	sniffed := http.DetectContentType(head)
	if isImageType(sniffed) {
		return sniffed, true
	}
	generic := sniffed == "application/octet-stream" || strings.HasPrefix(sniffed, "text/plain")
	if generic && byName != "" && !isImageType(byName) {
		return byName, false
	}
	return sniffed, false
}

// isImageType reports the types a localImage input item takes.
func isImageType(mime string) bool {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// typeByExtension names the types content sniffing cannot tell apart from
// plain text or arbitrary bytes, and the images, or returns "". It is ours,
// not mime.TypeByExtension, whose answers depend on the host's mime.types.
func typeByExtension(ext string) string {
	switch ext {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".csv":
		return "text/csv; charset=utf-8"
	case ".md":
		return "text/markdown; charset=utf-8"
	case ".txt":
		return "text/plain; charset=utf-8"
	case ".json":
		return "application/json"
	case ".yaml", ".yml":
		return "application/yaml"
	}
	return ""
}
