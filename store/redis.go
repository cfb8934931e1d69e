package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// Redis is a Store on Redis (or Sentinel, through go-redis' universal client), shared by replicas.
type Redis struct {
	client  redis.UniversalClient
	prefix  string
	limiter *redis_rate.Limiter // Pace's
}

// NewRedis connects to the Redis at url (redis://[:password@]host:port/db). password, when set,
// overrides the URL's. Keys are namespaced under prefix.
func NewRedis(url, password, prefix string) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", redactErr(err))
	}
	if password != "" {
		opt.Password = password
	}
	opt.DialTimeout = 2 * time.Second
	opt.ReadTimeout = 2 * time.Second
	opt.WriteTimeout = 2 * time.Second
	opt.MaxRetries = 1
	return NewRedisClient(redis.NewClient(opt), prefix), nil
}

// NewRedisSentinel connects to the master that the sentinels at addrs name masterName, and
// follows failovers (go-redis' failover client).
func NewRedisSentinel(masterName string, addrs []string, db int, password, sentinelPassword, prefix string) *Redis {
	return NewRedisClient(redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: masterName, SentinelAddrs: addrs, SentinelPassword: sentinelPassword,
		Password: password, DB: db,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: 1,
	}), prefix)
}

// NewRedisClient wraps an existing client.
func NewRedisClient(c redis.UniversalClient, prefix string) *Redis {
	if prefix == "" {
		prefix = "vllm-responder:"
	}
	return &Redis{client: c, prefix: prefix, limiter: redis_rate.NewLimiter(c)}
}

// Client returns the underlying client (the lock implementation shares it).
func (r *Redis) Client() redis.UniversalClient { return r.client }

// Key returns the namespaced Redis key for key.
func (r *Redis) Key(key string) string { return r.prefix + key }

func unavailable(err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// redactErr keeps a parse error from echoing a URL that may hold a password.
func redactErr(error) error {
	return errors.New("invalid redis URL (not shown: it may hold a password)")
}

// Claim implements Store.
func (r *Redis) Claim(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ok, err := r.client.SetNX(ctx, r.Key(key), 1, ttl).Result()
	if err != nil {
		return false, unavailable(err)
	}
	return ok, nil
}

// ClaimAll implements BatchClaimer: one pipeline of SET NX, sent in chunks of 1,000.
func (r *Redis) ClaimAll(ctx context.Context, keys []string, ttl time.Duration) ([]bool, error) {
	out := make([]bool, 0, len(keys))
	for chunk := range slices.Chunk(keys, 1000) {
		cmds := make([]*redis.BoolCmd, len(chunk))
		_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range chunk {
				cmds[i] = p.SetNX(ctx, r.Key(k), 1, ttl)
			}
			return nil
		})
		if err != nil {
			return nil, unavailable(err)
		}
		for _, c := range cmds {
			out = append(out, c.Val())
		}
	}
	return out, nil
}

// Unclaim implements Store.
func (r *Redis) Unclaim(ctx context.Context, key string) error { return r.Delete(ctx, key) }

// Get implements Store.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, bool, error) {
	b, err := r.client.Get(ctx, r.Key(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unavailable(err)
	}
	return b, true, nil
}

// Set implements Store.
func (r *Redis) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	return unavailable(r.client.Set(ctx, r.Key(key), val, ttl).Err())
}

// Delete implements Store.
func (r *Redis) Delete(ctx context.Context, key string) error {
	return unavailable(r.client.Del(ctx, r.Key(key)).Err())
}

// List implements Store. It uses SCAN, never KEYS, so it does not block a busy Redis.
func (r *Redis) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	out := make(map[string][]byte)
	iter := r.client.Scan(ctx, 0, r.Key(prefix)+"*", 100).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, unavailable(err)
	}
	for _, k := range keys {
		b, err := r.client.Get(ctx, k).Bytes()
		if errors.Is(err, redis.Nil) {
			continue // expired between SCAN and GET
		}
		if err != nil {
			return nil, unavailable(err)
		}
		out[k[len(r.prefix):]] = b
	}
	return out, nil
}

// Ping implements Store.
func (r *Redis) Ping(ctx context.Context) error { return unavailable(r.client.Ping(ctx).Err()) }

// Close implements Store.
func (r *Redis) Close() error { return r.client.Close() }

// redisLogger sends go-redis' own messages (connection pool errors) to the service's log
// instead of stderr.
type redisLogger struct{ log zerolog.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn().Str("component", "go-redis").Msg(fmt.Sprintf(format, v...))
}

// SetRedisLogger routes go-redis' internal log (process-wide) to log.
func SetRedisLogger(log zerolog.Logger) { redis.SetLogger(redisLogger{log: log}) }
