package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Two ways to sign a delivery:
//
//   - gatewayd's: X-Gatewayd-Signature is the HMAC-SHA256 of
//     TIMESTAMP "." DELIVERY "." BODY, with X-Gatewayd-Timestamp (Unix
//     seconds) and X-Gatewayd-Delivery. The timestamp must be within
//     MaxAge of now either way, and the delivery id runs once (the inbox's
//     unique message id), so a captured delivery cannot be sent again.
//   - GitHub's: X-Hub-Signature-256 is the HMAC-SHA256 of the body alone.
//     Its delivery id (X-GitHub-Delivery) is not signed, so besides
//     running each id once, a body runs once per ReplayWindow whatever
//     the id (store.ClaimWebhookBody).

// unauthorized is the one answer to a name no hook has and to a signature
// that is missing, wrong or stale: the same 401 and body, so a caller
// learns neither which hook names exist nor what was wrong. The log says.
const unauthorized = "unauthorized: no such hook, or the delivery's signature is missing, wrong or too old " +
	"(sign as docs/schedules-webhooks.md shows)"

// verified is what authentication established about a delivery.
type verified struct {
	id string // the delivery id its turn is keyed by (deliveryID's form)
	// bodyOnly: GitHub's signature, over the body alone; the body is
	// checked against replays.
	bodyOnly bool
}

// authenticate checks the delivery's signatures with secret at now. It
// returns the outcome to count ("" when authentic) and a detail for the
// log. Every signature given must match, and at least one be given.
func (d *delivery) authenticate(secret string, body []byte, now time.Time) (v verified, outcome, detail string) {
	gatewaydSig := strings.TrimSpace(d.r.Header.Get(HeaderSignature))
	githubSig := strings.TrimSpace(d.r.Header.Get(HeaderGitHubSignature))
	if gatewaydSig == "" && githubSig == "" {
		return v, OutcomeSignature, "missing"
	}
	if githubSig != "" {
		if why := checkMAC(githubSig, secret, body); why != "" {
			return v, OutcomeSignature, why
		}
		v = verified{id: deliveryID(strings.TrimSpace(d.r.Header.Get(HeaderGitHubDelivery)), body), bodyOnly: true}
	}
	if gatewaydSig == "" {
		return v, "", ""
	}
	ts := strings.TrimSpace(d.r.Header.Get(HeaderTimestamp))
	id := strings.TrimSpace(d.r.Header.Get(HeaderDelivery))
	if ts == "" || id == "" {
		return v, OutcomeSignature, "missing " + HeaderTimestamp + " or " + HeaderDelivery
	}
	if !gatewaydDeliveryID.MatchString(id) {
		return v, OutcomeSignature, "malformed " + HeaderDelivery + " (1-128 of A-Z a-z 0-9 _ - :)"
	}
	if why := checkMAC(gatewaydSig, secret, signedContent(ts, id, body)); why != "" {
		return v, OutcomeSignature, why
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return v, OutcomeSignature, "malformed timestamp"
	}
	if age := now.Sub(time.Unix(sec, 0)); age > d.s.cfg.MaxAge || -age > d.s.cfg.MaxAge {
		return v, OutcomeStale, "timestamp " + age.Round(time.Second).String() + " from now, over max_age " + d.s.cfg.MaxAge.String()
	}
	// The timestamp and the id are signed: the id alone keys the turn.
	return verified{id: id}, "", ""
}

// gatewaydDeliveryID is what X-Gatewayd-Delivery may be. Without a dot,
// TIMESTAMP.DELIVERY.BODY splits one way only: an id "a.2" signed over the
// body "3" cannot be presented as the id "a" with the body "2.3".
var gatewaydDeliveryID = regexp.MustCompile(`^[A-Za-z0-9_:-]{1,128}$`)

// signedContent is what gatewayd's signature covers.
func signedContent(timestamp, delivery string, body []byte) []byte {
	b := make([]byte, 0, len(timestamp)+len(delivery)+2+len(body))
	b = append(b, timestamp...)
	b = append(b, '.')
	b = append(b, delivery...)
	b = append(b, '.')
	return append(b, body...)
}

// Sign is the X-Gatewayd-Signature value of a delivery: what a sender in
// Go (and the tests) computes.
func Sign(secret, timestamp, delivery string, body []byte) string {
	return signaturePrefix + hex.EncodeToString(mac(secret, signedContent(timestamp, delivery, body)))
}

func mac(secret string, content []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(content)
	return m.Sum(nil)
}

// checkMAC compares a "sha256=<hex>" header with the HMAC of content in
// constant time: "" when it matches, else "malformed" or "mismatch".
func checkMAC(header, secret string, content []byte) string {
	hexSig, ok := strings.CutPrefix(header, signaturePrefix)
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(got) != sha256.Size {
		return "malformed"
	}
	if !hmac.Equal(got, mac(secret, content)) {
		return "mismatch"
	}
	return ""
}
