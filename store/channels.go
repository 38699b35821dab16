package store

import (
	"context"
	"fmt"
	"time"
)

// ChannelRecord is one row of a platform's channel index (migration 15):
// a channel the bot has a conversation in, which a reconnect backfills.
type ChannelRecord struct {
	ChannelID string
	// Engaged marks a thread the bot was addressed in: it answers there
	// without being mentioned again.
	Engaged bool
	// LastMessageID is the newest message id handled in the channel (0:
	// none yet). Platform ids that grow with time, such as Discord's
	// snowflakes, make it the backfill's "after".
	LastMessageID int64
	SeenAt        time.Time // the last delivery from the channel
}

// TrackChannel adds the channel to the platform's index, or updates its
// row: engaged only ever turns on, and the message id and the time seen
// only ever grow. One statement per channel, so nodes writing different
// channels (or the same one around a handover) never undo each other.
func (s *Store) TrackChannel(ctx context.Context, platform, channelID string, engaged bool, lastMessageID int64, seenAt time.Time) error {
	if err := validChannel(platform, channelID, lastMessageID); err != nil {
		return err
	}
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, `INSERT INTO channel_index (platform, channel_id, engaged, last_message_id, seen_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (platform, channel_id) DO UPDATE SET
				engaged = CASE WHEN excluded.engaged = 1 THEN 1 ELSE channel_index.engaged END,
				last_message_id = CASE WHEN excluded.last_message_id > channel_index.last_message_id
					THEN excluded.last_message_id ELSE channel_index.last_message_id END,
				seen_at = CASE WHEN excluded.seen_at > channel_index.seen_at
					THEN excluded.seen_at ELSE channel_index.seen_at END`,
			platform, channelID, boolInt(engaged), lastMessageID, toDB(seenAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: track channel %s/%s: %w", platform, channelID, err)
	}
	return nil
}

// AdvanceChannel moves the channel's last message id forward to
// lastMessageID; never back, and not at all for a channel the index does
// not hold (the bot has no conversation there to backfill). A cursor, so a
// lazy commit (see SetCursor): one set back by a power cut backfills
// messages the inbox already holds.
func (s *Store) AdvanceChannel(ctx context.Context, platform, channelID string, lastMessageID int64) error {
	if err := validChannel(platform, channelID, lastMessageID); err != nil {
		return err
	}
	err := s.writeLazy(ctx, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, `UPDATE channel_index SET last_message_id = ?1
			WHERE platform = ?2 AND channel_id = ?3 AND last_message_id < ?1`,
			lastMessageID, platform, channelID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: advance channel %s/%s: %w", platform, channelID, err)
	}
	return nil
}

// ForgetChannel removes the channel from the platform's index (the bot
// can no longer read it).
func (s *Store) ForgetChannel(ctx context.Context, platform, channelID string) error {
	if err := validChannel(platform, channelID, 0); err != nil {
		return err
	}
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, "DELETE FROM channel_index WHERE platform = ? AND channel_id = ?", platform, channelID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: forget channel %s/%s: %w", platform, channelID, err)
	}
	return nil
}

// Channels lists the platform's index as the database holds it now, the
// most recently seen first, at most limit rows (limit <= 0: all).
func (s *Store) Channels(ctx context.Context, platform string, limit int) ([]ChannelRecord, error) {
	lim := noLimit
	if limit > 0 {
		lim = fmt.Sprint(limit)
	}
	rows, err := s.rq.QueryContext(ctx, `SELECT channel_id, engaged, last_message_id, seen_at FROM channel_index
		WHERE platform = ? ORDER BY seen_at DESC, channel_id LIMIT `+lim, platform)
	if err != nil {
		return nil, fmt.Errorf("store: channels of %s: %w", platform, classify(err))
	}
	defer rows.Close()
	var out []ChannelRecord
	for rows.Next() {
		var r ChannelRecord
		var engaged, seen int64
		if err := rows.Scan(&r.ChannelID, &engaged, &r.LastMessageID, &seen); err != nil {
			return nil, fmt.Errorf("store: channels of %s: %w", platform, classify(err))
		}
		r.Engaged, r.SeenAt = engaged == 1, fromDB(seen)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: channels of %s: %w", platform, classify(err))
	}
	return out, nil
}

// DeleteCursor removes a named cursor; removing one that does not exist
// is not an error.
func (s *Store) DeleteCursor(ctx context.Context, name string) error {
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, "DELETE FROM cursors WHERE name = ?", name)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete cursor %s: %w", name, err)
	}
	return nil
}

func validChannel(platform, channelID string, lastMessageID int64) error {
	switch {
	case platform == "" || channelID == "":
		return fmt.Errorf("%w: a channel needs a platform and an id", ErrInvalid)
	case lastMessageID < 0:
		return fmt.Errorf("%w: channel %s/%s: message id %d is negative", ErrInvalid, platform, channelID, lastMessageID)
	}
	return nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
