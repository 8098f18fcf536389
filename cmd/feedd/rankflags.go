package main

import (
	"flag"
	"fmt"
	"time"

	feed "github.com/feedd/feedd"
	"github.com/feedd/feedd/rank"
)

// declareRankFlags declares the flags of the ranked timeline and the
// content filters (rank.Settings, feed.Service.ReportThreshold), with
// their FEED_* fallbacks, defaulting to rank.Default.
func declareRankFlags(fs *flag.FlagSet, c *config, fromEnv func(name, env string), help func(usage, env string) string) {
	d := rank.Default()
	r := &c.rank
	dur := func(p *time.Duration, name, env string, def time.Duration, usage string) {
		fs.DurationVar(p, name, def, help(usage, env))
		fromEnv(name, env)
	}
	flt := func(p *float64, name, env string, def float64, usage string) {
		fs.Float64Var(p, name, def, help(usage, env))
		fromEnv(name, env)
	}
	fs.IntVar(&c.reportThreshold, "report-threshold", feed.DefaultReportThreshold, help("distinct reporters that hide a post from everyone but its author", "FEED_REPORT_THRESHOLD"))
	fromEnv("report-threshold", "FEED_REPORT_THRESHOLD")
	dur(&r.Window, "rank-window", "FEED_RANK_WINDOW", d.Window, "ranked timeline: candidates are timeline entries at most this old")
	fs.IntVar(&r.Candidates, "rank-candidates", d.Candidates, help(fmt.Sprintf("ranked timeline: most entries ranked (1-%d)", rank.MaxCandidates), "FEED_RANK_CANDIDATES"))
	fromEnv("rank-candidates", "FEED_RANK_CANDIDATES")
	fs.StringVar(&c.rankSnapshots, "rank-snapshots", "auto", help("ranked timeline: where scrolls' orders are kept: auto (redis with --redis-url, else memory on SQLite, database on PostgreSQL), memory (this process only), database or redis", "FEED_RANK_SNAPSHOTS"))
	fromEnv("rank-snapshots", "FEED_RANK_SNAPSHOTS")
	dur(&r.SnapshotTTL, "rank-snapshot-ttl", "FEED_RANK_SNAPSHOT_TTL", d.SnapshotTTL, "ranked timeline: how long a scroll's order is kept")
	dur(&r.RecencyHalfLife, "rank-recency-half-life", "FEED_RANK_RECENCY_HALF_LIFE", d.RecencyHalfLife, "ranked timeline: half-life of the recency feature")
	dur(&r.AffinityWindow, "rank-affinity-window", "FEED_RANK_AFFINITY_WINDOW", d.AffinityWindow, "ranked timeline: likes this recent count towards affinity")
	dur(&r.AffinityHalfLife, "rank-affinity-half-life", "FEED_RANK_AFFINITY_HALF_LIFE", d.AffinityHalfLife, "ranked timeline: half-life of a like's weight in affinity")
	flt(&r.AffinityPrior, "rank-affinity-prior", "FEED_RANK_AFFINITY_PRIOR", d.AffinityPrior, "ranked timeline: affinity = likes/(likes+prior)")
	dur(&r.FollowHalfLife, "rank-follow-half-life", "FEED_RANK_FOLLOW_HALF_LIFE", d.FollowHalfLife, "ranked timeline: follow_age = 1-2^(-followed/half-life)")
	flt(&r.EngagementPrior, "rank-engagement-prior", "FEED_RANK_ENGAGEMENT_PRIOR", d.EngagementPrior, "ranked timeline: engagement = (likes+1)/(likes+1+prior)")
	flt(&r.CommentPrior, "rank-comment-prior", "FEED_RANK_COMMENT_PRIOR", d.CommentPrior, "ranked timeline: comments = n/(n+prior), n = commenters on the post whose posts the viewer likes")
	flt(&r.RepostPrior, "rank-repost-prior", "FEED_RANK_REPOST_PRIOR", d.RepostPrior, "ranked timeline: reposts = n/(n+prior), n = reposters of the post whose posts the viewer likes")
	flt(&r.WRecency, "rank-w-recency", "FEED_RANK_W_RECENCY", d.WRecency, "ranked timeline: weight of recency")
	flt(&r.WAffinity, "rank-w-affinity", "FEED_RANK_W_AFFINITY", d.WAffinity, "ranked timeline: weight of affinity")
	flt(&r.WFollowAge, "rank-w-follow-age", "FEED_RANK_W_FOLLOW_AGE", d.WFollowAge, "ranked timeline: weight of follow_age")
	flt(&r.WEngagement, "rank-w-engagement", "FEED_RANK_W_ENGAGEMENT", d.WEngagement, "ranked timeline: weight of engagement")
	flt(&r.WLiked, "rank-w-liked", "FEED_RANK_W_LIKED", d.WLiked, "ranked timeline: penalty for a post the viewer already likes")
	flt(&r.WComments, "rank-w-comments", "FEED_RANK_W_COMMENTS", d.WComments, "ranked timeline: weight of comments")
	flt(&r.WReposts, "rank-w-reposts", "FEED_RANK_W_REPOSTS", d.WReposts, "ranked timeline: weight of reposts")
}

// validRank checks the ranked timeline's and the filters' settings.
func (c *config) validRank() error {
	if c.reportThreshold < 1 {
		return fmt.Errorf("--report-threshold must be at least 1")
	}
	switch c.rankSnapshots {
	case "auto", "memory", "database":
	case "redis":
		if c.redisURL == "" && c.redisCluster == "" {
			return fmt.Errorf("--rank-snapshots redis needs --redis-url or --redis-cluster")
		}
	default:
		return fmt.Errorf("--rank-snapshots must be auto, memory, database or redis")
	}
	if err := c.rank.Validate(); err != nil {
		return fmt.Errorf("--rank-*: %w", err)
	}
	return nil
}
