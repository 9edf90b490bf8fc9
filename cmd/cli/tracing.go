package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotlock/slotlock/jobs"
)

// Traces are exported over OTLP when the environment asks for it, as the
// OpenTelemetry specification has it: OTEL_EXPORTER_OTLP_ENDPOINT (spans
// go to <it>/v1/traces) or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is), or
// OTEL_TRACES_EXPORTER=otlp (the default endpoint, https://localhost:4318).
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off. The
// protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
// OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf (default) or grpc. The SDK
// reads the rest from the process's environment: OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_*, and the
// exporter's OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, _TIMEOUT, _COMPRESSION,
// _CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY, _INSECURE.
//
// Otherwise no SDK is set up: the scheduler and the lock layer get a nil
// TracerProvider, start no span and no goroutine, and allocate nothing
// for tracing.

// tracingFlushTimeout bounds the export of the last spans at exit (it
// comes on top of the shutdown grace: keep the platform's termination
// grace above both).
const tracingFlushTimeout = 3 * time.Second

// tracing is the trace pipeline of a replica; a nil *tracing is off.
type tracing struct {
	tp  *sdktrace.TracerProvider
	log *slog.Logger
}

// tracingSettings is what the environment asks for: on, and if so where
// and how.
type tracingSettings struct {
	on       bool
	endpoint string // "": the exporter's default
	protocol string // "http/protobuf" or "grpc"
}

// readTracingSettings reads the on/off switches, the endpoint and the
// protocol from env. An error is a configuration error.
func readTracingSettings(getenv func(string) string) (tracingSettings, error) {
	var st tracingSettings
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return st, nil
	}
	exporter := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")))
	switch exporter {
	case "", "otlp":
	case "none":
		return st, nil
	default:
		return st, fmt.Errorf("OTEL_TRACES_EXPORTER %q: slotlock exports traces over OTLP only (otlp, or none)", exporter)
	}
	name, raw := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if raw == "" {
		name, raw = "OTEL_EXPORTER_OTLP_ENDPOINT", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	if raw == "" && exporter != "otlp" {
		// Without an endpoint only an explicit OTEL_TRACES_EXPORTER=otlp
		// turns tracing on.
		return st, nil
	}
	pname := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	st.protocol = strings.TrimSpace(getenv(pname))
	if st.protocol == "" {
		pname = "OTEL_EXPORTER_OTLP_PROTOCOL"
		st.protocol = strings.TrimSpace(getenv(pname))
	}
	switch st.protocol {
	case "":
		st.protocol = "http/protobuf"
	case "http/protobuf", "grpc":
	default:
		return st, fmt.Errorf("%s %q: slotlock exports traces over http/protobuf or grpc", pname, st.protocol)
	}
	if raw == "" {
		st.on = true // the exporter's default endpoint
		return st, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return st, fmt.Errorf("%s %q: not an http:// or https:// URL with a host (e.g. http://otel-collector:4318)", name, jobs.MaskURL(raw))
	}
	if name == "OTEL_EXPORTER_OTLP_ENDPOINT" && st.protocol == "http/protobuf" {
		// The base URL of every signal: traces go to its /v1/traces.
		u = u.JoinPath("v1", "traces")
	}
	st.on, st.endpoint = true, u.String()
	return st, nil
}

// newTracing builds the trace pipeline the environment asks for, or
// returns nil (off). Nothing is sent until spans end; an unreachable
// collector costs dropped spans and a warning, never a slot.
func newTracing(ctx context.Context, env cmdEnv, replica string, log *slog.Logger) (*tracing, error) {
	st, err := readTracingSettings(env.getenv)
	if err != nil || !st.on {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	switch st.protocol {
	case "grpc":
		var opts []otlptracegrpc.Option
		if st.endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(st.endpoint))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	default:
		var opts []otlptracehttp.Option
		if st.endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(st.endpoint))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// Later sources win: slotlock's defaults, then OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES.
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", "slotlock"),
			attribute.String("service.version", buildInfo().version),
			attribute.String("service.instance.id", replica)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil {
		if !errors.Is(err, resource.ErrPartialResource) {
			_ = exp.Shutdown(ctx)
			return nil, fmt.Errorf("tracing: resource: %w", err)
		}
		log.Warn("tracing: OTEL_RESOURCE_ATTRIBUTES partly invalid; using the valid attributes", "error", err.Error())
	}
	t := &tracing{log: log}
	// The sampler comes from OTEL_TRACES_SAMPLER (default: parent-based,
	// always on), the batching from OTEL_BSP_*.
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	// For plugins of a custom build that trace with the global API, and
	// the SDK's own errors (a failed export) in this log, not on stderr.
	otel.SetTracerProvider(t.tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(newOtelErrors(log, time.Minute))
	endpoint := "default"
	if st.endpoint != "" {
		endpoint = jobs.MaskURL(st.endpoint)
	}
	log.Info("tracing: exporting spans over OTLP", "endpoint", endpoint, "protocol", st.protocol)
	return t, nil
}

// provider is the TracerProvider for the scheduler and the lock layer:
// nil when tracing is off.
func (t *tracing) provider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.tp
}

// shutdown exports the spans still buffered, within tracingFlushTimeout,
// and stops the pipeline.
func (t *tracing) shutdown() {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		t.log.Warn("tracing: could not export the last spans", "error", err.Error())
	}
}

// otelErrors logs the SDK's errors (failed exports, dropped spans) as
// warnings: the first one, then at most one per interval with the number
// left out, so a collector that is down does not flood the log.
type otelErrors struct {
	log   *slog.Logger
	every time.Duration

	mu      sync.Mutex
	last    time.Time
	dropped int
}

func newOtelErrors(log *slog.Logger, every time.Duration) *otelErrors {
	return &otelErrors{log: log, every: every}
}

func (h *otelErrors) Handle(err error) {
	h.mu.Lock()
	now := time.Now()
	if !h.last.IsZero() && now.Sub(h.last) < h.every {
		h.dropped++
		h.mu.Unlock()
		return
	}
	dropped := h.dropped
	h.last, h.dropped = now, 0
	h.mu.Unlock()
	h.log.Warn("tracing: the OpenTelemetry SDK reported an error; spans may be lost", "error", jobs.MaskURLs(err.Error()),
		"similar_errors_not_logged", dropped)
}
