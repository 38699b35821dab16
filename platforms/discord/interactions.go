package discord

import (
	"context"
	"strings"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// slashCommands are the application (slash) commands, built from the
// gateway's menu commands; each arrives at the gateway as the text command
// "/<name>".
func slashCommands(cmds []gateway.CommandInfo) []*discordgo.ApplicationCommand {
	out := []*discordgo.ApplicationCommand{} // none: an empty list, so the overwrite clears old ones
	for _, c := range cmds {
		if !c.Menu {
			continue
		}
		cmd := &discordgo.ApplicationCommand{Name: c.Name, Description: c.Description}
		if c.Args != "" {
			// One optional free-text option carries what the typed command
			// takes after its name (/review base main, /fork a title).
			cmd.Options = []*discordgo.ApplicationCommandOption{{Type: discordgo.ApplicationCommandOptionString,
				Name: argsOption, Description: c.Args, Required: false}}
		}
		out = append(out, cmd)
	}
	return out
}

// argsOption is the slash commands' option holding their arguments.
const argsOption = "arguments"

// slashText is the text command a slash command stands for.
func slashText(data discordgo.ApplicationCommandInteractionData) string {
	text := "/" + data.Name
	for _, o := range data.Options {
		if o.Name == argsOption && o.Type == discordgo.ApplicationCommandOptionString {
			if args := strings.TrimSpace(o.StringValue()); args != "" {
				text += " " + args
			}
		}
	}
	return text
}

const (
	refusalText     = "You are not allowed to use this bot here."
	buttonRefusal   = "Only an allowed user of this conversation can press these buttons."
	deliveryFailure = "That could not be recorded; please try again."
)

// registerCommands overwrites the global commands once per process; a
// failure is logged and retried on the next READY.
func (a *Adapter) registerCommands() {
	_, appID := a.ids()
	a.mu.Lock()
	done := a.commandsSet
	a.mu.Unlock()
	if done || appID == "" {
		return
	}
	if _, err := a.session.ApplicationCommandBulkOverwrite(appID, "", slashCommands(a.cfg.Commands)); err != nil {
		a.log.Warn("discord.commands.register_failed", zap.Error(mapError("register commands", err)))
		return
	}
	a.mu.Lock()
	a.commandsSet = true
	a.mu.Unlock()
}

// handleInteraction handles slash commands, button presses and select
// menu choices.
func (a *Adapter) handleInteraction(ctx context.Context, i *discordgo.Interaction) {
	user, roles := interactionUser(i)
	if user == nil {
		a.log.Warn("discord.interaction.no_user", zap.String("interaction_id", i.ID))
		return
	}
	ch, err := a.channel(ctx, i.ChannelID)
	if err != nil {
		a.log.Error("discord.interaction.channel_lookup_failed", zap.String("channel_id", i.ChannelID), zap.Error(err))
		a.respondEphemeral(ctx, i, deliveryFailure)
		return
	}
	placeOK := a.allow.placeAllowed(i.GuildID, ch) && a.allow.userAllowed(user.ID, roles)
	in := gateway.Inbound{
		MessageID: i.ID, SenderID: user.ID, SenderName: user.Username, SenderRoles: roles,
		SenderAdmin: channelAdmin(i.Member), Mentioned: true, ReceivedAt: a.cfg.Now(),
	}
	switch i.Type {
	case discordgo.InteractionApplicationCommand:
		if !placeOK {
			a.allow.logDenied(a.log, user, ch.ID)
			a.respondEphemeral(ctx, i, refusalText)
			return
		}
		in.Address = a.laneFor(ch, user.ID)
		in.Text = slashText(i.ApplicationCommandData())
		a.deliverInteraction(ctx, i, in, &discordgo.InteractionResponse{
			Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: "`" + in.Text + "`"},
		})
	case discordgo.InteractionMessageComponent:
		addr, known := gateway.Address{}, false
		if i.Message != nil {
			addr, known = a.buttons.get(i.Message.ID)
		}
		if !known {
			addr = a.laneFor(ch, user.ID)
		}
		if !placeOK || (addr.UserID != "" && addr.UserID != user.ID) {
			a.allow.logDenied(a.log, user, ch.ID)
			a.respondEphemeral(ctx, i, buttonRefusal)
			return
		}
		in.Address = addr
		in.Callback = componentCallback(i.MessageComponentData())
		ack := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}
		if in.Callback == "" {
			a.log.Info("discord.interaction.empty_choice", zap.String("interaction_id", i.ID))
			a.acknowledge(ctx, i, ack) // Discord shows an error for an unanswered interaction
			return
		}
		a.deliverInteraction(ctx, i, in, ack)
	default:
		a.log.Debug("discord.interaction.ignored", zap.Int("type", int(i.Type)))
	}
}

// deliverInteraction records the inbound first, then acknowledges it, so a
// user never sees an acknowledgement for something that was lost.
func (a *Adapter) deliverInteraction(ctx context.Context, i *discordgo.Interaction, in gateway.Inbound, ack *discordgo.InteractionResponse) {
	if _, err := a.currentSink().Deliver(ctx, in); err != nil {
		a.deliverFailed(ctx, err, zap.String("interaction_id", i.ID), zap.String("session_key", in.Address.SessionKey()))
		a.respondEphemeral(ctx, i, deliveryFailure)
		return
	}
	a.acknowledge(ctx, i, ack)
}

func (a *Adapter) acknowledge(ctx context.Context, i *discordgo.Interaction, ack *discordgo.InteractionResponse) {
	if err := a.session.InteractionRespond(i, ack, discordgo.WithContext(ctx)); err != nil {
		a.log.Warn("discord.interaction.ack_failed", zap.String("interaction_id", i.ID), zap.Error(mapError("ack", err)))
	}
}

// componentCallback is what a component interaction stands for: a
// button's custom_id, or the option chosen in a select menu, whose value
// is the id of the button it stands in for (questionSelect). A select
// with nothing chosen stands for nothing ("").
func componentCallback(d discordgo.MessageComponentInteractionData) string {
	if d.ComponentType == discordgo.SelectMenuComponent || len(d.Values) > 0 {
		if len(d.Values) == 0 {
			return ""
		}
		return d.Values[0]
	}
	return d.CustomID
}

// adminPermissions make a member an admin of a place for the gateway
// (Inbound.SenderAdmin: they decide approvals and questions in a shared
// room).
const adminPermissions = discordgo.PermissionManageChannels | discordgo.PermissionAdministrator

// channelAdmin reports whether an interaction's member administers its
// channel. Discord computes an interaction's member.permissions for that
// channel, roles and overwrites included, so no guild state is needed; a
// DM has no member and no admin.
func channelAdmin(m *discordgo.Member) bool {
	return m != nil && m.Permissions&adminPermissions != 0
}

func (a *Adapter) respondEphemeral(ctx context.Context, i *discordgo.Interaction, text string) {
	err := a.session.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: text, Flags: discordgo.MessageFlagsEphemeral},
	}, discordgo.WithContext(ctx))
	if err != nil {
		a.log.Warn("discord.interaction.respond_failed", zap.String("interaction_id", i.ID), zap.Error(mapError("respond", err)))
	}
}

func interactionUser(i *discordgo.Interaction) (*discordgo.User, []string) {
	if i.Member != nil && i.Member.User != nil {
		return i.Member.User, i.Member.Roles
	}
	return i.User, nil
}
