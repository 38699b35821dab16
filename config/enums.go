package config

// The values of the enumerated keys. Load checks them; packages that take
// the same values from code (gateway.Config) check them with the Check
// functions below, so there is one rule and one message per key.
const (
	BusyQueue     = "queue"     // lanes.busy_mode: a message waits in the lane's queue
	BusyInterrupt = "interrupt" // lanes.busy_mode: it interrupts the running turn
	BusySteer     = "steer"     // lanes.busy_mode: it is added to the running turn

	ApprovalsNever = "never" // codex.approvals: codex never asks; the sandbox decides
	ApprovalsChat  = "chat"  // codex.approvals: ask in the lane

	ApproversRequester = "requester" // codex.approvers: in a shared room, who started the turn (or an admin)
	ApproversAnyone    = "anyone"    // codex.approvers: any allowed member

	IsolationLanes = "lanes" // codex.isolation: a lane's commands see only its own directories
	IsolationNone  = "none"  // codex.isolation: they see what the daemon's user sees

	VerboseOff     = "off"     // lanes.verbose: no work view
	VerboseSummary = "summary" // lanes.verbose: the plan and one line per action
	VerboseFull    = "full"    // lanes.verbose: also reasoning and command output
)

// BusyModes, ApprovalModes, IsolationModes and VerboseModes list the valid
// values of lanes.busy_mode, codex.approvals, codex.isolation and
// lanes.verbose.
var (
	BusyModes      = []string{BusyQueue, BusyInterrupt, BusySteer}
	ApprovalModes  = []string{ApprovalsNever, ApprovalsChat}
	ApproverModes  = []string{ApproversRequester, ApproversAnyone}
	IsolationModes = []string{IsolationLanes, IsolationNone}
	VerboseModes   = []string{VerboseOff, VerboseSummary, VerboseFull}
)

// CheckBusyMode checks a lanes.busy_mode value; the error is Load's.
func CheckBusyMode(mode string) error { return checkKey("lanes.busy_mode", mode) }

// CheckApprovals checks a codex.approvals value; the error is Load's.
func CheckApprovals(mode string) error { return checkKey("codex.approvals", mode) }

// CheckApprovers checks a codex.approvers value; the error is Load's.
func CheckApprovers(mode string) error { return checkKey("codex.approvers", mode) }

// CheckVerbose checks a lanes.verbose value; the error is Load's.
func CheckVerbose(mode string) error { return checkKey("lanes.verbose", mode) }

// CheckCompactAt checks a lanes.compact_at value (0 = off, else strictly
// between 0 and 1); the error is Load's.
func CheckCompactAt(frac float64) error { return checkKey("lanes.compact_at", frac) }

// checkKey decodes value as the key named would be, into a scratch Config,
// and returns the *Error Load would, or nil.
func checkKey(name string, value any) error {
	for _, k := range keys {
		if k.name == name {
			return k.decode(&Config{}, value)
		}
	}
	panic("config: checkKey of unknown key " + name)
}
