package node

import (
	"fmt"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

// clusterHealth is the "cluster" part of /healthz.
type clusterHealth struct {
	Node      string   `json:"node"`
	LanesHeld int      `json:"lanes_held"`
	Poller    bool     `json:"telegram_poller"`
	Lanes     []string `json:"lanes,omitempty"` // session keys, at most healthLanes
}

const healthLanes = 100

// Health is the "cluster" part of /healthz: this node, the lanes it
// serves, whether it polls Telegram.
func (c *Coordinator) Health() any {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := clusterHealth{Node: c.node.ID(), LanesHeld: len(c.owned), Poller: c.poller != nil}
	for key := range c.owned {
		if len(h.Lanes) == healthLanes {
			break
		}
		h.Lanes = append(h.Lanes, key)
	}
	sort.Strings(h.Lanes)
	return h
}

// RegisterMetrics adds the cluster's collectors to the daemon's registry:
// leases held, takeovers, ship lag, whether this node polls Telegram.
func (c *Coordinator) RegisterMetrics(reg *prometheus.Registry) error {
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "gatewayd", Subsystem: "cluster",
		Name: "lane_leases_held", Help: "Lane leases this node holds (lanes it serves)."}, func() float64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return float64(len(c.owned))
	})
	poller := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "gatewayd", Subsystem: "cluster",
		Name: "telegram_poller", Help: "1 while this node is the elected Telegram poller."}, func() float64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.poller != nil {
			return 1
		}
		return 0
	})
	for _, col := range []prometheus.Collector{held, poller, c.takeovers, c.shipLag} {
		if err := reg.Register(col); err != nil {
			return fmt.Errorf("gatewayd: cluster metrics: %w", err)
		}
	}
	return nil
}
