package torture

import (
	"context"
	"fmt"
	"strings"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// proxies puts a toxiproxy proxy in front of each server, in process.
type proxies struct {
	server *toxiproxy.ApiServer
	list   []*toxiproxy.Proxy
}

func newProxies() *proxies {
	// The toxics log through zerolog's global logger, at trace level, on
	// every interrupted copy; only its global level silences them.
	zerolog.SetGlobalLevel(zerolog.Disabled)
	m := toxiproxy.NewMetricsContainer(prometheus.NewRegistry())
	return &proxies{server: toxiproxy.NewServer(m, zerolog.Nop())}
}

// add starts a proxy on a free loopback port in front of upstream and
// returns its address.
func (p *proxies) add(name, upstream string) (string, error) {
	px := toxiproxy.NewProxy(p.server, name, "127.0.0.1:0", upstream)
	if err := px.Start(); err != nil {
		return "", fmt.Errorf("proxy %s: %w", name, err)
	}
	p.list = append(p.list, px)
	return px.Listen, nil
}

// toxic adds a toxic named name to proxy i, both directions given by
// stream ("downstream" or "upstream"); attrs is its JSON attributes.
func (p *proxies) toxic(i int, name, typ, stream, attrs string) error {
	js := fmt.Sprintf(`{"name": %q, "type": %q, "stream": %q, "toxicity": 1, "attributes": %s}`, name, typ, stream, attrs)
	_, err := p.list[i].Toxics.AddToxicJson(strings.NewReader(js))
	return err
}

// clear removes every toxic of proxy i.
func (p *proxies) clear(i int) { p.list[i].Toxics.ResetToxics(context.Background()) }

func (p *proxies) close() {
	for _, px := range p.list {
		px.Stop()
	}
}
