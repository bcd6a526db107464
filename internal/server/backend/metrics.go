package backend

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	ingested     prometheus.Counter
	duplicates   prometheus.Counter
	rejected     *prometheus.CounterVec   // reason
	latency      *prometheus.HistogramVec // endpoint: single, batch
	sseClients   *prometheus.GaugeVec     // stream: session, sessions
	authFailures prometheus.Counter
}

// newMetrics registers the collectors with reg (nil: a new registry with the
// Go and process collectors) and returns what /metrics should gather.
func newMetrics(reg prometheus.Registerer) (*metrics, prometheus.Gatherer) {
	own := prometheus.NewRegistry()
	var gatherer prometheus.Gatherer = own
	if reg == nil {
		own.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		gatherer = g
	}
	m := &metrics{
		ingested: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "claude_relay_backend_events_ingested_total",
			Help: "Events stored (duplicates not counted).",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "claude_relay_backend_events_duplicate_total",
			Help: "Events whose event_id was stored before (answered 200, nothing changed).",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claude_relay_backend_events_rejected_total",
			Help: "Events or requests refused, by reason.",
		}, []string{"reason"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "claude_relay_backend_ingest_duration_seconds",
			Help:    "Time to handle an ingest request, body read to response.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms .. 16 s
		}, []string{"endpoint"}),
		sseClients: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "claude_relay_backend_sse_clients",
			Help: "Connected Server-Sent Events clients, by stream.",
		}, []string{"stream"}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "claude_relay_backend_auth_failures_total",
			Help: "Requests refused for a missing or wrong token.",
		}),
	}
	m.ingested = register(own, reg, m.ingested)
	m.duplicates = register(own, reg, m.duplicates)
	m.rejected = register(own, reg, m.rejected)
	m.latency = register(own, reg, m.latency)
	m.sseClients = register(own, reg, m.sseClients)
	m.authFailures = register(own, reg, m.authFailures)
	// Pre-create the label values so dashboards see zeros, not gaps.
	for _, r := range allReasons {
		m.rejected.WithLabelValues(r)
	}
	for _, e := range []string{endpointSingle, endpointBatch} {
		m.latency.WithLabelValues(e)
	}
	for _, st := range []string{streamSession, streamSessions} {
		m.sseClients.WithLabelValues(st)
	}
	return m, gatherer
}

// register adds c to our registry and to the caller's. A second Server on
// the same caller registry shares the first one's collectors instead of
// failing, so both count into one series.
func register[C prometheus.Collector](own *prometheus.Registry, reg prometheus.Registerer, c C) C {
	if reg != nil {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err) // a naming bug in this file
			}
			if existing, ok := are.ExistingCollector.(C); ok {
				c = existing
			}
		}
	}
	own.MustRegister(c)
	return c
}

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{
		ErrorLog:          slogPrinter{s},
		EnableOpenMetrics: true,
	})
}

// slogPrinter adapts promhttp's error log to slog.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) { p.s.log.Warn("backend: metrics", "err", v) }
