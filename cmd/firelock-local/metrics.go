package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// MetricsPath is where the local functions server serves the metrics of
// CONTRACT §9 in the Prometheus text format.
const MetricsPath = "/metrics"

// servePrometheus makes an OpenTelemetry SDK provider whose reader is the
// Prometheus exporter (standard name translation: firelock.booking.requests
// is firelock_booking_requests_total, firelock.booking.duration, in s, is
// firelock_booking_duration_seconds), sets it as the global provider, which
// every firelock package records into by default, and registers its
// handler at MetricsPath on the framework's server.
func servePrometheus() error {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return fmt.Errorf("firelock-local: prometheus exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName("firelock-local")))
	if err != nil {
		return err
	}
	otel.SetMeterProvider(metric.NewMeterProvider(metric.WithReader(exp), metric.WithResource(res)))
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return funcframework.RegisterHTTPFunctionContext(context.Background(), MetricsPath, func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
	})
}
