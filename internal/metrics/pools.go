package metrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
)

// WatchPostgres exports the statistics of a PostgreSQL pool, read at
// scrape time: feedd_postgres_pool_connections{state} (acquired, idle,
// constructing, total, max), feedd_postgres_pool_acquires_total,
// feedd_postgres_pool_empty_acquires_total (acquires that had to wait for
// a connection) and feedd_postgres_pool_acquire_wait_seconds_total.
func (m *Metrics) WatchPostgres(pool *pgxpool.Pool) {
	m.Registry.MustRegister(&poolCollector{
		descs: map[string]*prometheus.Desc{
			"conns":   prometheus.NewDesc("feedd_postgres_pool_connections", "Connections of the PostgreSQL pool, by state.", []string{"state"}, nil),
			"acq":     prometheus.NewDesc("feedd_postgres_pool_acquires_total", "Connections acquired from the PostgreSQL pool.", nil, nil),
			"empty":   prometheus.NewDesc("feedd_postgres_pool_empty_acquires_total", "Acquires that waited because the PostgreSQL pool was empty.", nil, nil),
			"waitsec": prometheus.NewDesc("feedd_postgres_pool_acquire_wait_seconds_total", "Time spent waiting for a PostgreSQL connection in acquires that found the pool empty.", nil, nil),
		},
		collect: func(d map[string]*prometheus.Desc, ch chan<- prometheus.Metric) {
			s := pool.Stat()
			for state, n := range map[string]int32{"acquired": s.AcquiredConns(), "idle": s.IdleConns(), "constructing": s.ConstructingConns(), "total": s.TotalConns(), "max": s.MaxConns()} {
				ch <- prometheus.MustNewConstMetric(d["conns"], prometheus.GaugeValue, float64(n), state)
			}
			ch <- prometheus.MustNewConstMetric(d["acq"], prometheus.CounterValue, float64(s.AcquireCount()))
			ch <- prometheus.MustNewConstMetric(d["empty"], prometheus.CounterValue, float64(s.EmptyAcquireCount()))
			ch <- prometheus.MustNewConstMetric(d["waitsec"], prometheus.CounterValue, s.EmptyAcquireWaitTime().Seconds())
		},
	})
}

// WatchRedis exports the statistics of a Redis client's pools (all nodes'
// together for a Cluster), read at scrape time:
// feedd_redis_pool_connections{state} (total, idle),
// feedd_redis_pool_hits_total, feedd_redis_pool_misses_total (a new
// connection was needed) and feedd_redis_pool_timeouts_total (no
// connection within the pool timeout).
func (m *Metrics) WatchRedis(rdb goredis.UniversalClient) {
	m.Registry.MustRegister(&poolCollector{
		descs: map[string]*prometheus.Desc{
			"conns":    prometheus.NewDesc("feedd_redis_pool_connections", "Connections of the Redis pool, by state.", []string{"state"}, nil),
			"hits":     prometheus.NewDesc("feedd_redis_pool_hits_total", "Redis commands that found a free pooled connection.", nil, nil),
			"misses":   prometheus.NewDesc("feedd_redis_pool_misses_total", "Redis commands that found no free pooled connection.", nil, nil),
			"timeouts": prometheus.NewDesc("feedd_redis_pool_timeouts_total", "Redis commands that waited past the pool timeout for a connection.", nil, nil),
		},
		collect: func(d map[string]*prometheus.Desc, ch chan<- prometheus.Metric) {
			s := rdb.PoolStats()
			ch <- prometheus.MustNewConstMetric(d["conns"], prometheus.GaugeValue, float64(s.TotalConns), "total")
			ch <- prometheus.MustNewConstMetric(d["conns"], prometheus.GaugeValue, float64(s.IdleConns), "idle")
			ch <- prometheus.MustNewConstMetric(d["hits"], prometheus.CounterValue, float64(s.Hits))
			ch <- prometheus.MustNewConstMetric(d["misses"], prometheus.CounterValue, float64(s.Misses))
			ch <- prometheus.MustNewConstMetric(d["timeouts"], prometheus.CounterValue, float64(s.Timeouts))
		},
	})
}

// poolCollector reads a pool's statistics once per scrape.
type poolCollector struct {
	descs   map[string]*prometheus.Desc
	collect func(map[string]*prometheus.Desc, chan<- prometheus.Metric)
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) { c.collect(c.descs, ch) }
