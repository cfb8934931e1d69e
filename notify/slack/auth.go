package slack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// groupCacheTTL is how long user group members are cached.
const groupCacheTTL = 5 * time.Minute

// authorizer decides who may silence and capture: allowed users, members of allowed user groups,
// or anyone in an allowed channel. With all three lists empty everyone may.
type authorizer struct {
	cfg *Config
	api *webAPI
	now func() time.Time

	mu     sync.Mutex
	groups map[string]groupEntry
}

type groupEntry struct {
	members []string
	at      time.Time
}

func newAuthorizer(cfg *Config, api *webAPI, now func() time.Time) *authorizer {
	return &authorizer{cfg: cfg, api: api, now: now, groups: map[string]groupEntry{}}
}

// allowed reports whether user may act in channel, and if not, why (for the user to read).
func (z *authorizer) allowed(ctx context.Context, user, channel string) (bool, string) {
	c := z.cfg
	if len(c.AllowedUsers) == 0 && len(c.AllowedUsergroups) == 0 && len(c.AllowedChannels) == 0 {
		return true, ""
	}
	if slices.Contains(c.AllowedUsers, user) || slices.Contains(c.AllowedChannels, channel) {
		return true, ""
	}
	var lookupErr error
	for _, g := range c.AllowedUsergroups {
		members, err := z.members(ctx, g)
		if err != nil {
			lookupErr = err
			continue
		}
		if slices.Contains(members, user) {
			return true, ""
		}
	}
	var who []string
	if len(c.AllowedUsers) > 0 {
		who = append(who, "the allowed users")
	}
	for _, g := range c.AllowedUsergroups {
		who = append(who, "<!subteam^"+g+">")
	}
	why := "this is limited to " + strings.Join(who, " or ")
	if len(who) == 0 {
		why = "this is limited to certain channels"
	}
	if len(c.AllowedChannels) > 0 {
		var chans []string
		for _, ch := range c.AllowedChannels {
			chans = append(chans, "<#"+ch+">")
		}
		if len(who) > 0 {
			why += ", or to anyone in " + strings.Join(chans, ", ")
		} else {
			why += ": " + strings.Join(chans, ", ")
		}
	}
	if lookupErr != nil {
		why += fmt.Sprintf(" (and user group membership could not be checked: %v)", lookupErr)
	}
	return false, why + "."
}

func (z *authorizer) members(ctx context.Context, group string) ([]string, error) {
	z.mu.Lock()
	e, ok := z.groups[group]
	z.mu.Unlock()
	if ok && z.now().Sub(e.at) < groupCacheTTL {
		return e.members, nil
	}
	var m []string
	err := rateLimitRetried(ctx, z.cfg, func(ctx context.Context) (err error) {
		m, err = z.api.UsergroupMembers(ctx, group)
		return err
	})
	if err != nil {
		return nil, err
	}
	z.mu.Lock()
	z.groups[group] = groupEntry{members: m, at: z.now()}
	z.mu.Unlock()
	return m, nil
}
