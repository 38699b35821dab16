package files

import "testing"

func TestDetect(t *testing.T) {
	const (
		jpegHead = "\xff\xd8\xff\xe0\x00\x10JFIF\x00"
		gifHead  = "GIF89a\x01\x00\x01\x00"
		webpHead = "RIFF\x24\x00\x00\x00WEBPVP8 "
		pdfHead  = "%PDF-1.7\n"
	)
	tests := []struct {
		name, file, head string
		wantMIME         string
		wantImage        bool
	}{
		{"png", "a.png", pngHead, "image/png", true},
		{"jpeg", "a.jpg", jpegHead, "image/jpeg", true},
		{"gif", "a.gif", gifHead, "image/gif", true},
		{"webp", "a.webp", webpHead, "image/webp", true},
		{"image without extension", "photo", pngHead, "image/png", true},
		{"image under another extension", "a.txt", pngHead, "image/png", true},
		{"page renamed png is no image", "photo.png", "<html><body>hi</body></html>", "text/html; charset=utf-8", false},
		{"text renamed png is no image", "photo.png", "just words", "text/plain; charset=utf-8", false},
		{"pdf by content", "a.bin", pdfHead, "application/pdf", false},
		{"json refined by extension", "data.json", `{"a": 1}`, "application/json", false},
		{"csv refined by extension", "t.CSV", "a,b\n1,2\n", "text/csv; charset=utf-8", false},
		{"plain text", "notes", "hello", "text/plain; charset=utf-8", false},
		{"unknown bytes", "blob", "\x00\x01\x02\x03", "application/octet-stream", false},
		{"no content: extension decides", "a.jpeg", "", "image/jpeg", true},
		{"no content, no known extension", "a.xyz", "", "application/octet-stream", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mime, isImage := Detect(tt.file, []byte(tt.head))
			if mime != tt.wantMIME || isImage != tt.wantImage {
				t.Errorf("Detect(%q) = %q, %v; want %q, %v", tt.file, mime, isImage, tt.wantMIME, tt.wantImage)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{DefaultMaxBytes, "20 MiB"},
		{DefaultLaneQuota, "1 GiB"},
		{1536, "1536 bytes"},
		{2048, "2 KiB"},
		{0, "0 bytes"},
	}
	for _, tt := range tests {
		if got := FormatSize(tt.in); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
