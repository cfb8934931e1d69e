package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// A recent list on Redis is two keys of one hash slot: a sorted set of the entries' IDs scored
// by their time in Unix microseconds (Redis orders equal scores by member, as RecentEntry orders
// equal times by ID), and a hash of their values by ID. A put and a read are each one Lua script,
// so that the two keys never disagree and replicas that put at once lose nothing.

// putRecentScript: KEYS the sorted set and the hash; ARGV the bound, the TTL in milliseconds (0:
// none), then id, score, value for each entry. The IDs the bound drops lose their values too.
var putRecentScript = redis.NewScript(`
local bound = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
for i = 3, #ARGV, 3 do
	redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i])
	redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 2])
end
local extra = redis.call('ZCARD', KEYS[1]) - bound
if extra > 0 then
	for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, extra - 1)) do
		redis.call('HDEL', KEYS[2], id)
	end
	redis.call('ZREMRANGEBYRANK', KEYS[1], 0, extra - 1)
end
for _, k in ipairs(KEYS) do
	if ttl > 0 then
		redis.call('PEXPIRE', k, ttl)
	else
		redis.call('PERSIST', k)
	end
end
return 0
`)

// recentScript: KEYS as putRecentScript's; ARGV the limit (0: all). It returns id, score, value
// for each entry, newest first.
var recentScript = redis.NewScript(`
local ids = redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
local out = {}
for i = 1, #ids, 2 do
	local v = redis.call('HGET', KEYS[2], ids[i])
	if v then
		table.insert(out, ids[i])
		table.insert(out, ids[i + 1])
		table.insert(out, v)
	end
end
return out
`)

// recentKeys are the sorted set's and the hash's keys of the list at key, in one hash slot.
func (r *Redis) recentKeys(key string) []string {
	k := "{" + r.Key(key) + "}"
	return []string{k + ":at", k + ":val"}
}

// PutRecent implements Recents.
func (r *Redis) PutRecent(ctx context.Context, key string, entries []RecentEntry, bound int, ttl time.Duration) error {
	entries = newest(entries, bound) // what the bound would drop is not sent
	if len(entries) == 0 {
		return nil
	}
	args := make([]any, 0, 2+3*len(entries))
	args = append(args, bound, ttl.Milliseconds())
	for _, e := range entries {
		args = append(args, e.ID, e.At.UnixMicro(), e.Val)
	}
	return unavailable(putRecentScript.Run(ctx, r.client, r.recentKeys(key), args...).Err())
}

// Recent implements Recents.
func (r *Redis) Recent(ctx context.Context, key string, limit int) ([]RecentEntry, error) {
	res, err := recentScript.Run(ctx, r.client, r.recentKeys(key), max(limit, 0)).StringSlice()
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]RecentEntry, 0, len(res)/3)
	for i := 0; i+2 < len(res); i += 3 {
		us, err := strconv.ParseFloat(res[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("recent list %s: entry %q has the score %q: %w", key, res[i], res[i+1], err)
		}
		out = append(out, RecentEntry{ID: res[i], At: time.UnixMicro(int64(us)), Val: []byte(res[i+2])})
	}
	return out, nil
}
