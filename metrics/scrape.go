package metrics

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Tiers are what a mount's tiers hold, as its metrics say.
type Tiers struct {
	Serving string             // the serving path in use (zfuse_serving_path_info); "" if not said
	Held    map[string]float64 // bytes held now, by tier (zfuse_cache_bytes)
	Budget  map[string]float64 // the budgets, by tier (zfuse_cache_budget_bytes)
}

// Scrape reads the tiers of the mount whose --metrics address is addr
// (zfuse warmup --metrics), giving up after 10 s.
func Scrape(ctx context.Context, addr string) (Tiers, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return Tiers{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Tiers{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Tiers{}, fmt.Errorf("%s/metrics: %s", addr, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return Tiers{}, err
	}
	// gauges returns the values of the gauges name by their label.
	gauges := func(name, label string) map[string]float64 {
		m := map[string]float64{}
		for _, s := range fams[name].GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == label {
					m[l.GetValue()] = s.GetGauge().GetValue()
				}
			}
		}
		return m
	}
	t := Tiers{Held: gauges("zfuse_cache_bytes", "tier"), Budget: gauges("zfuse_cache_budget_bytes", "tier")}
	if len(t.Held) == 0 {
		return Tiers{}, fmt.Errorf("%s/metrics has no zfuse_cache_bytes: is it a zfuse mount's --metrics address?", addr)
	}
	for path, v := range gauges("zfuse_serving_path_info", "path") {
		if v == 1 {
			t.Serving = path
		}
	}
	return t, nil
}
