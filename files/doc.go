// Package files keeps the files that travel through gatewayd: attachments received from a platform, stored for the
// agent to read, and files the agent asks to send with the send_file tool.
//
// Inbound, a [Store] writes each attachment to
//
//	<root>/<lane>/<message>/<name>
//
// where root is <state_dir>/files, <lane> and <message> are safe directory
// names derived from the session key and the platform's message id
// ([Store.LaneDir], [Store.MessageDir]) and <name> is the sender's file name
// after [SanitizeName]. A file is streamed to a temporary file in its final
// directory and published under a name nobody holds yet, so a crash never
// leaves half a file under a real name and a second "photo.jpg" in the same
// message becomes "photo (2).jpg". Each file is held to Limits.MaxBytes while
// it streams; each lane to Limits.LaneQuota, met by removing the lane's
// oldest message directories and out copies together, except those still
// in use (InUse; OutInUse and CopyOut's holds).
//
// Outbound, [ResolveOutbound] decides whether a path the agent named may be
// sent (inside an allowed root once every symlink is resolved, a regular
// file, small enough) and [Store.CopyOut] snapshots it into the lane's out
// directory, so an edit made after the agent asked does not change what is
// sent. [ResetSpool] prepares the directory uploads are spooled to. [Detect] names a file's media type and tells images apart, for
// localImage input items.
//
// The package is self-contained: it knows nothing of platforms, the gateway
// or configuration, which pass it paths, limits and the in-use rule.
package files
