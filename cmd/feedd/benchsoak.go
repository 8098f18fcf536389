package main

import (
	"context"
	"errors"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
)

// soakGauges returns what feedd bench mixed samples during a long run
// (--sample-every): this process's memory, goroutines and descriptors, the
// pools of the API's wiring and of the workers' (when apart), and what the
// database and Redis hold. pool reads the database as the bench does, rdb
// is the bench's Redis client (nil without Redis).
func soakGauges(api, workers *app, pool *pgxpool.Pool, rdb *goredis.Client) func(context.Context) (map[string]float64, error) {
	return func(ctx context.Context) (map[string]float64, error) {
		g := map[string]float64{}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		g["process_rss_mb"] = float64(residentKB()) / 1024
		g["process_heap_inuse_mb"] = float64(m.HeapInuse) / (1 << 20)
		// The heap the last collection found live: in use also counts
		// garbage not yet collected, up to GOGC's headroom.
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		if metrics.Read(live); live[0].Value.Kind() == metrics.KindUint64 {
			g["process_heap_live_mb"] = float64(live[0].Value.Uint64()) / (1 << 20)
		}
		g["process_goroutines"] = float64(runtime.NumGoroutine())
		if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
			g["process_open_fds"] = float64(len(fds))
		}
		for name, a := range map[string]*app{"api": api, "worker": workers} {
			if a == nil {
				continue
			}
			if a.pgPool != nil {
				st := a.pgPool.Stat()
				g["pgx_pool_"+name+"_total"] = float64(st.TotalConns())
				g["pgx_pool_"+name+"_acquired"] = float64(st.AcquiredConns())
			}
			if a.rdb != nil {
				st := a.rdb.PoolStats()
				g["redis_pool_"+name+"_total"] = float64(st.TotalConns)
				g["redis_pool_"+name+"_idle"] = float64(st.IdleConns)
			}
		}
		var errs []error
		if pool != nil {
			errs = append(errs, databaseGauges(ctx, pool, g))
		}
		if rdb != nil {
			errs = append(errs, redisGauges(ctx, rdb, g))
		}
		return g, errors.Join(errs...)
	}
}

// databaseGauges adds the database's connections, River's job rows by
// state, the rows of the tables that expire (sessions, codes, rate
// counters, snapshots) and every table's size with its indexes and TOAST.
func databaseGauges(ctx context.Context, pool *pgxpool.Pool, g map[string]float64) error {
	var backends int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()`).Scan(&backends); err != nil {
		return err
	}
	g["pg_backends"] = float64(backends)
	rows, err := pool.Query(ctx, `SELECT state::text, count(*) FROM river_job GROUP BY state`)
	if err != nil {
		return err
	}
	var total int64
	for rows.Next() {
		var state string
		var n int64
		if err := rows.Scan(&state, &n); err != nil {
			return err
		}
		g["river_job_rows_"+state] = float64(n)
		total += n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	g["river_job_rows"] = float64(total)
	for _, t := range []string{"sessions", "login_codes", "rate_counts", "rank_snapshots"} {
		var n int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+t).Scan(&n); err != nil {
			return err
		}
		g["rows_"+t] = float64(n)
	}
	rows, err = pool.Query(ctx, `SELECT relname, pg_total_relation_size(relid) FROM pg_stat_user_tables`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size); err != nil {
			return err
		}
		g["table_mb_"+name] = float64(size) / (1 << 20)
	}
	return rows.Err()
}

// redisGauges adds Redis's memory and key count.
func redisGauges(ctx context.Context, rdb *goredis.Client, g map[string]float64) error {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, _ := strconv.ParseFloat(v, 64)
			g["redis_used_memory_mb"] = n / (1 << 20)
		}
	}
	n, err := rdb.DBSize(ctx).Result()
	g["redis_keys"] = float64(n)
	return err
}

// residentKB is VmRSS of /proc/self/status (0 where there is none).
func residentKB() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb
		}
	}
	return 0
}
