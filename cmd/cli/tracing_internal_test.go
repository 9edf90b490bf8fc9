package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/slotlock/slotlock/internal/config"
)

func TestReadTracingSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want tracingSettings
	}{
		{"nothing set: off", nil, tracingSettings{}},
		{"resource only: off", map[string]string{"OTEL_SERVICE_NAME": "x"}, tracingSettings{}},
		{"a protocol alone: off, not checked", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, tracingSettings{}},
		{"base endpoint: /v1/traces appended",
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			tracingSettings{on: true, endpoint: "http://collector:4318/v1/traces", protocol: "http/protobuf"}},
		{"base endpoint with a path",
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector/otlp/"},
			tracingSettings{on: true, endpoint: "https://collector/otlp/v1/traces", protocol: "http/protobuf"}},
		{"traces endpoint as is, above the base one",
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318/custom"},
			tracingSettings{on: true, endpoint: "http://b:4318/custom", protocol: "http/protobuf"}},
		{"grpc: the endpoint as is",
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			tracingSettings{on: true, endpoint: "http://collector:4317", protocol: "grpc"}},
		{"traces protocol above the general one",
			map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
			tracingSettings{on: true, endpoint: "http://c:4318/v1/traces", protocol: "http/protobuf"}},
		{"exporter otlp without endpoint: the default one",
			map[string]string{"OTEL_TRACES_EXPORTER": "otlp"},
			tracingSettings{on: true, protocol: "http/protobuf"}},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, tracingSettings{}},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, tracingSettings{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readTracingSettings(func(k string) string { return tc.env[k] })
			require.NoError(t, err)
			if !tc.want.on {
				require.False(t, got.on)
				return
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// otelGoroutines counts the goroutines running OpenTelemetry SDK or
// exporter code.
func otelGoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "go.opentelemetry.io/otel/sdk") || strings.Contains(g, "go.opentelemetry.io/otel/exporters") {
			n++
		}
	}
	return n
}

// A replica built without the OTLP variables has no tracer provider and
// starts no OpenTelemetry goroutine; with them (the control) it has the
// SDK's batch processor, which close stops. Nothing is left running.
func TestTracingOffStartsNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte("log: {format: json}\nhttp: {addr: \"\"}\njobs:\n"+
		"  - {name: tick, schedule: \"@daily\", plugin: log, params: {message: tick}}\n"), 0o600))
	cfg, err := config.Load(path, nil)
	require.NoError(t, err)
	env := func(environ ...string) cmdEnv {
		return cmdEnv{Stdout: io.Discard, Stderr: io.Discard, Environ: append([]string{"SLOTLOCK_REPLICA=t"}, environ...)}
	}
	before := otelGoroutines()

	tr, err := newTracing(context.Background(), env(), "t", slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.Nil(t, tr, "no OTLP variable: no pipeline")
	require.Nil(t, tr.provider(), "and a nil TracerProvider for the scheduler and the locks")
	r, err := build(context.Background(), cfg, env())
	require.NoError(t, err)
	require.Equal(t, before, otelGoroutines(), "tracing off started an OpenTelemetry goroutine")
	r.close()

	// The control: an endpoint nobody listens on (nothing is sent before
	// a span ends).
	r, err = build(context.Background(), cfg, env("OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9"))
	require.NoError(t, err)
	require.Greater(t, otelGoroutines(), before, "the goroutine check sees the SDK's batch processor")
	r.close()
	require.Equal(t, before, otelGoroutines(), "close stops the pipeline")
}
